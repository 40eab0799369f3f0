/**
 * `jarvis memory append|snapshot|list|search|consolidate|cleanup`: the CLI side of the shared event log
 * (docs/event-log.md, seed 001 §4, §5, §7, §11). Commands hand their flags to one function here and get typed
 * data back; the human rendering is in memory-render.ts.
 */
import {randomUUID} from 'node:crypto'
import {readFile} from 'node:fs/promises'
import {resolve} from 'node:path'

import createDebug from 'debug'
import {z} from 'zod'

import {BadInputError, JarvisError, LockedError, SchemaError, SecretRefusedError, UnreachableError} from '../errors.js'
import {assertNoSensitive, canRead, describeFindings, MAX_EVENTS_PER_RUN, RULESET_STAMP, type SensitiveFinding} from '../events/index.js'
import {type CleanupResponse, type ConsolidateResponse, EventsClient, type EventQuery} from '../protocol/events.js'
import {
  agentIdSchema,
  type AppendResponse,
  eventKindSchema,
  isoDateTimeSchema,
  type MemoryEvent,
  memoryEventSchema,
  parseJsonFile,
  parseJsonText,
  parseWith,
  scopeSchema,
  type SnapshotResponse,
  snapshotResponseSchema,
  type StoredMemoryEvent,
} from '../schemas/index.js'
import {appendAudit, appendOutbox, readNexusFile, withTreeLock, writeNexusFile} from '../store/index.js'
import {connect, openTreeIfAny, type TreeContext} from './context.js'
import {readUserConfig, resolveIdentity} from './settings.js'

const debug = createDebug('jarvis:memory')

export const SNAPSHOT_CACHE_FILE = 'snapshot-cache.json'
export const DEFAULT_LIMIT_RECENT = 50

/** Where a command reports what is not its result: `this.warn` of the command (stderr and the --json envelope). */
export type Warn = (message: string) => void

interface ServerOptions {
  dir?: string
  server?: string
}

interface IdentityOptions extends ServerOptions {
  agent?: string
}

// ---------------------------------------------------------------------------------------------------------------
// run id, agent, tree

let processRunId: string | undefined

/** `JARVIS_RUN_ID`, else one UUID for the whole process: every event of one run shares it (seed 001 §6). */
export function currentRunId(env: NodeJS.ProcessEnv = process.env): string {
  if (env.JARVIS_RUN_ID) return env.JARVIS_RUN_ID
  processRunId ??= randomUUID()
  return processRunId
}


function checkAgent(agentId: string | undefined, why: string): z.output<typeof agentIdSchema> {
  if (!agentId) throw new BadInputError(`no agent ${why}: pass --agent, set JARVIS_AGENT, or run \`jarvis init --agent ID\``, {field: 'agent'})
  const parsed = agentIdSchema.safeParse(agentId)
  if (!parsed.success) {
    throw new BadInputError(`unknown agent ${JSON.stringify(agentId)}: one of ${agentIdSchema.options.join(', ')}`, {field: 'agent', agent: agentId})
  }
  return parsed.data
}

async function openEvents(tree: TreeContext | undefined, flags: {server?: string; agent?: string}) {
  const {client, identity} = await connect(tree, flags)
  return {client: EventsClient.over(client), identity}
}

/**
 * Only a server that is away is worth waiting for: a network failure or a gateway/overload answer (502-504).
 * A refused token (401/403) or a failing server (500) would fail the same way from the outbox.
 */
function worthQueueing(error: unknown): error is UnreachableError {
  if (!(error instanceof UnreachableError)) return false
  const status = error.data.status
  return status === undefined || status === 502 || status === 503 || status === 504
}

