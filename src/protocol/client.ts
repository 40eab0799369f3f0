import createDebug from 'debug'
import {z} from 'zod'

import {BadInputError, JarvisError, SecretRefusedError, UnreachableError} from '../errors.js'
import {
  activeProjectSchema,
  pullResponseSchema,
  pushResponseSchema,
  statusResponseSchema,
  formatIssues,
  SYNC_SETTINGS_DEFAULTS,
} from '../schemas/index.js'
import {AGENT_HEADER, STATUS_TEXTS_HEADER} from '../schemas/protocol-headers.js'
import {isMemoryPath, isPlainRecord, isRevision, isSha256Hex} from '../schemas/plain-fields.js'
import {isWrittenDateTime} from '../schemas/written-date.js'
import {type HttpAnswer, requestText} from './http.js'

const debug = createDebug('jarvis:protocol')

export type StatusResponse = z.output<typeof statusResponseSchema>

/** The characters of texts an incremental status is asked to carry (STATUS_TEXTS_HEADER). */
export const STATUS_TEXTS_ASKED = 256 * 1024
export type PullResponse = z.output<typeof pullResponseSchema>

/**
 * How a sync decides against this server: by revisions when its status names any (`seq`, a file's `rev`), which
 * `jarvis serve` always does; else by timestamps, the only thing the protocol table requires a server to send
 * (`{files: {path: {updatedAt}}}`), against the client's own recorded base.
 */
export type ServerMode = 'revision' | 'timestamp'
export function modeOf(status: StatusResponse): ServerMode {
  if (status.seq !== undefined) return 'revision'
  for (const path in status.files) if (status.files[path].rev !== undefined) return 'revision'
  return 'timestamp'
}

/** A pulled file's text: a seed-style server may send a `.json` file as a JSON value, which is written pretty-printed. */
export function pulledText(file: PullResponse['files'][string]): string {
  return typeof file.content === 'string' ? file.content : `${JSON.stringify(file.content, null, 2)}\n`
}
/**
 * The parts of the protocol a server may not offer, each named by what a person misses. jarvis serve answers none of
 * these routes 404 but when the route is not there; a server that keeps only the memory files (the seed's fields)
 * answers them 404 with a JSON body, which is no refusal of this input but a server without that part.
 */
export const SERVER_PARTS = {
  events: {lacks: 'has no shared event log', matches: (_method: string, path: string) => path.startsWith('/v1/memory/')},
  tasks: {lacks: 'does not record finished tasks', matches: (method: string, path: string) => method === 'POST' && path === '/api/memory/sync-task'},
  projects: {lacks: 'does not take project switches', matches: (method: string, path: string) => method === 'POST' && path === '/api/projects/active'},
} as const
export type ServerPart = keyof typeof SERVER_PARTS

function partOf(method: string, path: string): ServerPart | undefined {
  return (Object.keys(SERVER_PARTS) as ServerPart[]).find((part) => SERVER_PARTS[part].matches(method, path))
}

/** The `missing` part of an error (`data.missing`) a server without that part answered: a 404 of one of its routes. */
export function missingPart(error: unknown): ServerPart | undefined {
  const missing = error instanceof UnreachableError ? error.data.missing : undefined
  return typeof missing === 'string' && missing in SERVER_PARTS ? (missing as ServerPart) : undefined
}

/**
 * Our server answers a push with `pushResponseSchema`; a seed-style server may answer with anything (the seed
 * does not say), so the client reads only what it can use and asks `status` for the rest. Built at the first push
 * whose answer isPlainPushAnswer does not take as it is, as the schemas of src/schemas that a sync with nothing to
 * do never reads (src/schemas/index.ts): zod itself is not touched before (the fast door loads it on use,
 * scripts/bundle.mjs). Exported for the property test of isPlainPushAnswer.
 */
let pushAnswer: ReturnType<typeof buildPushAnswerSchema> | undefined
export const pushAnswerSchema = () => (pushAnswer ??= buildPushAnswerSchema())
function buildPushAnswerSchema() {
  return z.union([
    pushResponseSchema.unwrap(),
    z.looseObject({files: z.record(z.string(), z.looseObject({rev: z.number().optional(), hash: z.string().optional(), updatedAt: z.string().optional()})).optional()}),
  ])
}
export type PushResponse = z.output<ReturnType<typeof pushAnswerSchema>>
/**
 * A push without `base` goes to a seed-style server (timestamp mode), whose 2xx answer may be `{success: true}`, a
 * list of paths or no body at all. The push was accepted, so an answer the client cannot read is not an error:
 * the files are stored by then, and a failed command would only send them again.
 */
