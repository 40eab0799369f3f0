import {diff3, type LineRange} from './diff3.js'
import type {MergeConflict, MergeResult, Side} from './types.js'

export function normalizeEol(text: string): string {
  return text.replace(/\r\n/g, '\n')
}

/**
 * Lines with their `\n` kept, so the last line without one is its own distinct line (as in git):
 * joining the pieces gives the text back byte for byte, trailing newline or not.
 */
export function splitLines(text: string): string[] {
  const lines: string[] = []
  let start = 0
  for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
    lines.push(text.slice(start, end + 1))
    start = end + 1
  }
  if (start < text.length) lines.push(text.slice(start))
  return lines
}

/**
 * Line-based three-way merge for Markdown and any other text (seed 000 §3.C). Non-overlapping
 * edits merge; where both sides changed the same lines the remote lines win (as `git merge-file
 * --theirs`), every other local edit is kept, and the whole local text is the backup. A null base
 * (created on both sides) reads as empty, so two different versions conflict. CRLF counts as LF,
 * so a line-ending change alone is not an edit; a merge of two CRLF sides is written in CRLF.
 * `winner: 'local'` lets the local lines win instead (`jarvis resolve --keep local`); nothing is then lost, and
 * there is no backup.
 */
export function mergeText(base: string | null, local: string, remote: string, winner: Side = 'remote'): MergeResult<string> {
  const lf = {base: normalizeEol(base ?? ''), local: normalizeEol(local), remote: normalizeEol(remote)}
  // Exact identities first: a side that only converted line endings is still the side that changed.
  if (local === remote || base === local) return {merged: remote, conflicts: [], backup: null}
  if (base === remote) return {merged: local, conflicts: [], backup: null}
  if (lf.local === lf.remote || lf.base === lf.local) return {merged: remote, conflicts: [], backup: null}
  if (lf.base === lf.remote) return {merged: local, conflicts: [], backup: null}
  const lines = {base: splitLines(lf.base), local: splitLines(lf.local), remote: splitLines(lf.remote)}
  // Interned ids, not strings, go to the diff: cheap comparisons, and a line that reads
  // `__proto__` or `constructor` is just another number.
  const ids = new Map<string, number>()
  const intern = (side: string[]) => side.map((line) => ids.get(line) ?? ids.set(line, ids.size).get(line)!)
  const {segments, conflicts} = diff3(intern(lines.base), intern(lines.local), intern(lines.remote), winner)
  const lfMerged = segments.map(({source, range}) => lines[source].slice(range[0], range[1]).join('')).join('')
  // Merged as LF; a file both sides keep in CRLF stays CRLF, or every line of it would read as changed (git diff).
  const merged = usesCrlf(local) && usesCrlf(remote) ? lfMerged.replace(/\n/g, '\r\n') : lfMerged
  if (conflicts.length > 0) return {merged, conflicts: conflicts.map((c) => lineConflict(c.base, c.local, c.remote, winner)), backup: winner === 'remote' ? local : null}
  return {merged, conflicts: [], backup: null}
}

/** Every line break of `text` is CRLF, and it has one. */
export function usesCrlf(text: string): boolean {
  const breaks = text.split('\n').length - 1
  return breaks > 0 && text.split('\r\n').length - 1 === breaks
}

function lineConflict(base: LineRange, local: LineRange, remote: LineRange, winner: Side): MergeConflict {
  return {kind: 'lines', at: describeLines(base), winner, local: describeLines(local), remote: describeLines(remote)}
}

/** `line 3`, `lines 3-5`, `after line 2`, `before line 1`: a range of lines as a person reads it. */
export function describeLines([start, end]: LineRange): string {
  if (end === start) return start === 0 ? 'before line 1' : `after line ${start}`
  return end - start === 1 ? `line ${start + 1}` : `lines ${start + 1}-${end}`
}