/** The server's own secret check (422 `{error: 'sensitive', findings}`) as the same exit 5 as ours. */
function asSecretRefusal(error: unknown, where: string): unknown {
  if (!(error instanceof BadInputError) || error.data.status !== 422) return error
  const answer = error.data.answer as {error?: unknown; findings?: unknown} | undefined
  if (answer?.error !== 'sensitive' || !Array.isArray(answer.findings)) return error
  const findings = answer.findings as SensitiveFinding[]
  return new SecretRefusedError(`the server refused ${where}: it holds ${describeFindings(findings)}; nothing was stored`, {findings, status: 422})
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

// ---------------------------------------------------------------------------------------------------------------
// durations and times

const DURATION = /^(\d+(?:\.\d+)?)(h|d|w)$/
const HOURS_PER_UNIT = {h: 1, d: 24, w: 24 * 7} as const

/** `30d`, `12h`, `2w` → days (12h → 0.5); anything else is a usage error naming the flag. */
export function parseDuration(text: string, flag: string): number {
  const match = DURATION.exec(text.trim())
  if (!match) throw new BadInputError(`${flag}: ${JSON.stringify(text)} is not a duration: use a number and h, d or w, e.g. 12h, 30d, 2w`, {field: flag})
  return (Number(match[1]) * HOURS_PER_UNIT[match[2] as keyof typeof HOURS_PER_UNIT]) / 24
}

/** `--since`: an ISO date-time, a date (`2026-02-01`, midnight UTC), or a duration back from now (`7d`). */
export function parseSince(text: string, flag: string, now: Date): string {
  if (DURATION.test(text.trim())) return new Date(now.getTime() - parseDuration(text, flag) * 86_400_000).toISOString()
  if (/^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(Date.parse(`${text}T00:00:00Z`))) return `${text}T00:00:00.000Z`
  if (isoDateTimeSchema.safeParse(text).success) return text
  throw new BadInputError(`${flag}: ${JSON.stringify(text)} is neither a date (2026-02-01), an ISO date-time with a zone, nor a duration (7d, 12h, 2w)`, {field: flag})
}

// ---------------------------------------------------------------------------------------------------------------
// append

export interface AppendFields {
  kind?: string
  key?: string
  /** The Markdown, or `-` to read it from stdin. */
  content?: string
  scope?: string
  confidence?: string
  supersedes?: string
  ttlDays?: number
}

export interface AppendOptions extends IdentityOptions {
  fields: AppendFields
  /** One event or a JSON array of events (at most MAX_EVENTS_PER_RUN); `-` for stdin. Exclusive with fields. */
  fromFile?: string
  warn?: Warn
  /** stdin, for `--content -` / `--from-file -` (tests pass a string). */
  stdin?: () => Promise<string>
}

export interface AppendedEvent {
  event_id: string
  status: AppendResponse['status']
  scope: string
  kind: string
  dedupe_key: string
  warnings: string[]
}

export interface AppendResult {
  agent_id: string
  run_id: string
  server: string
  /** The id and status of the event, when one event was appended. */
  event_id?: string
  status?: AppendResponse['status']
  events: AppendedEvent[]
  warnings: string[]
}

const FLAG_OF: Record<string, string> = {
  kind: '--kind',
  dedupe_key: '--key',
  content_md: '--content',
  scope: '--scope',
  confidence: '--confidence',
  supersedes: '--supersedes',
  ttl_days: '--ttl-days',
  agent_id: '--agent',
  run_id: 'JARVIS_RUN_ID',
}

/** The events a command line describes, validated (zod) and within the per-run limit; nothing is sent yet. */
export async function readEvents(options: Pick<AppendOptions, 'fields' | 'fromFile' | 'stdin'>, agentId: string, runId: string): Promise<MemoryEvent[]> {
  const defaults = {agent_id: agentId, run_id: runId, scope: 'global', confidence: 'high', source: {system: 'cli'}, ttl_days: 0}
  if (options.fromFile !== undefined) return readEventFile(options.fromFile, options.stdin ?? readStdin, defaults, agentId)

  const {fields} = options
  for (const [name, flag] of [['kind', '--kind'], ['key', '--key'], ['content', '--content']] as const) {
    if (fields[name] === undefined) throw new BadInputError(`${flag} is required (or give whole events with --from-file)`, {field: flag})
  }
  const content = fields.content === '-' ? await (options.stdin ?? readStdin)() : fields.content!
  const event: Record<string, unknown> = {
    ...defaults,
    kind: fields.kind,
    dedupe_key: fields.key,
    content_md: content.replace(/\r\n/g, '\n').replace(/\n+$/, ''),
  }
  if (fields.scope !== undefined) event.scope = fields.scope
  if (fields.confidence !== undefined) event.confidence = fields.confidence
  if (fields.supersedes !== undefined) event.supersedes = fields.supersedes
  if (fields.ttlDays !== undefined) event.ttl_days = fields.ttlDays
  const parsed = memoryEventSchema.safeParse(event)
  if (!parsed.success) {
    throw new SchemaError(
      'flags',
      parsed.error.issues.map((issue) => {
        const field = String(issue.path[0] ?? '')
        return `${FLAG_OF[field] ? `${FLAG_OF[field]} (${issue.path.join('.')})` : issue.path.join('.') || '(root)'}: ${issue.message}`
      }),
    )
  }
  return [parsed.data]
}

async function readEventFile(file: string, stdin: () => Promise<string>, defaults: Record<string, unknown>, agentId: string): Promise<MemoryEvent[]> {
  const name = file === '-' ? '<stdin>' : file
  let text: string
  try {
    text = file === '-' ? await stdin() : await readFile(resolve(file), 'utf8')
  } catch (error) {
    throw new BadInputError(`${name}: cannot read the events: ${(error as Error).message}`, {file: name}, error)
  }
  const json = parseJsonText(text, name)
  const batch = Array.isArray(json)
  const items = batch ? json : [json]
  if (items.length === 0) throw new BadInputError(`${name}: no event in the file (an event object, or an array of 1 to ${MAX_EVENTS_PER_RUN})`, {file: name})
  if (items.length > MAX_EVENTS_PER_RUN) {
    throw new BadInputError(
      `${name}: ${items.length} events in one run; the protocol allows at most ${MAX_EVENTS_PER_RUN} (seed 001 W-1: write only what was settled, at a grain that matters later)`,
      {file: name, count: items.length, max: MAX_EVENTS_PER_RUN},
    )
  }
  const events = items.map((item, index) => {
    const where = batch ? `${name}: [${index}]` : name
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new SchemaError(where, ['(root): expected a memory event object'])
    const given = item as Record<string, unknown>
    if (given.agent_id !== undefined && given.agent_id !== agentId) {
      throw new BadInputError(`${where}: agent_id is ${JSON.stringify(given.agent_id)}, but this command runs as ${JSON.stringify(agentId)}`, {file: name, field: 'agent_id'})
    }
    return parseWith(memoryEventSchema, {...defaults, ...given}, where)
  })
  return events
}

/** Every free-text string of the events, named as the secret check reports it (`content_md`, `[2].content_md`). */
function sensitiveFields(events: MemoryEvent[]): Record<string, string> {
  const fixed = new Set(['agent_id', 'scope', 'kind', 'confidence'])
  const fields: Record<string, string> = {}
  const walk = (value: unknown, path: string) => {
    if (typeof value === 'string') fields[path] = value
    else if (Array.isArray(value)) value.forEach((item, index) => walk(item, `${path}[${index}]`))
    else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) if (!(path === '' && fixed.has(key)) && !(key === 'system' && path.endsWith('source'))) walk(item, path ? `${path}.${key}` : key)
    }
  }
  events.forEach((event, index) => walk(event, events.length === 1 ? '' : `[${index}]`))
  return fields
}

