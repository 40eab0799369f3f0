/**
 * A unified diff of one file for `--dry-run`, as `git diff` prints it. jarvis's changes sit in one region of a
 * file, so one hunk around the changed lines (common leading and trailing lines stripped) is exact.
 * PURE.
 */
const CONTEXT = 3

export function unifiedDiff(file: string, before: string | null, after: string | null): string {
  const old = before === null ? [] : splitLines(before)
  const now = after === null ? [] : splitLines(after)
  let head = 0
  while (head < old.length && head < now.length && old[head] === now[head]) head++
  let tail = 0
  while (tail < old.length - head && tail < now.length - head && old[old.length - 1 - tail] === now[now.length - 1 - tail]) tail++
  if (head === old.length && head === now.length) return ''
  const from = Math.max(0, head - CONTEXT)
  const oldEnd = Math.min(old.length, old.length - tail + CONTEXT)
  const newEnd = Math.min(now.length, now.length - tail + CONTEXT)
  const lines = [
    `--- ${before === null ? '/dev/null' : `a${file}`}`,
    `+++ ${after === null ? '/dev/null' : `b${file}`}`,
    `@@ -${range(from, oldEnd - from)} +${range(from, newEnd - from)} @@`,
    ...old.slice(from, head).map((line) => ` ${line}`),
    ...old.slice(head, old.length - tail).map((line) => `-${line}`),
    ...now.slice(head, now.length - tail).map((line) => `+${line}`),
    ...old.slice(old.length - tail, oldEnd).map((line) => ` ${line}`),
  ]
  return lines.join('\n') + '\n'
}

function range(start: number, count: number): string {
  return count === 0 ? `${start},0` : `${start + 1},${count}`
}

function splitLines(text: string): string[] {
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  return lines
}
