/** Reading the append-only JSON Lines files of `.nexus/` (outbox, audit). */
import {readFileSync} from 'node:fs'

import createDebug from 'debug'
import type {z} from 'zod'

import {SchemaError} from '../errors.js'
import {formatIssues} from '../schemas/parse.js'

const debug = createDebug('jarvis:store')

/** A line of a JSON Lines file that is not a valid entry: its number and what is wrong with it. */
export interface BadLine {
  line: number
  problems: string[]
}

/**
 * Parses every line with `schema`. Blank lines are skipped. A final line without its newline is the trace of
 * an append interrupted by a crash (that append never reported success): it is ignored with a debug note
 * unless it is a complete, valid entry. Any other bad line → SchemaError `file: line N: …`, then `file: <hint>`
 * when `hint` gives what to do about those lines. `schema` may be the function that gives it, called at the first
 * line: a file that is missing or empty loads no schema (nor zod).
 */
export async function readJsonLines<S extends z.ZodType>(path: string, file: string, schema: S | (() => S), hint?: (badLines: BadLine[]) => string): Promise<Array<z.output<S>>> {
  const {entries, badLines} = await readJsonLinesSkipping(path, file, schema)
  if (badLines.length === 0) return entries
  const problems = badLines.flatMap(({line, problems}) => problems.map((problem) => `line ${line}: ${problem}`))
  throw new SchemaError(file, hint === undefined ? problems : [...problems, hint(badLines)])
}

/** As readJsonLines, for a file a bad line of which need not stop its reader: the valid entries, and the bad lines apart. */
export async function readJsonLinesSkipping<S extends z.ZodType>(path: string, file: string, schema: S | (() => S)): Promise<{entries: Array<z.output<S>>; badLines: BadLine[]}> {
  let text: string
  try {
    // In this thread: an outbox or audit log is read once, whole, before the work that needs it.
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {entries: [], badLines: []}
    throw error
  }
  const lines = text.split('\n')
  const terminated = text.endsWith('\n')
  if (terminated) lines.pop()
  const entries: Array<z.output<S>> = []
  const badLines: BadLine[] = []
  lines.forEach((line, index) => {
    const lineNo = index + 1
    const isTornTail = !terminated && index === lines.length - 1
    if (line.trim() === '') return
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch (error) {
      if (isTornTail) {
        debug('%s: ignoring a torn final line %d (an interrupted append)', file, lineNo)
        return
      }
      badLines.push({line: lineNo, problems: [`invalid JSON: ${(error as Error).message.replace(/^JSON\.parse: /, '')}`]})
      return
    }
    const result = (typeof schema === 'function' ? (schema = schema()) : schema).safeParse(value)
    if (result.success) {
      entries.push(result.data)
      return
    }
    if (isTornTail) {
      debug('%s: ignoring an invalid final line %d without a newline', file, lineNo)
      return
    }
    badLines.push({line: lineNo, problems: formatIssues(result.error.issues)})
  })
  return {entries, badLines}
}
