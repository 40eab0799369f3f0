/**
 * The `ai-memory` replica: the confirmed decisions of the event log — events of kind `decision` at or above a
 * confidence — as one Markdown file per decision key, `<scope>/<key>.md` under a folder of the user's choice
 * (`:` becomes `.`: `global/decision.deploy_day.md`). The file shows the key's newest decision and lists the
 * earlier ones as superseded; a decision that a later event superseded is marked so. A file a person edited or
 * deleted is theirs: jarvis never writes over it nor deletes it, and says so. docs/replicas.md.
 */
import {join} from 'node:path'

import {stringify} from 'yaml'

import type {Confidence, StoredMemoryEvent} from '../schemas/index.js'
import {appendAudit, hashText, readTextIfExists, writeFileAtomic} from '../store/index.js'
import {byTime, type EventReplicaRunOptions, ownerOf, readEventState, writeEventState} from './event-log.js'
import {emptyReport, type ReplicaReport} from './run.js'

const RANK: Record<Confidence, number> = {low: 0, med: 1, high: 2}

/** A scope or key as a file name: `:` is not in the key alphabet's way on any disk, `.` is not in the alphabet. */
export const fileNameOf = (text: string) => text.replaceAll(':', '.')

export function decisionPath(scope: string, key: string): string {
  return `${fileNameOf(scope)}/${fileNameOf(key)}.md`
}

export interface DecisionFile {
  path: string
  scope: string
  key: string
  text: string
}

function firstLine(markdown: string): string {
  const line = markdown.split('\n').find((l) => l.trim() !== '') ?? ''
  return line.trim().replace(/^(?:#{1,6}\s+|[-*+]\s+|>\s*)/, '')
}

/** PURE: one file per (scope, key) of the decisions at or above `minConfidence`, in path order. */
export function decisionFiles(events: readonly StoredMemoryEvent[], minConfidence: Confidence): DecisionFile[] {
  const confirmed = events.filter((e) => e.kind === 'decision' && RANK[e.confidence] >= RANK[minConfidence])
  const supersededBy = new Map<string, StoredMemoryEvent>()
  for (const e of confirmed) if (e.supersedes) supersededBy.set(e.supersedes, e)
  const byKey = new Map<string, StoredMemoryEvent[]>()
  for (const e of confirmed) {
    const id = JSON.stringify([e.scope, e.dedupe_key])
    byKey.set(id, [...(byKey.get(id) ?? []), e])
  }
  const files = [...byKey.values()].map((versions) => {
    const sorted = [...versions].sort(byTime)
    const current = sorted.at(-1)!
    return {path: decisionPath(current.scope, current.dedupe_key), scope: current.scope, key: current.dedupe_key, text: renderDecision(current, sorted.slice(0, -1).reverse(), supersededBy.get(current.event_id))}
  })
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** The note of one decision key: front matter Obsidian and other tools read, the decision, the earlier ones. */
export function renderDecision(current: StoredMemoryEvent, earlier: readonly StoredMemoryEvent[], replacedBy: StoredMemoryEvent | undefined): string {
  const superseded = current.deprecated || replacedBy !== undefined
  const meta: Record<string, unknown> = {
    key: current.dedupe_key,
    scope: current.scope,
    status: superseded ? 'superseded' : 'current',
    confidence: current.confidence,
    agent: current.agent_id,
    ...(current.created_at ? {decided: current.created_at} : {}),
    event: current.event_id,
    ...(replacedBy ? {superseded_by: replacedBy.event_id} : {}),
    tags: ['jarvis', 'jarvis/decision', ...(superseded ? ['jarvis/superseded'] : [])],
  }
  const lines = ['---', stringify(meta).trimEnd(), '---', `# ${current.dedupe_key}`, '']
  if (superseded) {
    const by = replacedBy ? ` by [[${fileNameOf(replacedBy.dedupe_key)}]] (${replacedBy.created_at?.slice(0, 10) ?? replacedBy.event_id})` : ''
    lines.push(`> [!warning] Superseded${by}: no longer the decision.`, '')
  }
  lines.push(current.content_md.trimEnd(), '')
  if (earlier.length > 0) {
    lines.push('## Earlier decisions (superseded)', '')
    for (const e of earlier) lines.push(`- ~~${firstLine(e.content_md)}~~ (${[e.agent_id, e.created_at?.slice(0, 10), e.event_id].filter(Boolean).join(', ')})`)
    lines.push('')
  }
  return lines.join('\n')
}

/** Writes the decision files; a file a person changed is left alone and reported. */
export async function runAiMemory(options: EventReplicaRunOptions & {minConfidence: Confidence}): Promise<ReplicaReport> {
  const {root, id, dir, log} = options
  const report = emptyReport(id, {kind: 'ai-memory', dir}, '')
  const state = await readEventState(root, id, 'ai-memory', dir)
  const events: StoredMemoryEvent[] = []
  for (const scope of options.scopes) events.push(...(await log.list({scope, kind: 'decision'})))
  let moved = false
  for (const file of decisionFiles(events, options.minConfidence)) {
    const target = join(dir, file.path)
    const current = await readTextIfExists(target)
    if (current === file.text) {
      if (state.files[file.path]?.hash !== hashText(file.text)) moved = true
      state.files[file.path] = {hash: hashText(file.text)}
      continue
    }
    const recorded = state.files[file.path]
    // Nothing new since jarvis last wrote it: whatever a person did to the file (edited, deleted) stands.
    if (recorded?.hash === hashText(file.text)) continue
    if (current !== null && ownerOf(current, recorded) === 'person') {
      report.kept.push({path: file.path, reason: `edited by a person, kept as it is: the newer decision (${file.key} in ${file.scope}) is not written there; move the file away to get it`})
      continue
    }
    report.written.push(file.path)
    if (options.dryRun) continue
    await writeFileAtomic(target, file.text)
    state.files[file.path] = {hash: hashText(file.text)}
    moved = true
  }
  if (moved && !options.dryRun) {
    const at = options.now().toISOString()
    await writeEventState(root, id, state, at)
    if (report.written.length > 0) await appendAudit(root, {at, type: 'replicate', replica: id, kind: 'ai-memory', workspace: dir, written: report.written})
  }
  return report
}
