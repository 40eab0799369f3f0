/**
 * The shared-memory instructions in an agent's instruction file (CLAUDE.md, GEMINI.md, AGENTS.md), inside
 * `<!-- jarvis:begin -->` … `<!-- jarvis:end -->`: rewritten in place on upgrade, the user's text untouched.
 * PURE: text in, text out.
 */
import {BadInputError} from '../errors.js'

export const BLOCK_BEGIN = '<!-- jarvis:begin -->'
export const BLOCK_END = '<!-- jarvis:end -->'

export function instructionBlock(body: string): string {
  return `${BLOCK_BEGIN}\n${body.trimEnd()}\n${BLOCK_END}\n`
}

/** Offsets of the block (with its trailing newline and the blank line jarvis put before it), or undefined. */
function blockSpan(text: string, file: string): {start: number; end: number; separated: boolean} | undefined {
  const begin = text.indexOf(BLOCK_BEGIN)
  const end = text.indexOf(BLOCK_END)
  if (begin === -1 && end === -1) return undefined
  if (begin === -1 || end === -1 || end < begin || text.indexOf(BLOCK_BEGIN, begin + 1) !== -1) {
    const at = begin === -1 ? end : begin
    const line = text.slice(0, at).split('\n').length
    throw new BadInputError(`${file} line ${line}: the jarvis block's markers (${BLOCK_BEGIN} … ${BLOCK_END}) are not one pair; fix them and run again, nothing was changed`, {file, line})
  }
  let stop = end + BLOCK_END.length
  if (text.startsWith('\r\n', stop)) stop += 2
  else if (text[stop] === '\n') stop += 1
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
  return text.includes(BLOCK_BEGIN) && text.includes(BLOCK_END)
}