/**
 * `jarvis memory append`: validate, refuse secrets and personal data before anything leaves this machine, then
 * POST each event with its own Idempotency-Key. When the server cannot be reached, the events not yet stored go to
 * the outbox under that same key (so a replay by `jarvis sync` is stored once) and the command exits 3.
 */
export async function appendMemory(options: AppendOptions): Promise<AppendResult> {
  const tree = await openTreeIfAny(options.dir)
  const identity = resolveIdentity({flags: options, env: process.env, tree: tree?.config, user: await readUserConfig()})
  const agentId = checkAgent(identity.agentId, 'to write as')
  const runId = currentRunId()
  const events = await readEvents(options, agentId, runId)
  await assertNoSensitive(sensitiveFields(events))

  const {client, identity: connected} = await openEvents(tree, {...options, agent: agentId})
  const appended: AppendedEvent[] = []
  const warnings: string[] = []
  const keys = events.map(() => randomUUID())
  try {
    for (const [index, event] of events.entries()) {
      let answer: AppendResponse
      try {
        answer = await client.append(event, keys[index])
      } catch (error) {
        if (worthQueueing(error)) await queueEvents(tree, events.slice(index), keys.slice(index), appended, error)
        throw withProgress(asSecretRefusal(error, `${event.dedupe_key}`), appended)
      }
      const label = events.length === 1 ? '' : `${event.dedupe_key}: `
      for (const warning of answer.warnings) {
        warnings.push(`${label}${warning}`)
        options.warn?.(`${label}${warning}`)
      }
      appended.push({event_id: answer.event_id, status: answer.status, scope: event.scope, kind: event.kind, dedupe_key: event.dedupe_key, warnings: answer.warnings})
      debug('appended %s as %s (%s)', event.dedupe_key, answer.event_id, answer.status)
    }
  } finally {
    await client.close()
  }
  const single = appended.length === 1 ? {event_id: appended[0].event_id, status: appended[0].status} : {}
  return {agent_id: agentId, run_id: runId, server: connected.server, ...single, events: appended, warnings}
}

