/**
 * A block jarvis owns inside a person's file — the shared-memory instructions in an agent's instruction file
 * (CLAUDE.md, GEMINI.md, AGENTS.md), jarvis's part of an Obsidian daily note — inside
 * `<!-- jarvis:begin -->` … `<!-- jarvis:end -->`: rewritten in place on upgrade, the user's text untouched.
 * PURE: text in, text out.
 */
import {BadInputError} from '../errors.js'

export const BLOCK_BEGIN = '<!-- jarvis:begin -->'
export const BLOCK_END = '<!-- jarvis:end -->'

export function instructionBlock(body: string): string {
  return `${BLOCK_BEGIN}\n${body.trimEnd()}\n${BLOCK_END}\n`
}

/** Where each marker stands on a line of its own (a marker quoted inside a line, or indented, is text). */
function markerOffsets(text: string, marker: string): number[] {
  const offsets: number[] = []
  const line = new RegExp(`^${marker.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[ \t]*\r?$`, 'gm')
  for (const match of text.matchAll(line)) offsets.push(match.index)
  return offsets
}

/** Offsets of the block (with its trailing newline and the blank line jarvis put before it), or undefined. */
export function blockSpan(text: string, file: string): {start: number; end: number; separated: boolean} | undefined {
  const begins = markerOffsets(text, BLOCK_BEGIN)
  const ends = markerOffsets(text, BLOCK_END)
  if (begins.length === 0 && ends.length === 0) return undefined
  const [begin, end] = [begins[0] ?? -1, ends[0] ?? -1]
  if (begins.length !== 1 || ends.length !== 1 || end < begin) {
    const at = begin === -1 ? end : begin
    const line = text.slice(0, at).split('\n').length
    throw new BadInputError(`${file} line ${line}: the jarvis block's markers (${BLOCK_BEGIN} … ${BLOCK_END}) are not one pair; fix them and run again, nothing was changed`, {file, line})
  }
  const afterEnd = text.indexOf('\n', end)
  return spanOf(text, begin, afterEnd === -1 ? text.length : afterEnd + 1)
}

function spanOf(text: string, begin: number, stop: number): {start: number; end: number; separated: boolean} {
  const separated = begin >= 2 && text.slice(begin - 2, begin) === '\n\n'
  return {start: separated ? begin - 1 : begin, end: stop, separated}
}

/** Adds the block at the end, or rewrites it where it is; unchanged when it already says exactly that. */
export function putBlock(text: string, file: string, body: string): string {
  const block = instructionBlock(body)
  const span = blockSpan(text, file)
  if (!span) return text === '' ? block : `${text}${text.endsWith('\n') ? '\n' : '\n\n'}${block}`
  const wanted = (span.separated ? '\n' : '') + block
  return text.slice(span.start, span.end) === wanted ? text : text.slice(0, span.start) + wanted + text.slice(span.end)
}

/** Removes the block and the blank line before it; unchanged when there is none. */
export function removeBlock(text: string, file: string): string {
  const span = blockSpan(text, file)
  return span ? text.slice(0, span.start) + text.slice(span.end) : text
}

/** Whether the file holds a jarvis block (markers in any state). */
export function hasBlock(text: string): boolean {
  return markerOffsets(text, BLOCK_BEGIN).length > 0 && markerOffsets(text, BLOCK_END).length > 0
}
