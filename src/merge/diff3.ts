import {diffSequences, type Hunk} from './line-diff.js'

/** A half-open range [start, end) of lines. */
export type LineRange = readonly [number, number]

export interface Segment {
  source: 'base' | 'local' | 'remote'
  range: LineRange
}

export interface Diff3Conflict {
  base: LineRange
  local: LineRange
  remote: LineRange
}

/**
 * Three-way merge of interned lines with the semantics of `git merge-file` (and GNU diff3): hunks
 * of the two sides that overlap *or touch* in the base form one region; a region changed by one
 * side takes that side; changed by both is clean only when both made the identical change.
 * Returns the result as segments of the inputs, a conflicting region as the remote side's lines (what
 * `git merge-file --theirs` writes; `prefer: 'local'`, the local side's, as `--ours`), and the conflicting regions
 * themselves.
 */
export function diff3(base: readonly number[], local: readonly number[], remote: readonly number[], prefer: 'local' | 'remote' = 'remote'): {segments: Segment[]; conflicts: Diff3Conflict[]} {
  const mine = diffSequences(base, local)
  const theirs = diffSequences(base, remote)
  const segments: Segment[] = []
  const conflicts: Diff3Conflict[] = []
  let i = 0
  let j = 0
  let done = 0
  while (i < mine.length || j < theirs.length) {
    const start = Math.min(i < mine.length ? mine[i].oldStart : Infinity, j < theirs.length ? theirs[j].oldStart : Infinity)
    let end = start
    const fromMine: Hunk[] = []
    const fromTheirs: Hunk[] = []
    for (;;) {
      if (i < mine.length && mine[i].oldStart <= end) end = absorb(mine[i++], fromMine, end)
      else if (j < theirs.length && theirs[j].oldStart <= end) end = absorb(theirs[j++], fromTheirs, end)
      else break
    }
    segments.push({source: 'base', range: [done, start]})
    if (fromTheirs.length === 0) segments.push({source: 'local', range: span(fromMine, start, end)})
    else if (fromMine.length === 0) segments.push({source: 'remote', range: span(fromTheirs, start, end)})
    else {
      const ours = span(fromMine, start, end)
      const other = span(fromTheirs, start, end)
      if (sameLines(local, ours, remote, other)) segments.push({source: 'local', range: ours})
      else {
        conflicts.push({base: [start, end], local: ours, remote: other})
        segments.push(prefer === 'local' ? {source: 'local', range: ours} : {source: 'remote', range: other})
      }
    }
    done = end
  }
  segments.push({source: 'base', range: [done, base.length]})
  return {segments: segments.filter(({range}) => range[1] > range[0]), conflicts}
}

function absorb(hunk: Hunk, into: Hunk[], end: number): number {
  into.push(hunk)
  return Math.max(end, hunk.oldStart + hunk.oldLength)
}

/** The lines of one side that stand for base lines [start, end): outside its hunks that side equals the base. */
function span(hunks: readonly Hunk[], start: number, end: number): LineRange {
  const first = hunks[0]
  const last = hunks[hunks.length - 1]
  return [first.newStart - (first.oldStart - start), last.newStart + last.newLength + (end - last.oldStart - last.oldLength)]
}

function sameLines(a: readonly number[], [aStart, aEnd]: LineRange, b: readonly number[], [bStart, bEnd]: LineRange): boolean {
  if (aEnd - aStart !== bEnd - bStart) return false
  for (let k = 0; k < aEnd - aStart; k++) if (a[aStart + k] !== b[bStart + k]) return false
  return true
}
