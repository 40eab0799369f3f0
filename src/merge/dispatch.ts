import {BadInputError} from '../errors.js'
import {isPlainObject, jsonEqual} from './canonical.js'
import {mergeJson} from './json.js'
import {mergeLwwDocument} from './lww.js'
import {mergeText} from './markdown.js'
import {messageKey, planTranscriptMerge} from './transcript.js'
import type {FileMerge, MergeResult, MergeRule, Side, UniversalMessage, WorkerMemory} from './types.js'
import {mergeWorkerMemory} from './worker-memory.js'

/** The merge rule of a path relative to `.memory/`, with `/` separators (contract §1). */
export function ruleForPath(path: string): MergeRule {
  if (path === 'active_project.json') return 'active-project'
  if (path === 'context_map.json') return 'context-map'
  const lower = path.toLowerCase()
  if (path.startsWith('jarvis/') && /^[^/]+\.json$/.test(lower.slice('jarvis/'.length))) return 'worker-memory'
  if (lower.endsWith('.json')) return 'json'
  if (lower.endsWith('.md')) return 'markdown'
  if (lower.endsWith('.jsonl')) return 'transcript'
  return 'text'
}

/**
 * Merges the three texts of one file by its path's rule. `base` is the content at the last sync,
 * or null when there is none. Pure: the result depends only on the arguments. `winner`: who takes an
 * overlap of lines or a key both sides changed (remote by default; the rules that decide by stamps or
 * fields do not take it).
 */
export function mergeFileText(path: string, base: string | null, local: string, remote: string, winner: Side = 'remote'): FileMerge {
  const rule = ruleForPath(path)
  if (local === remote || base === local) return {merged: remote, conflicts: [], backup: null, rule}
  if (base === remote) return {merged: local, conflicts: [], backup: null, rule}
  switch (rule) {
    case 'markdown':
    case 'text':
      return {...mergeText(base, local, remote, winner), rule}
    case 'transcript':
      return {merged: mergeTranscriptText(path, local, remote), conflicts: [], backup: null, rule}
    default:
      return mergeJsonText(path, rule, base, local, remote, winner)
  }
}

function mergeJsonText(path: string, rule: MergeRule, base: string | null, local: string, remote: string, winner: Side): FileMerge {
  const values = {base: base === null ? null : parseBase(base), local: parseSide(path, 'local', local), remote: parseSide(path, 'remote', remote)}
  const result = rule === 'json' ? mergeJson(values.base, values.local, values.remote, winner) : mergeJsonValues(rule, values.base, values.local, values.remote)
  // Hand back an input's own bytes when the merge equals it, so a reformatting alone never
  // looks like a change to push or pull.
  const merged = jsonEqual(result.merged, values.remote) ? remote : jsonEqual(result.merged, values.local) ? local : `${JSON.stringify(result.merged, null, 2)}\n`
  return {merged, conflicts: result.conflicts, backup: result.backup === null ? null : local, rule}
}

function mergeJsonValues(rule: MergeRule, base: unknown, local: unknown, remote: unknown): MergeResult<unknown> {
  switch (rule) {
    case 'active-project':
      return mergeLwwDocument(base, local, remote, 'switchedAt')
    case 'context-map':
      return mergeLwwDocument(base, local, remote, 'timestamp')
    case 'worker-memory':
      return mergeWorkerMemory(base as WorkerMemory | null, local as WorkerMemory, remote as WorkerMemory)
    default:
      return mergeJson(base, local, remote)
  }
}

function parseSide(path: string, side: 'local' | 'remote', text: string): unknown {
  try {
    return JSON.parse(stripBom(text))
  } catch (error) {
    throw new BadInputError(`${path}: the ${side} copy is not valid JSON: ${(error as Error).message}`, {path, side})
  }
}

// The base is our own earlier copy; if it is damaged, a two-way merge is the safe reading:
// it never turns a key into a deletion.
function parseBase(text: string): unknown {
  try {
    return JSON.parse(stripBom(text))
  } catch {
    return null
  }
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
}

/** One universal message per line; blank lines are skipped. The base plays no part: transcripts only grow. */
function mergeTranscriptText(path: string, local: string, remote: string): string {
  const mine = transcriptLines(path, 'local', local)
  const theirs = transcriptLines(path, 'remote', remote)
  const plan = planTranscriptMerge(
    mine.map((line) => line.key),
    theirs.map((line) => line.key),
  )
  const lines = plan.map(({side, index}) => (side === 'local' ? mine[index] : theirs[index]).text)
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`
}

function transcriptLines(path: string, side: 'local' | 'remote', text: string): Array<{text: string; key: string}> {
  const lines: Array<{text: string; key: string}> = []
  text.split('\n').forEach((raw, index) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (line.trim() === '') return
    let message: unknown
    try {
      message = JSON.parse(line)
    } catch (error) {
      throw new BadInputError(`${path}: line ${index + 1} of the ${side} copy is not valid JSON: ${(error as Error).message}`, {path, side, line: index + 1})
    }
    if (!isPlainObject(message)) {
      throw new BadInputError(`${path}: line ${index + 1} of the ${side} copy is not a message object`, {path, side, line: index + 1})
    }
    lines.push({text: line, key: messageKey(message as UniversalMessage)})
  })
  return lines
}