/** A failure after some events were stored says which: a rerun then sends the same events and gets `duplicate`. */
function withProgress(error: unknown, appended: AppendedEvent[]): unknown {
  if (appended.length === 0 || !(error instanceof JarvisError)) return error
  const stored = appended.map((event) => `${event.dedupe_key} (${event.event_id})`).join(', ')
  error.message += `\nalready stored before this failure: ${stored}`
  Object.assign(error.data, {appended})
  return error
}

async function queueEvents(tree: TreeContext | undefined, events: MemoryEvent[], ids: string[], appended: AppendedEvent[], cause: UnreachableError): Promise<never> {
  const keys = events.map((event) => event.dedupe_key).join(', ')
  if (!tree) {
    throw new UnreachableError(
      `${cause.message}\nnothing was written and nothing was queued (${keys}): there is no jarvis tree here to hold the outbox; run the same command again when the server answers, or inside a tree (\`jarvis init\`, --dir) to queue it`,
      {...cause.data, queued: false},
      cause,
    )
  }
  const createdAt = new Date().toISOString()
  await withTreeLock(tree.root, {timeoutMs: tree.config.sync.lockTimeout, command: 'jarvis memory append'}, async () => {
    for (const [index, event] of events.entries()) await appendOutbox(tree.root, {id: ids[index], kind: 'memory-event', createdAt, payload: event})
  })
  debug('queued %d event(s): %s', events.length, ids.join(', '))
  const what = events.length === 1 ? `the event ${keys} is` : `${events.length} events (${keys}) are`
  throw new UnreachableError(`${cause.message}\n${what} queued in .nexus/outbox.jsonl (entry ${ids.join(', ')}); the next \`jarvis sync\` sends it`, {
    ...cause.data,
    queued: true,
    kind: 'memory-event',
    id: ids[0],
    ids,
    dedupe_keys: events.map((event) => event.dedupe_key),
    appended,
  })
}

// ---------------------------------------------------------------------------------------------------------------
// snapshot

export interface SnapshotOptions extends IdentityOptions {
  /** Default: global, project:<tree project> when the tree has one, agent:<me>. */
  scopes?: string[]
  limitRecent?: number
  /** Show the last snapshot cached in this tree instead of asking the server. */
  offline?: boolean
  warn?: Warn
  now?: () => Date
}

export interface CachedInfo {
  at: string
  age_seconds: number
  server?: string
}

/** The server's answer (`pinned_md`, `recent_events`, `ruleset_stamp`, `snapshot_id`) plus what was asked. */
export type SnapshotResult = SnapshotResponse & {
  agent_id: string
  scopes: string[]
  server?: string
  /** Set only with --offline: when the shown snapshot was taken. It is not the current memory. */
  cached: CachedInfo | null
}

const snapshotCacheSchema = z.looseObject({
  version: z.literal(1),
  cached_at: isoDateTimeSchema,
  server: z.string().optional(),
  agent_id: z.string(),
  scopes: z.array(z.string()),
  limit_recent: z.number().optional(),
  snapshot: snapshotResponseSchema,
})

function checkScopes(scopes: string[], flag: string): string[] {
  if (scopes.length === 0) throw new BadInputError(`${flag}: give at least one scope (global, project:<slug>, agent:<id>)`, {field: flag})
  for (const scope of scopes) {
    const parsed = scopeSchema.safeParse(scope)
    if (!parsed.success) throw new BadInputError(`${flag}: ${JSON.stringify(scope)} ${parsed.error.issues[0]?.message ?? 'is not a scope'}`, {field: flag, scope})
  }
  return [...new Set(scopes)]
}

/**
 * `jarvis memory snapshot` (seed 001 §4): the pinned memory and the recent events as the server holds them now.
 * When they cannot be read the command stops with exit 3 and says what to fix (MUST-6); it never shows the cache
 * in their place. `offline` shows the cache, labelled with its age.
 */