const seedPushAnswerSchema = () =>
  z.unknown().transform((answer): PushResponse => {
    const usable = pushAnswerSchema().safeParse(answer)
    if (!usable.success) debug('push answer not used: %s', formatIssues(usable.error.issues).join('; '))
    return usable.success ? usable.data : {}
  })

/** The server refused a push because some `base` revisions are stale (HTTP 409). */
export class StalePushError extends JarvisError {
  readonly stale: string[]
  constructor(stale: string[]) {
    super(`the server has newer versions of ${stale.join(', ')}`, {code: 'STALE', exit: 1, data: {stale}})
    this.stale = stale
  }
}

export interface ClientOptions {
  server: string
  token?: string
  /** The agent this client acts as, sent in every request (AGENT_HEADER) so that a server can refuse another agent's token. */
  agentId?: string
  /** Counts request and answer bytes, for `npm run bench` and the `--json` result. */
  onBytes?: (sent: number, received: number) => void
  /** How long to wait for one answer (`sync.requestTimeout`); default 60 s. */
  timeoutMs?: number
  /**
   * Says what to do about a refused token (401, or a 403 naming the token's agent) in the caller's words — which
   * variable or file holds the token: an error to throw instead of the generic one, or undefined to keep it.
   */
  explainRefusal?: (status: 401 | 403, serverMessage: string) => Error | undefined
  /** Aborts when the caller left (a call a watch runs, its client gone): the request in flight is dropped, no other starts. */
  signal?: AbortSignal
}

/** A small client for the memory protocol (contract §3); every answer is checked here: by zod, or by a hand check that accepts only what zod reads unchanged. */
export class MemoryClient {
  readonly server: string
  private readonly token?: string
  private readonly agentId?: string
  private readonly onBytes?: ClientOptions['onBytes']
  private readonly timeoutMs: number
  private readonly explainRefusal?: ClientOptions['explainRefusal']
  private readonly signal?: AbortSignal

  constructor(options: ClientOptions) {
    this.server = options.server.replace(/\/+$/, '')
    this.token = options.token
    this.agentId = options.agentId
    this.onBytes = options.onBytes
    this.timeoutMs = options.timeoutMs ?? SYNC_SETTINGS_DEFAULTS.requestTimeout
    this.explainRefusal = options.explainRefusal
    this.signal = options.signal
  }

  /** Kept for symmetry with the WebSocket side: fetch pools its connections and needs no closing. */
  async close(): Promise<void> {}

  /**
   * `onSent` (here, in pull and in push): see requestText. With `since`, `jarvis serve` is asked for the texts of the
   * few files it lists too (STATUS_TEXTS_HEADER, in each entry's `content`, see statusTexts in sync/pull.ts): a
   * server that does not know the header ignores it, and the client pulls them as before.
   */
  status(since?: number, onSent?: () => void): Promise<StatusResponse> {
    if (since === undefined) return this.call('GET', '/api/memory/status', undefined, () => statusResponseSchema, {}, onSent, isPlainStatus)
    return this.call('GET', `/api/memory/status?since=${since}`, undefined, () => statusResponseSchema, {[STATUS_TEXTS_HEADER]: String(STATUS_TEXTS_ASKED)}, onSent, isPlainStatus)
  }

  pull(paths: string[], onSent?: () => void): Promise<PullResponse> {
    return this.call('POST', '/api/memory/pull', {files: paths}, pullResponseSchema, {}, onSent)
  }

  /** `merged`: paths of `files` merged with a newer server version, for the server's audit log (sent with `base` only). */
  push(files: Record<string, string>, base?: Record<string, number | null>, deletes?: string[], merged?: string[], onSent?: () => void): Promise<PushResponse> {
    const body: Record<string, unknown> = {files}
    if (base && Object.keys(base).length > 0) body.base = base
    if (deletes && deletes.length > 0) body.deletes = deletes
    if (body.base !== undefined && merged && merged.length > 0) body.merged = merged
    const answer: () => z.ZodType<PushResponse> = body.base === undefined ? seedPushAnswerSchema : pushAnswerSchema
    return this.call('POST', '/api/memory/push', body, answer, {}, onSent, isPlainPushAnswer)
  }

  syncTask<S extends z.ZodType>(task: unknown, answer: S): Promise<z.output<S>> {
    return this.call('POST', '/api/memory/sync-task', task, answer)
  }

  activeProject(): Promise<z.output<typeof activeProjectSchema>> {
    return this.call('GET', '/api/projects/active', undefined, activeProjectSchema)
  }

