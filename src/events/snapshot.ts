/**
 * What an agent reads at the start of a run (seed 001 §4, §7; CONTRACT §3): pinned memory — the newest live event
 * of every key, as short Markdown — and the recent events. Pure: the same events in any order give the same
 * snapshot and the same snapshot_id.
 */
import {createHash} from 'node:crypto'

import type {SnapshotResponse, StoredMemoryEvent} from '../schemas/index.js'
import {shorten} from '../schemas/shorten.js'
import {deprecatedIds, detectConflicts} from './conflicts.js'
import {compareEvents, contentHash, RULESET_STAMP, scopeMatches} from './rules.js'

/** pinned_md never grows past this many characters; what does not fit is counted in a last "… N more" line. */
export const PINNED_MD_MAX = 4000
/** A bullet shows at most this many characters of its event's text. */
export const PINNED_LINE_MAX = 160

export interface SnapshotOptions {
  /** How many recent events to return (newest first); 0 returns none. */
  limitRecent: number
  /** Scopes to show, e.g. `['global', 'project:jarvis']`; an entry may end in `*`. Empty shows every scope given. */
  scopes: string[]
}

function scopeRank(scope: string): number {
  return scope === 'global' ? 0 : scope.startsWith('project:') ? 1 : 2
}

function byScopeThenKey(a: StoredMemoryEvent, b: StoredMemoryEvent): number {
  return scopeRank(a.scope) - scopeRank(b.scope) || (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0) || (a.dedupe_key < b.dedupe_key ? -1 : a.dedupe_key > b.dedupe_key ? 1 : 0)
}

/**
 * The newest live event of every (scope, dedupe_key) — newest by created_at, then event_id — sorted by scope
 * (global, project:*, agent:*) and key. Live means not deprecated (flagged, or named by a `supersedes`). A
 * conflict_resolution event is shown only while the conflict it flags is still open: once the agents agree or
 * one value supersedes the other, it drops out of pinned memory (it stays in the log).
 */
export function pinnedEvents(events: StoredMemoryEvent[], settled = settledConflicts(events)): StoredMemoryEvent[] {
  const deprecated = deprecatedIds(events)
  const newest = new Map<string, StoredMemoryEvent>()
  for (const e of events) {
    if (deprecated.has(e.event_id) || settled(e)) continue
    const key = JSON.stringify([e.scope, e.dedupe_key])
    const current = newest.get(key)
    if (!current || compareEvents(e, current) > 0) newest.set(key, e)
  }
  return [...newest.values()].sort(byScopeThenKey)
}

/** Whether an event is a conflict_resolution whose conflict is no longer open: the agents agree, or one superseded. */
function settledConflicts(events: StoredMemoryEvent[]): (event: StoredMemoryEvent) => boolean {
  const open = new Set(detectConflicts(events).map((c) => JSON.stringify([c.scope, c.resolution_key])))
  return (e) => e.kind === 'conflict_resolution' && !open.has(JSON.stringify([e.scope, e.dedupe_key]))
}

/**
 * An event's text on one line of at most `width` characters: its lines without their Markdown marks (heading,
 * bullet, quote), joined; what does not fit is cut with "…". Every line counts: a constraint on the second line
 * of a note was dropped without a trace when only the first was shown.
 */
export function contentGist(content: string, width: number): string {
  const plain = content
    .split(/\r?\n/)
    .map((line) => line.trim().replace(/^(?:#{1,6}\s+|[-*+]\s+|>\s*)/, ''))
    .filter((line) => line !== '')
    .join(' ')
  return shorten(plain, width)
}

function bullet(e: StoredMemoryEvent): string {
  const details: string[] = [e.agent_id]
  if (e.created_at) details.push(e.created_at.slice(0, 10))
  if (e.confidence !== 'high') details.push(`${e.confidence} confidence`)
  return `- [${e.kind}] ${e.dedupe_key}: ${contentGist(e.content_md, PINNED_LINE_MAX)} (${details.join(', ')})`
}

/**
 * pinned_md: a title, then one `## <scope>` section per scope with one bullet per pinned event,
 * `- [kind] dedupe_key: content_md on one line (agent, date)`, at most PINNED_MD_MAX characters. When the bullets
 * do not all fit, the last line says how many were left out.
 */
export function renderPinned(pinned: readonly StoredMemoryEvent[], max = PINNED_MD_MAX): string {
  const title = '# Pinned memory'
  if (pinned.length === 0) return `${title}\n\n_Nothing pinned yet._\n`
  const more = (n: number) => `\n… ${n} more pinned event${n === 1 ? '' : 's'} not shown (jarvis memory list)\n`
  let text = `${title}\n`
  let scope: string | undefined
  for (const [i, e] of pinned.entries()) {
    const next = `${e.scope === scope ? '' : `\n## ${e.scope}\n`}${bullet(e)}\n`
    const left = pinned.length - i - 1
    // keep room for the "… N more" line whenever something could still be left out
    const reserve = left > 0 ? more(left).length : 0
    if (text.length + next.length + reserve > max) return text + more(pinned.length - i)
    text += next
    scope = e.scope
  }
  return text
}

/**
 * The answer of GET /v1/memory/snapshot for these events (the server passes the events of the scopes the agent
 * may read). recent_events are the newest `limitRecent` events of the chosen scopes, newest first, deprecated ones
 * and settled conflict_resolution events left out. snapshot_id is sha256 (hex) over the ruleset, pinned_md and the id and
 * content hash of every event shown (pinned or recent): the same state always gives the same id, any change shown gives a new one.
 */
export function buildSnapshot(events: StoredMemoryEvent[], options: SnapshotOptions): SnapshotResponse {
  const chosen = options.scopes.length === 0 ? events : events.filter((e) => options.scopes.some((pattern) => scopeMatches(pattern, e.scope)))
  const deprecated = deprecatedIds(events)
  const marked = chosen.map((e) => (deprecated.has(e.event_id) && !e.deprecated ? {...e, deprecated: true} : e))
  const settled = settledConflicts(marked)
  const pinned = pinnedEvents(marked, settled)
  const pinned_md = renderPinned(pinned)
  const limit = Math.max(0, Math.floor(options.limitRecent))
  // A superseded event is not current memory: it is hidden, not shown flagged (`memory list --include-deprecated` has
  // it); nor is the call to settle a disagreement that is settled.
  const recent_events = chosen
    .filter((e) => !e.deprecated && !deprecated.has(e.event_id) && !settled(e))
    .sort((a, b) => compareEvents(b, a))
    .slice(0, limit)
  const shown = {
    pinned: pinned.map((e) => [e.event_id, contentHash(e.content_md)]),
    recent: recent_events.map((e) => [e.event_id, contentHash(e.content_md), e.deprecated]),
  }
  const snapshot_id = createHash('sha256').update(JSON.stringify([RULESET_STAMP, pinned_md, shown])).digest('hex')
  return {pinned_md, recent_events, ruleset_stamp: RULESET_STAMP, snapshot_id}
}
