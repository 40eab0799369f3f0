/**
 * The base of a merge after a write of ours whose fate we never heard: a push whose answer was lost, or a sync killed
 * after the server took it. Such a text is the right base only once the server holds it, and by then the server may
 * hold it with others' edits on top (another machine merged meanwhile): its hash no longer tells. What tells is the
 * text: a server that holds every edit our text made to the old base descends from it. Merged against the old base
 * instead, our own edits would meet themselves on the server's side and conflict, and the user's newer edits would go
 * to a backup; merged against our text when the server never took it, our edits would read as deleted by the server
 * and silently go. So our text is taken only when the server's text shows it, and the old base otherwise.
 */
import {diff3} from './diff3.js'
import {diffSequences} from './line-diff.js'
import {normalizeEol, splitLines} from './markdown.js'

/**
 * The base to merge the local text with the server's `remote`, given the `base` recorded at the last sync and the
 * texts this machine sent without hearing back (`sent`, newest first; the local text descends from each): the newest
 * one whose every edit to `base` `remote` holds, else `base`. Without a base, nothing shows what our edits were: `base`.
 */
export function baseAfterOwnWrites(base: string | null, sent: readonly string[], remote: string): string | null {
  if (base === null) return null
  return sent.find((text) => holdsEdits(base, text, remote)) ?? base
}

/**
 * Whether `later` holds every edit `edited` made to `base`, line by line (CRLF as LF, a line break after the last
 * line): merged three-way with `later`'s side taken where both changed the same lines, the result is `later` (no edit
 * of `edited` is missing where `later` left the base as it was); and where both changed the same lines, `later` has
 * there each line `edited` added, in order, and none it removed. Our lines with others' next to them or between them,
 * as a machine that merged on top of ours writes them, pass; a line of ours missing, or one we removed back, does not.
 */
export function holdsEdits(base: string, edited: string, later: string): boolean {
  const lf = {base: asLines(base), edited: asLines(edited), later: asLines(later)}
  if (lf.edited === lf.base || lf.edited === lf.later) return true
  const lines = {base: splitLines(lf.base), edited: splitLines(lf.edited), later: splitLines(lf.later)}
  const ids = new Map<string, number>()
  const intern = (side: string[]) => side.map((line) => ids.get(line) ?? ids.set(line, ids.size).get(line)!)
  const [b, e, l] = [intern(lines.base), intern(lines.edited), intern(lines.later)]
  const {segments, conflicts} = diff3(b, e, l)
  const sides = {base: b, local: e, remote: l}
  const merged = segments.flatMap(({source, range}) => sides[source].slice(range[0], range[1]))
  if (merged.length !== l.length || merged.some((line, i) => line !== l[i])) return false
  return conflicts.every((c) => regionHolds(b.slice(...c.base), e.slice(...c.local), l.slice(...c.remote)))
}

/** LF line breaks, and one after the last line: a line others wrote after our last one leaves ours as it was. */
function asLines(text: string): string {
  const lf = normalizeEol(text)
  return lf === '' || lf.endsWith('\n') ? lf : `${lf}\n`
}

/** Where both sides changed base lines `base`: `later` has the lines `edited` added, in order, and none it removed. */
function regionHolds(base: readonly number[], edited: readonly number[], later: readonly number[]): boolean {
  const added: number[] = []
  const removed = new Set<number>()
  for (const hunk of diffSequences(base, edited)) {
    added.push(...edited.slice(hunk.newStart, hunk.newStart + hunk.newLength))
    for (const line of base.slice(hunk.oldStart, hunk.oldStart + hunk.oldLength)) removed.add(line)
  }
  if (later.some((line) => removed.has(line))) return false
  let next = 0
  for (const line of later) if (next < added.length && line === added[next]) next++
  return next === added.length
}
