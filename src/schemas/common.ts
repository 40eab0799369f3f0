/**
 * Field types shared by the on-disk formats and the wire messages.
 * Each regex doubles as the `pattern` of the published JSON Schema, so other implementations check the same thing.
 */
import {z} from 'zod'

import {MEMORY_PATH_MAX, MEMORY_PATH_PATTERN, SHA256_HEX_PATTERN} from './plain-fields.js'

/** Keeps zod's own message for a wrong type or a missing field, and replaces only the format message. */
function formatError(message: string) {
  return (issue: {code?: string}) => (issue.code === 'invalid_format' ? message : undefined)
}

/**
 * An ISO-8601 date-time with an explicit zone (`Z` or `+09:00`), any fraction of a second.
 * A zone is required: a local time would make last-writer-wins depend on where the file was written.
 */
export const isoDateTimeSchema = z.iso.datetime({
  offset: true,
  error: formatError('must be an ISO-8601 date-time with a zone, e.g. 2026-02-02T10:00:00Z or 2026-02-02T19:00:00+09:00'),
})

/** sha256 of a file's bytes, lowercase hex, as `node:crypto` prints it. */
export const sha256HexSchema = z.string().regex(SHA256_HEX_PATTERN, {error: 'must be a sha256 digest in lowercase hex (64 characters)'})

/**
 * A path relative to `.memory/` in its normal form (CONTRACT §3): `/` separators, no leading or trailing `/`,
 * no empty, `.` or `..` segment, no backslash or control character. store/paths.ts applies the same rule to
 * the file system; checking it here too means a bad path in any body is refused before it reaches the store.
 * The pattern is plain-fields.ts's, where the sync checks some paths without zod.
 */
export {MEMORY_PATH_MAX, MEMORY_PATH_PATTERN} from './plain-fields.js'
export const memoryPathSchema = z
  .string()
  .max(MEMORY_PATH_MAX, {error: 'a path is at most 1024 characters'})
  .regex(MEMORY_PATH_PATTERN, {
    error: 'must be a path inside .memory/ using "/", without "..", ".", empty segments or a leading "/"',
  })

/** A map keyed by memory path whose bad keys are named as such (zod's own message is "Invalid key in record"). */
export function pathRecord<V extends z.ZodType>(value: V) {
  return z.record(memoryPathSchema, value, {
    error: (issue) => (issue.code === 'invalid_key' ? 'not a path inside .memory/ (relative, "/" separators, no ".." or "." segments)' : undefined),
  })
}

/** The four agents of the shared memory (seed 001 §1); the server maps each token to one of them. */
export const agentIdSchema = z.enum(['chatgpt', 'claude', 'gemini', 'openclaw'])
export type AgentId = z.output<typeof agentIdSchema>

/** A project slug as used in `project:<slug>` scopes and `projects/<slug>/`: starts with a letter or digit, so never `..`. */
export const PROJECT_SLUG_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/
export const projectSlugSchema = z
  .string()
  .regex(PROJECT_SLUG_PATTERN, {error: 'must be 1-64 characters of a-z, 0-9, ".", "_" or "-", starting with a letter or digit'})

/**
 * U+0000 is not text: PostgreSQL cannot store it, and no memory needs it (a JSON `\u0000` escape is six characters).
 * Every string a request carries to the storage is refused with it, on both backends alike, so that what SQLite would
 * store PostgreSQL does not answer with a 500.
 */
export const NUL_REFUSAL = 'holds a NUL character (U+0000), which text may not'
export function holdsNul(text: string): boolean {
  return text.includes('\u0000')
}
/** The zod refinement: `z.string().refine(...noNul)`. */
export const noNul = [(text: string) => !holdsNul(text), {error: NUL_REFUSAL}] as const

/** Where in a JSON value a string or a key holds a NUL, as a path (`redirect_uris/0`; `''` for the value itself), or null. */
export function nulPath(value: unknown): string | null {
  if (typeof value === 'string') return holdsNul(value) ? '' : null
  if (value === null || typeof value !== 'object') return null
  for (const [key, item] of Array.isArray(value) ? value.entries() : Object.entries(value)) {
    if (typeof key === 'string' && holdsNul(key)) return key
    const inner = nulPath(item)
    if (inner !== null) return inner === '' ? String(key) : `${key}/${inner}`
  }
  return null
}

/** A revision number handed out by the server; it only ever grows. */
export const revisionSchema = z.number().int().nonnegative()