export async function readSnapshot(options: SnapshotOptions): Promise<SnapshotResult> {
  const now = options.now ?? (() => new Date())
  const tree = await openTreeIfAny(options.dir)
  const identity = resolveIdentity({flags: options, env: process.env, tree: tree?.config, user: await readUserConfig()})
  if (options.offline) return readCachedSnapshot(tree, identity.agentId, options, now())

  const agentId = checkAgent(identity.agentId, 'to read the memory as')
  const scopes = checkScopes(
    options.scopes ?? ['global', ...(tree?.config.project ? [`project:${tree.config.project}`] : []), `agent:${agentId}`],
    '--scopes',
  )
  const limitRecent = options.limitRecent ?? DEFAULT_LIMIT_RECENT
  const {client, identity: connected} = await openEvents(tree, {...options, agent: agentId})
  let answer: SnapshotResponse
  try {
    answer = await client.snapshot({agentId, scopes, limitRecent})
  } catch (error) {
    throw unreadable(error, agentId, scopes)
  } finally {
    await client.close()
  }
  if (answer.ruleset_stamp !== RULESET_STAMP) {
    options.warn?.(`the server reads under ${answer.ruleset_stamp}, this client knows ${RULESET_STAMP}: check that both speak the same ruleset`)
  }
  if (tree) await cacheSnapshot(tree, {version: 1, cached_at: now().toISOString(), server: connected.server, agent_id: agentId, scopes, limit_recent: limitRecent, snapshot: answer})
  else debug('not in a jarvis tree: the snapshot is not cached')
  return {...answer, agent_id: agentId, scopes, server: connected.server, cached: null}
}

/** Every way a snapshot can fail is "the memory cannot be read" (exit 3), with what to fix. */
function unreadable(error: unknown, agentId: string, scopes: string[]): unknown {
  if (!(error instanceof JarvisError)) return error
  const fix =
    error.data.status === 403
      ? `agent ${agentId} may not read every scope asked for (${scopes.join(', ')}): another agent's agent:<id> scope is private; drop it from --scopes, or check that JARVIS_TOKEN is ${agentId}'s token`
      : error.data.status === 401
        ? `set JARVIS_TOKEN to ${agentId}'s token`
        : error instanceof UnreachableError && error.data.status === undefined && !/unexpected body/.test(error.message)
          ? 'check that the server is running and --server / JARVIS_SERVER points at it'
          : 'check the server and its logs'
  const message = `the shared memory cannot be read, so nothing is shown (seed 001 MUST-6): ${error.message}\nto fix: ${fix}; \`jarvis memory snapshot --offline\` shows the last cached snapshot, marked as not current`
  return new UnreachableError(message, {...error.data, agent_id: agentId, scopes}, error)
}

async function cacheSnapshot(tree: TreeContext, entry: z.input<typeof snapshotCacheSchema>): Promise<void> {
  try {
    await withTreeLock(tree.root, {timeoutMs: tree.config.sync.lockTimeout, command: 'jarvis memory snapshot'}, () =>
      writeNexusFile(tree.root, SNAPSHOT_CACHE_FILE, JSON.stringify(entry, null, 2) + '\n'),
    )
  } catch (error) {
    // The snapshot itself was read; a busy tree only means the cache stays one snapshot older.
    if (!(error instanceof LockedError)) throw error
    debug('snapshot cache not updated: %s', error.message)
  }
}

async function readCachedSnapshot(tree: TreeContext | undefined, agentId: string | undefined, options: SnapshotOptions, now: Date): Promise<SnapshotResult> {
  const file = `.nexus/${SNAPSHOT_CACHE_FILE}`
  if (!tree) throw new UnreachableError('no cached snapshot: --offline reads the cache of a jarvis tree, and there is none here (run inside a tree or pass --dir)')
  const text = await readNexusFile(tree.root, SNAPSHOT_CACHE_FILE)
  if (text === null) {
    throw new UnreachableError(`no cached snapshot in ${file}: nothing can be shown offline; run \`jarvis memory snapshot\` once the server answers`, {file})
  }
  const cache = parseJsonFile(snapshotCacheSchema, text, file)
  if (agentId && cache.agent_id !== agentId) {
    throw new UnreachableError(`no cached snapshot for agent ${agentId}: ${file} holds ${cache.agent_id}'s; run \`jarvis memory snapshot\` once the server answers`, {file})
  }
  const ageSeconds = Math.max(0, Math.round((now.getTime() - Date.parse(cache.cached_at)) / 1000))
  options.warn?.(`cached ${formatAge(ageSeconds)} ago (${cache.cached_at}) — not current: the server was not asked`)
  if (options.scopes && checkScopes(options.scopes, '--scopes').join(',') !== cache.scopes.join(',')) {
    options.warn?.(`the cached snapshot covers ${cache.scopes.join(', ')}, not ${options.scopes.join(', ')}`)
  }
  return {...cache.snapshot, agent_id: cache.agent_id, scopes: cache.scopes, server: cache.server, cached: {at: cache.cached_at, age_seconds: ageSeconds, server: cache.server}}
}

