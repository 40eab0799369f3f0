/** Query and body parameters of the API's routes, checked one way: every refusal is a 400 naming its field. */
import type {z} from 'zod'

import {formatIssues, holdsNul, isoDateTimeSchema, NUL_REFUSAL} from '../schemas/index.js'
import {HttpError} from './http-error.js'

export function badRequest(field: string, message: string, extra: Record<string, unknown> = {}): HttpError {
  return new HttpError(400, 'bad_request', `${field} ${message}`, {field, ...extra})
}

/** One query parameter as a string, or undefined; a repeated parameter is refused, and so is a NUL (schemas/common.ts). */
export function single(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw badRequest(field, 'must be given once')
  if (holdsNul(value)) throw badRequest(field, NUL_REFUSAL)
  return value
}

/** A JSON body checked by its zod schema (after fastify's JSON-schema check of its shape), or 400 naming each bad field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body)
  if (parsed.success) return parsed.data
  const problems = formatIssues(parsed.error.issues).map((line) => `body/${line.replace(/^\(root\): /, '')}`)
  const field = parsed.error.issues[0]?.path.map(String).join('/')
  throw new HttpError(400, 'bad_request', problems.join('; '), {field: field ? `body/${field}` : 'body', problems})
}

export function integerParam(value: unknown, field: string, min: number, max: number, fallback: number): number {
  const text = single(value, field)
  if (text === undefined) return fallback
  if (!/^(0|[1-9][0-9]{0,8})$/.test(text) || Number(text) < min || Number(text) > max) {
    throw badRequest(field, `must be an integer from ${min} to ${max}`)
  }
  return Number(text)
}

export function booleanParam(value: unknown, field: string): boolean {
  const text = single(value, field)
  if (text === undefined || text === 'false' || text === '0') return false
  if (text === 'true' || text === '1' || text === '') return true
  throw badRequest(field, 'must be true or false')
}

export function timeParam(value: unknown, field: string): string | undefined {
  const text = single(value, field)
  if (text === undefined) return undefined
  if (!isoDateTimeSchema.safeParse(text).success) throw badRequest(field, 'must be an ISO-8601 date-time with a zone, e.g. 2026-02-02T10:00:00Z')
  return new Date(text).toISOString()
}