  /**
   * The protocol table names the POST's body, `{projectId}`, and not its answer: `jarvis serve` answers the active
   * project; a server that answers less (`{projectId}`, `{success: true}`, nothing) switched all the same, and the
   * answer is then the switch as asked.
   */
  switchProject(projectId: string, switchedBy: 'user-cli' | 'user-web' = 'user-cli'): Promise<z.output<typeof activeProjectSchema>> {
    const asked = {projectId, switchedBy, switchedAt: new Date().toISOString()}
    const answer = z.lazy(() => z.unknown().transform((body) => {
      const full = activeProjectSchema.safeParse(body)
      if (full.success) return full.data
      debug('project switch answered without the active project (%s): reporting the switch as asked', formatIssues(full.error.issues).join('; '))
      return asked
    }))
    return this.call('POST', '/api/projects/active', {projectId, switchedBy}, answer)
  }

  /**
   * The connection settings of a client, for the other clients of protocol/ (events.ts) that talk to the same
   * server as an existing one (the outbox gets a MemoryClient from `jarvis sync`). Not part of the public API.
   */
  protected static optionsOf(client: MemoryClient): ClientOptions {
    return {server: client.server, token: client.token, agentId: client.agentId, onBytes: client.onBytes, timeoutMs: client.timeoutMs, explainRefusal: client.explainRefusal, signal: client.signal}
  }

  /**
   * One request: the error mapping of the contract, and the answer zod-parsed against `schema` (or the function that
   * gives it, called only when needed) unless `asIs` says zod would read it unchanged.
   */
  protected async call<S extends z.ZodType>(method: 'GET' | 'POST', path: string, body: unknown, schema: S | (() => S), extraHeaders: Record<string, string> = {}, onSent?: () => void, asIs?: (json: unknown) => json is z.output<S>): Promise<z.output<S>> {
    const url = `${this.server}${path}`
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const headers: Record<string, string> = {...extraHeaders, accept: 'application/json'}
    if (payload !== undefined) headers['content-type'] = 'application/json'
    if (this.token) headers.authorization = `Bearer ${this.token}`
    if (this.agentId) headers[AGENT_HEADER] = this.agentId
    let answer: HttpAnswer
    try {
      answer = await requestText(url, {method, headers, body: payload, timeoutMs: this.timeoutMs, onSent, signal: this.signal})
    } catch (error) {
      const reason = describeNetworkError(error)
      throw new UnreachableError(`cannot reach the jarvis server at ${this.server}: ${reason}`, {server: this.server, reason}, error)
    }
    const {status: statusCode, text} = answer
    this.onBytes?.(Buffer.byteLength(payload ?? '') + path.length + method.length, Buffer.byteLength(text))
    debug('%s %s → %d (%d bytes)', method, path, statusCode, text.length)
    const json = parseAnswer(text)
    // Every route of the protocol answers JSON, a refusal too: a page of another kind is some other web server there.
    if ((statusCode === 404 || statusCode === 405) && json === undefined) {
      throw new UnreachableError(`${this.server} does not look like a jarvis server: ${method} ${path} answered HTTP ${statusCode} with ${messageOf(json, text)}; check the server's address (--server, or server in .nexus/config.json)`, {server: this.server, status: statusCode})
    }
    const part = statusCode === 404 ? partOf(method, path.split('?')[0]) : undefined
    if (part !== undefined) {
      // The server cannot be used for this at all: exit 3, like a server that cannot be read, never bad input (2).
      throw new UnreachableError(`the server at ${this.server} ${SERVER_PARTS[part].lacks}: ${method} ${path.split('?')[0]} answered 404 (it offers only part of the jarvis protocol, such as the memory files)`, {server: this.server, status: statusCode, missing: part})
    }
    if (statusCode === 409) throw new StalePushError(staleList(json))
    if (statusCode === 401 || statusCode === 403) {
      const explained = this.explainRefusal?.(statusCode, messageOf(json, text))
      if (explained) throw explained
    }
    if (statusCode === 401) {
      throw new UnreachableError(`the jarvis server at ${this.server} refused the token (HTTP 401): set JARVIS_TOKEN to the token of your agent`, {server: this.server, status: statusCode})
    }
    // 403 is the server saying this agent may not do that (another agent's memory, a private scope).
    if (statusCode === 403) throw new BadInputError(`the jarvis server refused ${method} ${path} (HTTP 403): ${messageOf(json, text)}`, {status: statusCode, answer: json})
    if (statusCode >= 500) {
      throw new UnreachableError(`the jarvis server at ${this.server} failed (HTTP ${statusCode}): ${messageOf(json, text)}`, {server: this.server, status: statusCode})
    }
    // The server found a secret or personal data: the same refusal (exit 5) as the client-side check.
    if (statusCode === 422 && (json as {error?: unknown} | undefined)?.error === 'sensitive') {
      throw new SecretRefusedError(`the jarvis server refused ${method} ${path}: ${messageOf(json, text)}`, {findings: (json as {findings?: unknown}).findings})
    }
    if (statusCode >= 400) throw new BadInputError(`the jarvis server refused ${method} ${path} (HTTP ${statusCode}): ${messageOf(json, text)}`, {status: statusCode, answer: json})
    if (asIs?.(json)) return json
    const parsed = (typeof schema === 'function' ? schema() : schema).safeParse(json)
    if (!parsed.success) {
      throw new UnreachableError(`the jarvis server at ${this.server} answered ${method} ${path} with an unexpected body: ${formatIssues(parsed.error.issues).join('; ')}`, {server: this.server})
    }
    return parsed.data
  }
}

