/** `jarvis memory append` / `memory_append`. */
import {randomUUID} from 'node:crypto'

import createDebug from 'debug'

import {BadInputError, JarvisError, SchemaError, UnreachableError} from '../../errors.js'
import {assertNoSensitive, canWrite, MAX_EVENTS_PER_RUN} from '../../events/index.js'
import {type AppendResponse, type MemoryEvent, memoryEventSchema, parseJsonText, parseWith} from '../../schemas/index.js'
import {appendOutbox, withTreeLock} from '../../store/index.js'
import {assertOutboxServer, openTreeIfAny, type TreeContext} from '../context.js'
import {readUserConfig, resolveIdentity} from '../identity.js'
import {asSecretRefusal, checkAgent, currentRunId, type IdentityOptions, openEvents, type Warn, withoutPart, worthQueueing} from './common.js'

const debug = createDebug('jarvis:memory')

export interface AppendFields {
  kind?: string
  key?: string
  /** The Markdown. */
  content?: string
  scope?: string
  confidence?: string
  supersedes?: string
  ttlDays?: number
}

export interface AppendOptions extends IdentityOptions {
  fields: AppendFields
  /** One event or a JSON array of events (at most MAX_EVENTS_PER_RUN), as text, and where it came from. Exclusive with fields. */
  eventsText?: {name: string; text: string}
  /** Who wrote it, recorded as the event's `source.system` unless the event names its own. */
  source?: MemoryEvent['source']['system']
  /** Where in that system: `thread_id` (a Telegram chat), `message_id`. */
  sourceDetail?: {thread_id?: string; message_id?: string}
  /** The run the events belong to; default this process's (`currentRunId`). A long-lived door gives each request its own. */
  runId?: string
  /** How the door names the fields in a refusal (`kind`, a chat command's argument); default the command's flags. */
  names?: FieldNames
  warn?: Warn
}

/** What a refusal of `fields` calls the whole (`flags`, `/append`) and each event field (`kind` → `--kind`). */
export interface FieldNames {
  where: string
  fields: Partial<Record<string, string>>
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

const FLAGS: FieldNames = {
  where: 'flags',
  fields: {
    kind: '--kind',
    dedupe_key: '--key',
    content_md: '--content',
    scope: '--scope',
    confidence: '--confidence',
    supersedes: '--supersedes',
    ttl_days: '--ttl-days',
    agent_id: '--agent',
    run_id: 'JARVIS_RUN_ID',
  },
}

/** The events a command line describes, validated (zod) and within the per-run limit; nothing is sent yet. */
export function readEvents(options: Pick<AppendOptions, 'fields' | 'eventsText' | 'source' | 'sourceDetail' | 'names'>, agentId: string, runId: string): MemoryEvent[] {
  const defaults = {agent_id: agentId, run_id: runId, scope: 'global', confidence: 'high', source: {system: options.source ?? 'cli', ...options.sourceDetail}, ttl_days: 0}
  if (options.eventsText !== undefined) return parseEventsText(options.eventsText, defaults, agentId)

  const {fields} = options
  for (const [name, flag] of [['kind', '--kind'], ['key', '--key'], ['content', '--content']] as const) {
    if (fields[name] === undefined) throw new BadInputError(`${flag} is required (or give whole events with --from-file)`, {field: flag})
  }
  const content = fields.content!
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
    const names = options.names ?? FLAGS
    throw new SchemaError(
      names.where,
      parsed.error.issues.map((issue) => {
        const path = issue.path.join('.')
        const name = names.fields[String(issue.path[0] ?? '')]
        // A flag also says which event field it set (`--key (dedupe_key)`); a door's own names stand alone.
        const label = name === undefined ? path || '(root)' : names === FLAGS ? `${name} (${path})` : name
        return `${label}: ${issue.message}`
      }),
    )
  }
  return [parsed.data]
}

