/**
 * `jarvis resolve --keep local`, PURE: your side of a conflict put back into the file without undoing anything
 * else. A conflict's backup is your whole document as it was before the merge, so writing it back would also undo
 * every change of the other side that merged cleanly. Instead, from what the conflict was between (its base, your
 * text, the other side's, and what the sync wrote — kept with the backup), `localSideOf` makes the merge where
 * your lines win every overlap, and `putBack` applies the difference between what the sync wrote and that merge
 * to the file as it is now: only the overlaps change, and only where the file still holds what the sync left.
 */
import {isPlainObject, jsonEqual} from './canonical.js'
import {diff3, type LineRange} from './diff3.js'
import {mergeFileText, ruleForPath} from './dispatch.js'
import {diffSequences} from './line-diff.js'
import {describeLines, normalizeEol, splitLines, usesCrlf} from './markdown.js'

/**
 * Your side of a conflict: the three-way merge of its texts where yours wins each overlap, the other side's
 * changes elsewhere kept. Null for a file whose rule decides whole documents (a newest stamp, worker memory's
 * fields): there, no merge tells your side from theirs.
 */
export function localSideOf(path: string, base: string | null, local: string, remote: string): string | null {
  switch (ruleForPath(path)) {
    case 'markdown':
    case 'text':
    case 'json':
    case 'transcript':
      return mergeFileText(path, base, local, remote, 'local').merged
    default:
      return null
  }
}

/** Where a put-back changed the file already in this resolve: an older conflict's lines there are superseded by a newer side of yours. */
export type PutBackMarks = {kind: 'lines'; marked: readonly boolean[]} | {kind: 'keys'; paths: readonly string[]} | {kind: 'all'}

export const NO_MARKS: PutBackMarks = {kind: 'lines', marked: []}

/** A part of your side that was not put back, because the file holds something else there now. */
export interface NotPutBack {
  /** Where, in the file as the resolve leaves it: `line 4`, `lines 2-3`, `after line 7`, or a key path. */
  at: string
  yours: string
  now: string
  /** True when what is there now is a newer side of yours, put back by this same resolve: nothing of yours is missing. */
  superseded: boolean
}

export interface PutBack {
  text: string
  notPutBack: NotPutBack[]
  marks: PutBackMarks
}

/**
 * Puts `yours` (from `localSideOf`) into `current`, the file as it is now, where `current` still holds what the
 * sync wrote (`merged`); where the file changed since in the same place, the file's text stays and the part is
 * reported (superseded when `marks` say an earlier put-back of this resolve wrote it).
 */
export function putBack(path: string, merged: string, current: string, yours: string, marks: PutBackMarks = NO_MARKS): PutBack {
  switch (ruleForPath(path)) {
    case 'markdown':
    case 'text':
      return putBackLines(merged, current, yours, marks)
    case 'json':
      return putBackKeys(path, merged, current, yours, marks)
    default: {
      // A transcript: the union of messages, where no side loses anything.
      const text = mergeFileText(path, merged, current, yours).merged
      return {text, notPutBack: [], marks: {kind: 'all'}}
    }
  }
}

function putBackLines(merged: string, current: string, yours: string, marks: PutBackMarks): PutBack {
  const lines = {base: splitLines(normalizeEol(merged)), local: splitLines(normalizeEol(current)), remote: splitLines(normalizeEol(yours))}
  const ids = new Map<string, number>()
  const intern = (side: readonly string[]) => side.map((line) => ids.get(line) ?? ids.set(line, ids.size).get(line)!)
  const id = {base: intern(lines.base), local: intern(lines.local), remote: intern(lines.remote)}
  // The file now plays "local" and wins where it changed the same lines since: a later edit is never undone.
  const {segments, conflicts} = diff3(id.base, id.local, id.remote, 'local')
  const overlapAt = new Map(conflicts.filter((c) => c.local[1] > c.local[0]).map((c) => [c.local[0], c]))
  const out: string[] = []
  const unresolved: Array<{local: LineRange; remote: LineRange}> = []
  for (const {source, range} of segments) {
    const overlap = source === 'local' ? overlapAt.get(range[0]) : undefined
    if (overlap && sameLength(overlap.base, overlap.local, overlap.remote)) {
      // Lines edited in place on every side (diff3 joins touching edits into one region): decided line by line, so
      // one line changed since does not hold back its neighbours.
      for (let k = 0; k < range[1] - range[0]; k++) {
        const [b, l, r] = [overlap.base[0] + k, overlap.local[0] + k, overlap.remote[0] + k]
        if (id.local[l] === id.base[b] && id.remote[r] !== id.base[b]) out.push(lines.remote[r])
        else {
          out.push(lines.local[l])
          if (id.remote[r] !== id.base[b] && id.remote[r] !== id.local[l]) unresolved.push({local: [l, l + 1], remote: [r, r + 1]})
        }
      }
      continue
    }
    if (overlap) unresolved.push(overlap)
    out.push(...lines[source].slice(range[0], range[1]))
  }
  for (const conflict of conflicts) if (conflict.local[1] === conflict.local[0]) unresolved.push(conflict)
  const kept = keptAt(id.local, intern(out))
  const marked = (i: number) => marks.kind === 'all' || (marks.kind === 'lines' && marks.marked[i] === true)
  const notPutBack = unresolved
    .sort((a, b) => a.local[0] - b.local[0])
    .map((part) => ({
      at: describeLines(rangeIn(kept, part.local)),
      yours: lines.remote.slice(...part.remote).join(''),
      now: lines.local.slice(...part.local).join(''),
      superseded: part.local[1] > part.local[0] && range(part.local).every(marked),
    }))
  // A line of the result is marked when a put-back wrote it: this one (not kept from the file) or an earlier one.
  const outMarked: boolean[] = Array.from({length: out.length}, () => true)
  kept.forEach((at, i) => {
    if (at >= 0) outMarked[at] = marked(i)
  })
  const text = out.join('')
  return {text: usesCrlf(current) ? text.replace(/\n/g, '\r\n') : text, notPutBack, marks: {kind: 'lines', marked: outMarked}}
}

