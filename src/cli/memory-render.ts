/** Human output of the `jarvis memory` commands; `--json` prints their results instead. */
import {contentGist} from '../events/snapshot.js'
import type {StoredMemoryEvent} from '../schemas/index.js'
import type {AppendResult} from '../ops/events/append.js'
import type {CleanupCandidate, CleanupResult} from '../ops/events/cleanup.js'
import type {ConsolidateResult} from '../ops/events/consolidate.js'
import {formatAge, type SnapshotResult} from '../ops/events/snapshot.js'
import type {ListResult} from '../ops/events/list.js'
import type {MemorySearchResult} from '../ops/search.js'

export function renderAppend(result: AppendResult): string {
  return result.events
    .map((event) => `${event.status === 'created' ? 'appended' : 'already stored'} ${event.kind} ${event.dedupe_key} to ${event.scope}: event ${event.event_id} (${event.status})`)
    .join('\n')
}

function when(event: StoredMemoryEvent): string {
  return event.created_at ? event.created_at.slice(0, 16).replace('T', ' ') : '????-??-?? ??:??'
}

function eventLine(event: StoredMemoryEvent): string {
  const flags = [event.deprecated ? 'deprecated' : '', event.masked ? 'masked' : '', event.ttl_candidate ? 'expired' : ''].filter(Boolean)
  const mark = flags.length > 0 ? ` [${flags.join(', ')}]` : ''
  return `- ${when(event)} ${event.scope} ${event.kind} \`${event.dedupe_key}\` (${event.agent_id}, ${event.confidence})${mark}: ${contentGist(event.content_md, 120)} — ${event.event_id}`
}

/**
 * The snapshot as an agent pastes it into its context: a header that says which rules and which state it shows,
 * the pinned memory, then the recent events (seed 001 R-2: pinned → recent).
 */
export function renderSnapshot(result: SnapshotResult): string {
  const lines: string[] = []
  if (result.cached) {
    lines.push(`> CACHED SNAPSHOT — taken ${formatAge(result.cached.age_seconds)} ago (${result.cached.at}) — NOT CURRENT: the server was not asked.`, '')
  }
  // The server's pinned_md brings its own "# Pinned memory" heading; a seed-style gateway's may not.
  const pinned = result.pinned_md.trim()
  lines.push(
    `# Shared memory (${result.ruleset_stamp})`,
    `snapshot_id: ${result.snapshot_id} · agent: ${result.agent_id} · scopes: ${result.scopes.join(', ')}${result.server ? ` · server: ${result.server}` : ''}`,
    '',
    ...(/^#\s/.test(pinned) ? [pinned] : ['# Pinned memory', '', pinned === '' ? '(nothing pinned yet)' : pinned]),
    '',
    `# Recent events (${result.recent_events.length}, newest first)`,
    '',
  )
  if (result.recent_events.length === 0) lines.push('(no events yet)')
  else lines.push(...result.recent_events.map(eventLine))
  return lines.join('\n')
}

function pad(cells: string[][]): string[] {
  const widths = cells[0].map((_, column) => Math.max(...cells.map((row) => row[column].length)))
  return cells.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]))).join('  ').trimEnd())
}

/** A compact table: one event per line, its content on one line last. */
export function renderEvents(result: ListResult): string {
  if (result.events.length === 0) return result.query === undefined ? 'no events match' : `no events match ${JSON.stringify(result.query)}`
  const rows = result.events.map((event) => [
    when(event),
    event.scope,
    event.kind,
    event.dedupe_key,
    event.agent_id,
    event.confidence + (event.deprecated ? ' (deprecated)' : ''),
    event.event_id,
    contentGist(event.content_md, 60),
  ])
  const table = pad([['TIME', 'SCOPE', 'KIND', 'KEY', 'AGENT', 'CONFIDENCE', 'EVENT', 'CONTENT'], ...rows])
  const shown = result.total > result.events.length ? `${result.events.length} of ${result.total} events` : `${result.events.length} event(s)`
  return [...table, shown].join('\n')
}

export function renderConsolidate(result: ConsolidateResult): string {
  const lines = [
    `consolidated the shared memory at ${result.server}: ${result.changed ? 'changes made' : 'nothing changed'}`,
    `  pinned ${result.pinned}`,
    `  TTL candidates ${result.ttl_candidates}${result.ttl_candidates > 0 ? ' (removed only by `jarvis memory cleanup` after approval)' : ''}`,
    `  conflicts ${result.conflicts.length}`,
    ...result.conflicts.map(
      (c) => `    ${c.scope} ${c.dedupe_key}: events ${c.event_ids.join(', ')} → ${c.resolution_event_id ? `resolution event ${c.resolution_event_id}` : 'no resolution event'}`,
    ),
    `  masked ${result.masked.length}`,
    ...result.masked.map((m) => `    ${m.event_id}: ${m.findings.map((f) => `${f.kind}${f.rule ? ` (${f.rule})` : ''}${f.field ? ` in ${f.field}` : ''}${f.line ? ` at line ${f.line}, column ${f.column}` : ''}`).join('; ')}`),
  ]
  if (!result.audited && (result.conflicts.length > 0 || result.masked.length > 0)) lines.push('  (not in a jarvis tree: nothing written to an audit log)')
  return lines.join('\n')
}

export function renderCandidates(candidates: CleanupCandidate[], label: string): string {
  if (candidates.length === 0) return 'nothing to clean up'
  const rows = candidates.map((c) => [c.event_id, c.scope ?? '', c.kind ?? '', c.dedupe_key ?? '', c.agent_id ?? '', c.created_at?.slice(0, 10) ?? '', c.reason ?? ''])
  return [`${label} ${candidates.length} event(s):`, ...pad(rows).map((row) => `  ${row}`)].join('\n')
}

export function renderCleanup(result: CleanupResult): string {
  if (result.candidates.length === 0) return `nothing to clean up: no expired or deprecated event older than ${result.older_than}${result.scope ? ` in ${result.scope}` : ''}`
  if (result.dry_run) return `${renderCandidates(result.candidates, 'would delete')}\ndry run: nothing was deleted`
  if (result.declined) return `not approved: nothing was deleted (${result.candidates.length} candidate(s) left)`
  const lines =
    result.deleted.length === 0
      ? ['nothing was deleted']
      : [renderCandidates(result.candidates.filter((c) => result.deleted.includes(c.event_id)), `deleted (approved by ${result.approved_by})`)]
  const kept = result.candidates.length - result.deleted.length
  if (kept > 0) lines.push(`${kept} approved event(s) were no longer candidates and were kept`)
  lines.push(result.audited ? 'recorded in .nexus/audit.jsonl' : 'not in a jarvis tree: no audit log written')
  return lines.join('\n')
}

export function renderMemorySearch(result: MemorySearchResult): string {
  const parts: string[] = []
  if (result.files) {
    if (result.files.hits.length === 0) parts.push(`no memory file matches ${JSON.stringify(result.query)}`)
    else {
      parts.push(`memory files (${result.files.mode}):`)
      for (const hit of result.files.hits) {
        parts.push(`  ${hit.path}${hit.title ? ` — ${hit.title}` : ''}`)
        for (const line of hit.snippet.slice(0, 2)) parts.push(`      ${line.line}: ${line.text.trim().slice(0, 100)}`)
      }
    }
  }
  if (result.events) parts.push(renderEvents(result.events))
  return parts.join('\n')
}