function parseEventsText({name, text}: {name: string; text: string}, defaults: Record<string, unknown>, agentId: string): MemoryEvent[] {
  const json = parseJsonText(text, name)
  const batch = Array.isArray(json)
  const items = batch ? json : [json]
  if (items.length === 0) throw new BadInputError(`${name}: no event in the file (an event object, or an array of 1 to ${MAX_EVENTS_PER_RUN})`, {file: name})
  if (items.length > MAX_EVENTS_PER_RUN) {
    throw new BadInputError(
      `${name}: ${items.length} events in one run; the protocol allows at most ${MAX_EVENTS_PER_RUN} (write only what was settled, at a grain that matters later)`,
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
  const runId = options.runId ?? currentRunId()
  const events = readEvents(options, agentId, runId)
  // Refused by any server, so never sent nor queued (a queued one would wait in the outbox for good).
  for (const [index, event] of events.entries()) {
    if (!canWrite(agentId, event.scope)) {
      throw new BadInputError(`${events.length === 1 ? '' : `[${index}] `}scope ${event.scope}: another agent's private scope, which ${agentId} may not write; write to global, project:<slug> or agent:${agentId}`, {field: 'scope', scope: event.scope})
    }
  }
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
        if (worthQueueing(error)) await queueEvents(tree, connected.server, events.slice(index), keys.slice(index), appended, error)
        if (error instanceof UnreachableError && typeof error.data.status === 'number' && error.data.status >= 500) unknownOutcome(error, events.slice(index), runId)
        withoutPart(error, notWritten(events.slice(index)))
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

/**
 * A server that failed while appending may have stored the event before failing: the message says how to find out,
 * and how to send it again so that a stored one is answered `duplicate` (the same run id makes it the same event).
 */
function unknownOutcome(error: UnreachableError, unsent: MemoryEvent[], runId: string): void {
  const keys = unsent.map((event) => event.dedupe_key).join(', ')
  error.message += `\nwhether ${unsent.length === 1 ? 'the event was' : 'these events were'} stored (${keys}) is not known: \`jarvis memory list --key ${unsent[0].dedupe_key}\` shows it; to send ${unsent.length === 1 ? 'it' : 'them'} again safely, run the same command with JARVIS_RUN_ID=${runId}`
  Object.assign(error.data, {run_id: runId})
}

/** What an append to a server without an event log did not do: nothing waits in the outbox for it. */
function notWritten(unsent: MemoryEvent[]): string {
  const what = unsent.length === 1 ? `the event ${unsent[0].dedupe_key} was` : `${unsent.length} events (${unsent.map((event) => event.dedupe_key).join(', ')}) were`
  return `${what} not written, and not queued: this server would refuse ${unsent.length === 1 ? 'it' : 'them'} again. To keep ${unsent.length === 1 ? 'it' : 'them'} there, write a memory file (\`jarvis memory write\`), which \`jarvis sync\` shares`
}

/** A failure after some events were stored says which: a rerun then sends the same events and gets `duplicate`. */
function withProgress(error: unknown, appended: AppendedEvent[]): unknown {
  if (appended.length === 0 || !(error instanceof JarvisError)) return error
  const stored = appended.map((event) => `${event.dedupe_key} (${event.event_id})`).join(', ')
  error.message += `\nalready stored before this failure: ${stored}`
  Object.assign(error.data, {appended})
  return error
}

async function queueEvents(tree: TreeContext | undefined, server: string, events: MemoryEvent[], ids: string[], appended: AppendedEvent[], cause: UnreachableError): Promise<never> {
  const keys = events.map((event) => event.dedupe_key).join(', ')
  if (!tree) {
    throw new UnreachableError(
      `${cause.message}\nnothing was written and nothing was queued (${keys}): there is no jarvis tree here to hold the outbox; run the same command again when the server answers, or inside a tree (\`jarvis init\`, --dir) to queue it`,
      {...cause.data, queued: false},
      cause,
    )
  }
  await assertOutboxServer(tree, server, cause).catch((refusal: unknown) => {
    throw withProgress(refusal, appended)
  })
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