/**
 * A status as `jarvis serve` answers it (the quick check of a sync with nothing to do lists no file; a sync's after
 * another machine pushed a few lists those, with their texts): read as it is, since zod and the schemas (a third of
 * such a sync's own work, and most of its garbage) would be loaded for it alone. True only for what
 * `statusResponseSchema` reads unchanged (property-tested); anything else is zod's.
 */
export function isPlainStatus(json: unknown): json is StatusResponse {
  if (!isPlainRecord(json)) return false
  const {files, seq, serverTime, activeProjectId} = json
  if (!isPlainRecord(files)) return false
  for (const path in files) if (!isMemoryPath(path) || !isPlainStatusFile(files[path])) return false
  return (seq === undefined || isRevision(seq)) && (serverTime === undefined || isWrittenDateTime(serverTime)) && (activeProjectId === undefined || activeProjectId === null || typeof activeProjectId === 'string')
}

/** An entry of a status (statusFileSchema) as `jarvis serve` writes it; any other field (a text) is kept as it is. */
function isPlainStatusFile(file: unknown): boolean {
  if (!isPlainRecord(file)) return false
  const {updatedAt, hash, rev, deleted} = file
  return isWrittenDateTime(updatedAt) && (hash === undefined || isSha256Hex(hash)) && (rev === undefined || isRevision(rev)) && (deleted === undefined || typeof deleted === 'boolean')
}

/**
 * A push answer as `jarvis serve` writes it, read as it is (the union of pushAnswerSchema takes it by its first
 * member unchanged): a sync that pushed a few files would load zod for it alone. Property-tested like isPlainStatus.
 */
export function isPlainPushAnswer(json: unknown): json is PushResponse {
  if (!isPlainRecord(json)) return false
  const {files, deleted, seq} = json
  if (!isPlainRecord(files) || !(deleted === undefined || isPlainRecord(deleted)) || !(seq === undefined || isRevision(seq))) return false
  for (const path in files) if (!isMemoryPath(path) || !isPlainPushed(files[path], true)) return false
  for (const path in deleted) if (!isMemoryPath(path) || !isPlainPushed(deleted[path], false)) return false
  return true
}

/** An entry of a push answer's `files` (`{rev, hash, updatedAt}`) or `deleted` (`{rev, updatedAt}`); other fields kept. */
function isPlainPushed(file: unknown, withHash: boolean): boolean {
  return isPlainRecord(file) && isRevision(file.rev) && isWrittenDateTime(file.updatedAt) && (!withHash || isSha256Hex(file.hash))
}

function parseAnswer(text: string): unknown {
  if (text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function staleList(json: unknown): string[] {
  const stale = (json as {stale?: unknown} | undefined)?.stale
  return Array.isArray(stale) ? stale.filter((p): p is string => typeof p === 'string') : []
}

/** The answer's `message`; else what the body was, in a few words (never a whole web page). */
function messageOf(json: unknown, text: string): string {
  const message = (json as {message?: unknown} | undefined)?.message
  if (typeof message === 'string') return message
  if (text.trim() === '') return 'an empty body'
  if (/^\s*</.test(text)) return 'a web page, not JSON'
  return text.replace(/\s+/g, ' ').trim().slice(0, 200)
}

function describeNetworkError(error: unknown): string {
  const code = (error as {code?: string; cause?: {code?: string}})?.code ?? (error as {cause?: {code?: string}})?.cause?.code
  const message = error instanceof Error ? error.message : String(error)
  // It took the connection and never answered: say after how long, and where that limit is set.
  if (code === 'ETIMEDOUT') return `${message} (sync.requestTimeout in .nexus/config.json sets how long to wait)`
  return code ? `${code} (${message})` : message
}