/** `42 s`, `5 min`, `3 h`, `4 days`. */
export function formatAge(seconds: number): string {
  if (seconds < 60) return `${seconds} s`
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`
  if (seconds < 48 * 3600) return `${Math.floor(seconds / 3600)} h`
  return `${Math.floor(seconds / 86_400)} days`
}

// ---------------------------------------------------------------------------------------------------------------
// list and search

export interface ListOptions extends ServerOptions {
  /** A scope, or a family ending in `*` (`agent:*`). */
  scope?: string
  kind?: string
  key?: string
  /** The author of the events (not who asks: that is the token's agent). */
  agent?: string
  since?: string
  until?: string
  limit?: number
  includeDeprecated?: boolean
  /** Free text for `jarvis memory search`. */
  query?: string
  now?: () => Date
}

export interface ListResult {
  server: string
  query?: string
  filters: EventQuery
  total: number
  events: StoredMemoryEvent[]
}

/** `jarvis memory list` / `search <query>`: events of the scopes this agent may read, newest or most relevant first. */
export async function listEvents(options: ListOptions): Promise<ListResult> {
  const now = options.now ?? (() => new Date())
  const filters: EventQuery = {}
  if (options.scope !== undefined) {
    const family = /^(?:agent|project):\*$/.test(options.scope)
    if (!family) checkScopes([options.scope], '--scope')
    filters.scope = options.scope
  }
  if (options.kind !== undefined) filters.kind = parseWith(eventKindSchema, options.kind, '--kind')
  if (options.key !== undefined) filters.dedupe_key = options.key
  if (options.agent !== undefined) filters.agent = checkAgent(options.agent, 'to filter by')
  if (options.since !== undefined) filters.since = parseSince(options.since, '--since', now())
  if (options.until !== undefined) filters.until = parseSince(options.until, '--until', now())
  if (options.limit !== undefined) filters.limit = options.limit
  if (options.includeDeprecated) filters.include_deprecated = true
  if (options.query !== undefined) {
    if (options.query.trim() === '') throw new BadInputError('the search query is empty', {field: 'query'})
    filters.q = options.query
  }

  const tree = await openTreeIfAny(options.dir)
  // Who asks is the token's agent; knowing it here turns a private scope of another agent into a clear refusal.
  const me = resolveIdentity({flags: {server: options.server}, env: process.env, tree: tree?.config, user: await readUserConfig()}).agentId
  if (me && filters.scope && !filters.scope.endsWith('*') && !canRead(me, filters.scope)) {
    throw new BadInputError(`agent ${me} cannot read ${filters.scope}: another agent's agent:<id> scope is private (seed 001 §1); it is shared by writing to global or project:<slug>`, {
      field: '--scope',
      scope: filters.scope,
    })
  }
  const {client, identity} = await openEvents(tree, {server: options.server})
  try {
    const answer = await client.events(filters)
    return {server: identity.server, ...(options.query === undefined ? {} : {query: options.query}), filters, total: answer.total ?? answer.events.length, events: answer.events}
  } finally {
    await client.close()
  }
}

// ---------------------------------------------------------------------------------------------------------------
// consolidate

export interface ConsolidateOptions extends ServerOptions {
  agent?: string
}

export interface ConsolidateResult {
  server: string
  changed: boolean
  pinned: number
  ttl_candidates: number
  ttl_candidate_ids: string[]
  conflicts: {scope: string; dedupe_key: string; event_ids: string[]; agents?: string[]; resolution_event_id: string | null}[]
  masked: {event_id: string; findings: {kind: string; rule?: string; field?: string; line?: number; column?: number}[]}[]
  /** Whether the conflicts and maskings were recorded in `.nexus/audit.jsonl` (only inside a tree). */
  audited: boolean
}