function sameLength(...ranges: LineRange[]): boolean {
  return ranges.every(([start, end]) => end - start === ranges[0][1] - ranges[0][0])
}

function putBackKeys(path: string, merged: string, current: string, yours: string, marks: PutBackMarks): PutBack {
  const result = mergeFileText(path, merged, current, yours, 'local')
  const decided = marks.kind === 'keys' ? marks.paths : []
  const touches = (at: string, other: string) => at === other || at.startsWith(`${other}.`) || other.startsWith(`${at}.`) || other === '(document)'
  // The file's value kept against yours (an edit that beat a deletion put yours back: no loss to report).
  const notPutBack = result.conflicts.filter((conflict) => conflict.winner === 'local').map((conflict) => ({
    at: conflict.at,
    yours: JSON.stringify(conflict.remote) ?? 'nothing (deleted)',
    now: JSON.stringify(conflict.local) ?? 'nothing (deleted)',
    superseded: marks.kind === 'all' || decided.some((other) => touches(conflict.at, other)),
  }))
  const changed = changedKeys(parseOrNull(current), parseOrNull(result.merged), [])
  return {text: result.merged, notPutBack, marks: marks.kind === 'all' ? marks : {kind: 'keys', paths: [...decided, ...changed]}}
}

/**
 * The lines of `current` that writing `restored` in its place takes away (1-based, in `current`): what a whole
 * backup put back without a record of its conflict undoes, to be named and kept.
 */
export function replacedLines(current: string, restored: string): Array<{line: number; text: string}> {
  const ids = new Map<string, number>()
  const intern = (side: readonly string[]) => side.map((line) => ids.get(line) ?? ids.set(line, ids.size).get(line)!)
  const now = splitLines(normalizeEol(current))
  const kept = keptAt(intern(now), intern(splitLines(normalizeEol(restored))))
  const out: Array<{line: number; text: string}> = []
  kept.forEach((at, i) => {
    if (at < 0) out.push({line: i + 1, text: now[i].replace(/\r?\n$/, '')})
  })
  return out
}

/** Marks that a whole text is a newer side of yours. */
export function allMarked(): PutBackMarks {
  return {kind: 'all'}
}

/** For each line of `a`, its index in `b` when a two-way diff keeps it there, else -1. */
function keptAt(a: readonly number[], b: readonly number[]): number[] {
  const at: number[] = Array.from({length: a.length}, () => -1)
  let i = 0
  let j = 0
  for (const hunk of [...diffSequences(a, b), {oldStart: a.length, oldLength: 0, newStart: b.length, newLength: 0}]) {
    while (i < hunk.oldStart) at[i++] = j++
    i += hunk.oldLength
    j += hunk.newLength
  }
  return at
}

/** Lines [start, end) of the file now, as lines of the result (where the kept ones went). */
function rangeIn(kept: readonly number[], [start, end]: LineRange): LineRange {
  if (end > start && kept[start] >= 0 && kept[end - 1] >= 0) return [kept[start], kept[end - 1] + 1]
  // Nothing there now (or not kept whole): the place is after the last kept line before it.
  let before = start - 1
  while (before >= 0 && kept[before] < 0) before--
  const at = before < 0 ? 0 : kept[before] + 1
  return [at, at]
}

function range([start, end]: LineRange): number[] {
  return Array.from({length: end - start}, (_, k) => start + k)
}

function parseOrNull(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/** The key paths (dotted, as merge conflicts name them) where `a` and `b` differ. */
function changedKeys(a: unknown, b: unknown, path: readonly string[]): string[] {
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)])
    return [...keys].flatMap((key) => changedKeys(Object.hasOwn(a, key) ? a[key] : undefined, Object.hasOwn(b, key) ? b[key] : undefined, [...path, key]))
  }
  if (a === undefined ? b === undefined : b !== undefined && jsonEqual(a, b)) return []
  return [path.length === 0 ? '(document)' : path.join('.')]
}
