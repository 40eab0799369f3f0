/**
 * The dashboard's one way to the memory: jarvis's own HTTP API, with the signed-in token. Every failure becomes an
 * ApiError carrying the server's own message (a refused secret reads exactly as the CLI says it).
 */
import type {PullAnswer, StatusAnswer, StatusFileEntry} from '../../../src/server/wire.js'
import {savedToken} from './session.js'

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

/** Told when the server refuses the token (401): the page asks for a token again, keeping everything else. */
let onUnauthorized: (message: string) => void = () => {}

export function whenUnauthorized(handler: (message: string) => void): void {
  onUnauthorized = handler
}

export const UNREACHABLE =
  'The jarvis server does not answer (it may be restarting, or the network is down). Nothing you typed is lost: try again when it is back.'

export async function api<T>(method: 'GET' | 'POST', path: string, body?: unknown, token = savedToken()): Promise<T> {
  const headers: Record<string, string> = {}
  if (token !== null) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  let response: Response
  try {
    response = await fetch(path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)})
  } catch {
    throw new ApiError(0, 'unreachable', UNREACHABLE)
  }
  const text = await response.text().catch(() => '')
  let json: Record<string, unknown> = {}
  try {
    json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>)
  } catch {
    // A proxy's or a starting server's page: the status says enough.
  }
  if (response.ok) return json as T
  const message = typeof json.message === 'string' ? json.message : `the server answered ${response.status} ${response.statusText}`
  if (response.status === 503 && json.message === undefined) throw new ApiError(503, 'unavailable', UNREACHABLE)
  const error = new ApiError(response.status, typeof json.error === 'string' ? json.error : 'failed', message, json)
  if (response.status === 401) onUnauthorized(message)
  return Promise.reject(error)
}

/** A query string of the given parameters, leaving out empty ones. */
export function query(params: Record<string, string | number | boolean | undefined>): string {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '' && value !== false) search.set(name, String(value))
  const text = search.toString()
  return text === '' ? '' : `?${text}`
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

// ------------------------------------------------------------------------------------------------ wire types
// The server's own definitions (type-only imports: nothing of the server is bundled).

export type {CurrentFile, PullAnswer, StatusAnswer, StatusFileEntry as FileEntry, WriteAnswer} from '../../../src/server/wire.js'
export type {ActiveProject, RecentTask, WorkerMemory} from '../../../src/schemas/memory.js'
export type {StoredMemoryEvent as StoredEvent} from '../../../src/schemas/events.js'

export type {AuditEntry} from '../../../src/server/storage/types.js'
export type {AuditAnswer} from '../../../src/server/audit-service.js'
// A value, not only a type: the storage's types module imports nothing, so the bundle gains only this list.
export {AUDIT_KINDS} from '../../../src/server/storage/types.js'

export const EVENT_KINDS = ['decision', 'config', 'constraint', 'workflow', 'fact', 'bug', 'todo', 'log', 'deprecation', 'conflict_resolution'] as const
export const AGENT_IDS = ['claude', 'gemini', 'chatgpt', 'openclaw'] as const

/** Whether a key's agent is one of the event log's: only those append, supersede and forget events, or keep a private scope. */
export function writesEvents(agentId: string | null): boolean {
  return agentId !== null && (AGENT_IDS as readonly string[]).includes(agentId)
}

/** The paths of live files, from the status. */
export async function liveFiles(): Promise<Record<string, StatusFileEntry>> {
  const status = await api<StatusAnswer>('GET', '/api/memory/status')
  return Object.fromEntries(Object.entries(status.files).filter(([, entry]) => !entry.deleted))
}

export async function pullFiles(paths: string[]): Promise<PullAnswer['files']> {
  if (paths.length === 0) return {}
  return (await api<PullAnswer>('POST', '/api/memory/pull', {files: paths})).files
}

/** A run id for the events the page appends (one per action). */
export function webRunId(): string {
  // getRandomValues works over plain HTTP too (randomUUID needs a secure context, which a LAN address is not).
  const bytes = crypto.getRandomValues(new Uint8Array(12))
  return `web-${[...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`
}