function idsOf(value: number | (string | {event_id: string})[]): {count: number; ids: string[]} {
  if (typeof value === 'number') return {count: value, ids: []}
  const ids = value.map((item) => (typeof item === 'string' ? item : item.event_id))
  return {count: ids.length, ids}
}

/** `jarvis memory consolidate`: the server's janitor; every masking and conflict also goes to the tree's audit log. */
export async function consolidateMemory(options: ConsolidateOptions): Promise<ConsolidateResult> {
  const tree = await openTreeIfAny(options.dir)
  const {client, identity} = await openEvents(tree, options)
  try {
    // Inside a tree the lock is taken first: a busy tree stops the command before the server changes anything,
    // so no masking or conflict goes unaudited.
    return await underTreeLock(tree, 'jarvis memory consolidate', async () => {
      const result = consolidationResult(await client.consolidate(), identity.server)
      if (!tree) {
        debug('not in a jarvis tree: %d conflict(s) and %d masking(s) are not written to any audit log', result.conflicts.length, result.masked.length)
        return result
      }
      const at = new Date().toISOString()
      for (const c of result.conflicts) await appendAudit(tree.root, {at, type: 'conflict', log: 'events', via: 'jarvis memory consolidate', server: identity.server, ...c})
      for (const m of result.masked) await appendAudit(tree.root, {at, type: 'mask', log: 'events', via: 'jarvis memory consolidate', server: identity.server, ...m})
      result.audited = true
      return result
    })
  } finally {
    await client.close()
  }
}

function consolidationResult(answer: ConsolidateResponse, server: string): ConsolidateResult {
  const ttl = idsOf(answer.ttl_candidates)
  return {
    server,
    changed: answer.changed ?? (answer.conflicts.length > 0 || answer.masked.length > 0),
    pinned: idsOf(answer.pinned).count,
    ttl_candidates: ttl.count,
    ttl_candidate_ids: ttl.ids,
    conflicts: answer.conflicts.map((c) => ({
      scope: c.scope,
      dedupe_key: c.dedupe_key,
      event_ids: c.event_ids,
      ...(Array.isArray(c.agents) ? {agents: c.agents.map(String)} : {}),
      resolution_event_id: c.resolution_event_id ?? null,
    })),
    // Only where and what kind: a finding never carries the secret itself.
    masked: answer.masked.map((m) => ({event_id: m.event_id, findings: m.findings.map(({kind, rule, field, line, column}) => ({kind, rule, field, line, column}))})),
    audited: false,
  }
}

/** `fn` under the tree lock when there is a tree (it writes the audit log), as is otherwise. */
function underTreeLock<T>(tree: TreeContext | undefined, command: string, fn: () => Promise<T>): Promise<T> {
  return tree ? withTreeLock(tree.root, {timeoutMs: tree.config.sync.lockTimeout, command}, fn) : fn()
}

// ---------------------------------------------------------------------------------------------------------------
// cleanup

export interface CleanupCandidate {
  event_id: string
  scope?: string
  kind?: string
  dedupe_key?: string
  agent_id?: string
  created_at?: string
  reason?: string
}

export interface CleanupOptions extends IdentityOptions {
  /** `30d`, `12h`, `2w`. */
  olderThan: string
  /** A scope or a family ending in `*` (`agent:*`). */
  scope?: string
  dryRun?: boolean
  /** The person approved on the command line. */
  yes?: boolean
  /** Asks a person; the default asks on the terminal when stdin and stdout are both TTYs, and is absent otherwise. */
  confirm?: ((candidates: CleanupCandidate[]) => Promise<boolean>) | null
}

export interface CleanupResult {
  server: string
  older_than: string
  older_than_days: number
  scope: string | null
  dry_run: boolean
  candidates: CleanupCandidate[]
  /** `--yes`, `prompt`, or null (a dry run, nothing to delete, or declined). */
  approved_by: '--yes' | 'prompt' | null
  declined: boolean
  deleted: string[]
  audited: boolean
}

function candidateOf(item: CleanupResponse['candidates'][number]): CleanupCandidate {
  const pick = (name: string) => (typeof item[name] === 'string' ? (item[name] as string) : undefined)
  const reason = pick('reason') ?? (item.deprecated === true ? 'deprecated' : item.ttl_candidate === true ? 'expired' : undefined)
  const candidate: CleanupCandidate = {event_id: item.event_id}
  for (const [name, value] of Object.entries({scope: pick('scope'), kind: pick('kind'), dedupe_key: pick('dedupe_key'), agent_id: pick('agent_id'), created_at: pick('created_at'), reason})) {
    if (value !== undefined) (candidate as unknown as Record<string, string>)[name] = value
  }
  return candidate
}

