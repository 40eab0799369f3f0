/**
 * The change of a memory-file edit (seed 004 §6: `memory_edit(path, patch)`, "string replace or diff"): the one
 * occurrence of a text replaced, or a unified diff applied. The diff is read and placed by jsdiff
 * (docs/decisions/unified-diff.md), loaded only when a diff is given: each hunk goes where its context and removed
 * lines are, near the line its header names or, failing that, anywhere in the file (a model rarely counts lines
 * right); the file names of its headers are not read.
 */
import {BadInputError} from '../errors.js'
import {memoryLabel} from './front-matter.js'

export type FileEdit = {replace: string; with: string} | {diff: string}

/**
 * Lines of the file compared with lines of the hunks, at most, while a diff's hunks are placed (about a second of
 * work on the largest file). A hunk that does not fit where its header says is looked for at every line of the
 * file, at a few microseconds a line: a diff built to be costly (long hunks of equal lines, or a hunk that fits
 * nowhere in a file of millions of short lines) would otherwise hold the server for minutes. A hunk found
 * 100,000 lines away from its header's line costs about 100,000.
 */
export const MAX_DIFF_COMPARISONS = 200_000

/** `text` with `edit` made; BadInputError (exit 2) naming the file and what does not match. */
export async function applyEdit(path: string, text: string, edit: FileEdit): Promise<string> {
  return 'diff' in edit ? applyDiff(path, text, edit.diff) : replaceOnce(path, text, edit.replace, edit.with)
}

function countOccurrences(text: string, needle: string): number {
  let count = 0
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++
  return count
}

/** `text` with its one occurrence of `replace` replaced; none or several → BadInputError (exit 2) saying how many. */
export function replaceOnce(path: string, text: string, replace: string, withText: string): string {
  if (replace.length === 0) throw new BadInputError(`${memoryLabel(path)}: the text to replace must not be empty`, {path})
  const count = countOccurrences(text, replace)
  if (count !== 1) {
    throw new BadInputError(
      `${memoryLabel(path)}: the text to replace occurs ${count} times; edit needs exactly one match${count > 1 ? ' (give more surrounding text)' : ''}`,
      {path, matches: count},
    )
  }
  const at = text.indexOf(replace)
  return text.slice(0, at) + withText + text.slice(at + replace.length)
}

class TooCostly extends Error {}

const HUNK_HEADER = /^@@(?: -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)| @@)?\s*$/
const HUNK_LINE = /^[ +\-\\]|^$/

/**
 * `diff` with the line counts of each hunk header (`@@ -a,b +c,d @@`, or a bare `@@`) counted from the hunk's own
 * lines: context (a blank line counts as an empty one), removed, added. A hunk ends at the next header, at a file
 * header (`--- ` then `+++ `, `diff `, `Index: `) or at the end.
 */
export function recountHunks(diff: string): string {
  const lines = diff.replace(/\n+$/, '').split('\n')
  const out: string[] = []
  for (let i = 0; i < lines.length; ) {
    const header = HUNK_HEADER.exec(lines[i])
    if (header === null) {
      out.push(lines[i++])
      continue
    }
    const body: string[] = []
    for (i++; i < lines.length && HUNK_LINE.test(lines[i]) && !startsFile(lines, i); i++) body.push(lines[i])
    const old = body.filter((line) => line === '' || line[0] === ' ' || line[0] === '-').length
    const added = body.filter((line) => line === '' || line[0] === ' ' || line[0] === '+').length
    out.push(`@@ -${header[1] ?? 1},${old} +${header[2] ?? 1},${added} @@${header[3] ?? ''}`, ...body.map((line) => (line === '' ? ' ' : line)))
  }
  return `${out.join('\n')}\n`
}

function startsFile(lines: string[], i: number): boolean {
  return (lines[i].startsWith('--- ') && lines[i + 1]?.startsWith('+++ ')) || lines[i].startsWith('diff ') || lines[i].startsWith('Index: ')
}

/** `text` with the unified diff `diff` applied; a diff that is not one, names several files or does not apply → exit 2. */
export async function applyDiff(path: string, text: string, diff: string): Promise<string> {
  const label = memoryLabel(path)
  const {applyPatch, parsePatch} = await import('diff')
  const hunksOf = (source: string) => parsePatch(source).filter((patch) => patch.hunks.length > 0)
  let withHunks: ReturnType<typeof parsePatch>
  try {
    withHunks = hunksOf(diff)
    if (withHunks.length === 0) withHunks = hunksOf(recountHunks(diff))
  } catch (error) {
    // A model writes the hunks right more often than their line counts: counted again from the hunks' lines.
    try {
      withHunks = hunksOf(recountHunks(diff))
    } catch {
      throw new BadInputError(`${label}: the patch is not a unified diff: ${(error as Error).message}`, {path, field: 'patch'})
    }
  }
  if (withHunks.length === 0) {
    throw new BadInputError(`${label}: the patch has no hunk (lines from "@@ -a,b +c,d @@" on): give a unified diff as \`diff -u\` prints it, or the text to replace and what replaces it`, {path, field: 'patch'})
  }
  if (withHunks.length > 1) throw new BadInputError(`${label}: the patch changes ${withHunks.length} files; an edit changes one: give the part of this file`, {path, field: 'patch'})
  let comparisons = 0
  const compareLine = (_line: number, line: string, _operation: string, patchContent: string) => {
    if (++comparisons > MAX_DIFF_COMPARISONS) throw new TooCostly()
    return line === patchContent
  }
  let patched: string | false
  try {
    patched = applyPatch(text, withHunks[0], {compareLine})
  } catch (error) {
    if (!(error instanceof TooCostly)) throw new BadInputError(`${label}: the patch cannot be applied: ${(error as Error).message}`, {path, field: 'patch'})
    patched = false
  }
  if (patched === false) {
    const hunks = withHunks[0].hunks.map((hunk) => `line ${hunk.oldStart}`).join(', ')
    throw new BadInputError(
      `${label}: the patch does not apply: its hunk${withHunks[0].hunks.length > 1 ? 's' : ''} at ${hunks} do${withHunks[0].hunks.length > 1 ? '' : 'es'} not match the file's text; nothing was written: read the file again and make the diff from its text`,
      {path, field: 'patch'},
    )
  }
  return patched
}
