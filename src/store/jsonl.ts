/** Reading the append-only JSON Lines files of `.nexus/` (outbox, audit). */
import {readFileSync} from 'node:fs'

import createDebug from 'debug'
import type {z} from 'zod'

import {SchemaError} from '../errors.js'
import {formatIssues} from '../schemas/parse.js'

const debug = createDebug('jarvis:store')

/**
 * Parses every line with `schema`. Blank lines are skipped. A final line without its newline is the trace of
 * an append interrupted by a crash (that append never reported success): it is ignored with a debug note
 * unless it is a complete, valid entry. Any other bad line → SchemaError `file: line N: …`. `schema` may be the
 * function that gives it, called at the first line: a file that is missing or empty loads no schema (nor zod).
 */
export async function readJsonLines<S extends z.ZodType>(path: string, file: string, schema: S | (() => S)): Promise<Array<z.output<S>>> {
  let text: string
  try {
    // In this thread: an outbox or audit log is read once, whole, before the work that needs it.
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw error
  }
  const lines = text.split('\n')
  const terminated = text.endsWith('\n')
  if (terminated) lines.pop()
  const out: Array<z.output<S>> = []
  const problems: string[] = []
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
      problems.push(`line ${lineNo}: invalid JSON: ${(error as Error).message.replace(/^JSON\.parse: /, '')}`)
      return
    }
    const result = (typeof schema === 'function' ? (schema = schema()) : schema).safeParse(value)
    if (result.success) {
      out.push(result.data)
      return
    }
    if (isTornTail) {
      debug('%s: ignoring an invalid final line %d without a newline', file, lineNo)
      return
    }
    for (const issue of formatIssues(result.error.issues)) problems.push(`line ${lineNo}: ${issue}`)
  })
  if (problems.length > 0) throw new SchemaError(file, problems)
  return out
}