/**
 * `jarvis memory cleanup` (seed 001 §11): ask the server what is older than the limit and expired or deprecated,
 * then delete it only once a person approved — on the terminal, or with --yes. Without a terminal and without --yes
 * nothing is deleted (exit 2). Every deletion is recorded in the tree's audit log.
 */
export async function cleanupMemory(options: CleanupOptions): Promise<CleanupResult> {
  const days = parseDuration(options.olderThan, '--older-than')
  if (options.scope !== undefined && !/^(?:agent|project):\*$/.test(options.scope)) checkScopes([options.scope], '--scope')
  const tree = await openTreeIfAny(options.dir)
  const {client, identity} = await openEvents(tree, options)
  try {
    // The server counts whole days: ask for the whole days below the limit, and keep only what is older than it
    // (12h → the server's 0-day candidates created more than 12 hours ago). Only those ids are ever approved.
    const base = {older_than_days: Math.floor(days), ...(options.scope === undefined ? {} : {scope: options.scope})}
    const cutoff = Date.now() - days * 86_400_000
    const found = await client.cleanup({...base, dry_run: true})
    const candidates = found.candidates
      .map(candidateOf)
      .filter((c) => Number.isInteger(days) || (c.created_at !== undefined && Date.parse(c.created_at) < cutoff))
    const result: CleanupResult = {
      server: identity.server,
      older_than: options.olderThan,
      older_than_days: days,
      scope: options.scope ?? null,
      dry_run: Boolean(options.dryRun),
      candidates,
      approved_by: null,
      declined: false,
      deleted: [],
      audited: false,
    }
    if (options.dryRun || candidates.length === 0) return result

    if (options.yes) result.approved_by = '--yes'
    else {
      const confirm = options.confirm === undefined ? terminalConfirm() : options.confirm
      if (!confirm) {
        throw new BadInputError(
          `refusing to delete ${candidates.length} event(s) without a person's approval: there is no terminal to ask on; review them with --dry-run, then pass --yes`,
          {field: '--yes', candidates: candidates.map((c) => c.event_id)},
        )
      }
      if (!(await confirm(candidates))) {
        result.declined = true
        return result
      }
      result.approved_by = 'prompt'
    }

    // The lock first (not during the question): a busy tree stops the command before anything is deleted.
    return await underTreeLock(tree, 'jarvis memory cleanup', async () => {
      const done = await client.cleanup({...base, dry_run: false, event_ids: candidates.map((c) => c.event_id)})
      const deleted = new Set(done.deleted.map((item) => item.event_id))
      result.deleted = candidates.map((c) => c.event_id).filter((id) => deleted.has(id))
      result.audited = await auditDeletions(tree, candidates.filter((c) => deleted.has(c.event_id)), result, identity.server)
      return result
    })
  } finally {
    await client.close()
  }
}

async function auditDeletions(tree: TreeContext | undefined, deleted: CleanupCandidate[], result: CleanupResult, server: string): Promise<boolean> {
  if (!tree) {
    debug('not in a jarvis tree: %d deletion(s) are not written to any audit log', deleted.length)
    return false
  }
  if (deleted.length === 0) return true
  const at = new Date().toISOString()
  for (const event of deleted) {
    await appendAudit(tree.root, {at, type: 'delete', log: 'events', via: 'jarvis memory cleanup', server, ...event, older_than_days: result.older_than_days, approved_by: result.approved_by})
  }
  return true
}

/** A y/N question on the terminal, when there is one to ask on (stdin and stdout both TTYs); null otherwise. */
function terminalConfirm(): ((candidates: CleanupCandidate[]) => Promise<boolean>) | null {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return null
  return async (candidates) => {
    const {renderCandidates} = await import('./memory-render.js')
    const {createInterface} = await import('node:readline/promises')
    process.stderr.write(renderCandidates(candidates, 'would delete') + '\n')
    const prompt = createInterface({input: process.stdin, output: process.stderr})
    try {
      const answer = await prompt.question(`Delete these ${candidates.length} event(s) from the shared memory? [y/N] `)
      return /^y(?:es)?$/i.test(answer.trim())
    } finally {
      prompt.close()
    }
  }
}
