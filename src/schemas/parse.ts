import type {z} from 'zod'

import {SchemaError} from '../errors.js'
import {jsonErrorOffset} from './json-position.js'

/** `path.to.field: message` for each zod issue; the root is called `(root)`. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((issue) => {
    const where = issue.path.length === 0 ? '(root)' : issue.path.map(String).join('.')
    return `${where}: ${issue.message}`
  })
}

/** Validates `value` against `schema`; on failure throws SchemaError naming the file and every bad field. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, file: string): z.output<S> {
  const result = schema.safeParse(value)
  if (!result.success) throw new SchemaError(file, formatIssues(result.error.issues))
  return result.data
}

/** Line and column (1-based) of a character offset, for error messages a person can jump to. */
export function lineAndColumn(text: string, offset: number): {line: number; column: number} {
  let line = 1
  let lineStart = 0
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++
      lineStart = i + 1
    }
  }
  return {line, column: offset - lineStart + 1}
}

/** JSON.parse that reports `line L, column C: reason` against the file instead of a bare offset. */
export function parseJsonText(text: string, file: string): unknown {
  // A byte-order mark is what some Windows editors put first; it is not an error in the content.
  const body = text.charCodeAt(0) === 0xfe_ff ? text.slice(1) : text
  const shift = body === text ? 0 : 1
  try {
    return JSON.parse(body)
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    const position = /position (\d+)/.exec(reason)
    // Node 20 gives no position for "Unexpected token"; find it rather than blame the end of the file.
    const offset = (position ? Number(position[1]) : (jsonErrorOffset(body) ?? body.length)) + shift
    const {line, column} = lineAndColumn(text, offset)
    const cleaned = reason
      .replace(/ in JSON at position \d+.*$/s, '')
      .replace(/, (?:\.\.\.)?".*" is not valid JSON$/s, '')
      .replace(/^JSON\.parse: /, '')
    throw new SchemaError(file, [`line ${line}, column ${column}: ${cleaned || 'invalid JSON'}`])
  }
}

/** Reads JSON text and validates it in one step: the usual way a file from either tree is loaded. */
export function parseJsonFile<S extends z.ZodType>(schema: S, text: string, file: string): z.output<S> {
  return parseWith(schema, parseJsonText(text, file), file)
}
