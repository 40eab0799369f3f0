/** What the event-log operations share: who writes, which server, which scopes, when a write is worth queueing. */
import {randomUUID} from 'node:crypto'

import {z} from 'zod'

import {BadInputError, SecretRefusedError, UnreachableError} from '../../errors.js'
import {DURATION, parseDuration} from '../../events/duration.js'
import {describeFindings, type SensitiveFinding} from '../../events/index.js'
import {missingPart} from '../../protocol/client.js'
import {EventsClient} from '../../protocol/events.js'
import {agentIdSchema, isoDateTimeSchema, scopeSchema} from '../../schemas/index.js'
import {withTreeLock} from '../../store/index.js'
import {connect, connectAs, type TreeContext} from '../context.js'

/** Where a command reports what is not its result: `this.warn` of the command (stderr and the --json envelope). */
export type Warn = (message: string) => void

export interface ServerOptions {
  dir?: string
  server?: string
}

export interface IdentityOptions extends ServerOptions {
  agent?: string
}

// ---------------------------------------------------------------------------------------------------------------
// run id, agent, tree

let processRunId: string | undefined

/** `JARVIS_RUN_ID`, else one UUID for the whole process: every event of one run shares it. */
export function currentRunId(env: NodeJS.ProcessEnv = process.env): string {
  if (env.JARVIS_RUN_ID) return env.JARVIS_RUN_ID
  processRunId ??= randomUUID()
  return processRunId
}

/**
 * A run of its own for one request of a long-lived door (a call over the hosted /mcp, a Telegram message): every
 * request is a run, so a decision changed back to an earlier text is a new event, not a duplicate of the first.
 */
export function newRunId(door: string): string {
  return `${door}-${randomUUID()}`
}


export function checkAgent(agentId: string | undefined, why: string): z.output<typeof agentIdSchema> {
  if (!agentId) throw new BadInputError(`no agent ${why}: pass --agent, set JARVIS_AGENT, or run \`jarvis init --agent ID\``, {field: 'agent'})
  const parsed = agentIdSchema.safeParse(agentId)
  if (!parsed.success) {
    throw new BadInputError(`unknown agent ${JSON.stringify(agentId)}: one of ${agentIdSchema.options.join(', ')}`, {field: 'agent', agent: agentId})
  }
  return parsed.data
}

/** The event log's client; with an agent named, as that agent (a token known to be another agent's is refused first). */
export async function openEvents(tree: TreeContext | undefined, flags: {server?: string; agent?: string}) {
  const {client, identity} = flags.agent ? await connectAs(tree, {...flags, agent: flags.agent}) : await connect(tree, flags)
  return {client: EventsClient.over(client), identity}
}

/**
 * Only a server that is away is worth waiting for: a network failure or a gateway/overload answer (502-504).
 * A refused token (401/403) or a failing server (500) would fail the same way from the outbox.
 */
export function worthQueueing(error: unknown): error is UnreachableError {
  if (!(error instanceof UnreachableError)) return false
  const status = error.data.status
  return status === undefined || status === 502 || status === 503 || status === 504
}

/**
 * A server without the part of the protocol a command needs (`missingPart`: its route answered 404): the client's
 * message, and then what the command did not do, so that no one waits for a write that will never arrive.
 */
export function withoutPart(error: unknown, outcome: string): unknown {
  if (missingPart(error) !== undefined) (error as Error).message += `\n${outcome}`
  return error
}

/**
 * The server's refusal of a query parameter (400 naming `querystring/<name>`), told as the flag that set it: the
 * server's `querystring/limit_recent must be an integer from 1 to 500` is `--limit-recent must be …` (exit 2).
 */
export function asFlagRefusal(error: unknown): unknown {
  if (!(error instanceof BadInputError) || error.data.status !== 400) return error
  const answer = error.data.answer as {field?: unknown; message?: unknown} | undefined
  const name = typeof answer?.field === 'string' ? /^querystring\/(\w+)$/.exec(answer.field)?.[1] : undefined
  if (name === undefined || typeof answer?.message !== 'string') return error
  const flag = `--${name.replaceAll('_', '-')}`
  return new BadInputError(`${answer.message.replace(answer.field as string, flag)} (refused by the server)`, {...error.data, field: flag}, error)
}

/** The server's own secret check (422 `{error: 'sensitive', findings}`) as the same exit 5 as ours. */
export function asSecretRefusal(error: unknown, where: string): unknown {
  if (!(error instanceof BadInputError) || error.data.status !== 422) return error
  const answer = error.data.answer as {error?: unknown; findings?: unknown} | undefined
  if (answer?.error !== 'sensitive' || !Array.isArray(answer.findings)) return error
  const findings = answer.findings as SensitiveFinding[]
  return new SecretRefusedError(`the server refused ${where}: it holds ${describeFindings(findings)}; nothing was stored`, {findings, status: 422})
}

// ---------------------------------------------------------------------------------------------------------------
// durations and times

export {parseDuration}

/** `--since`: an ISO date-time, a date (`2026-02-01`, midnight UTC), or a duration back from now (`7d`). */
export function parseSince(text: string, flag: string, now: Date): string {
  if (DURATION.test(text.trim())) return new Date(now.getTime() - parseDuration(text, flag) * 86_400_000).toISOString()
  if (/^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(Date.parse(`${text}T00:00:00Z`))) return `${text}T00:00:00.000Z`
  if (isoDateTimeSchema.safeParse(text).success) return text
  throw new BadInputError(`${flag}: ${JSON.stringify(text)} is neither a date (2026-02-01), an ISO date-time with a zone, nor a duration (7d, 12h, 2w)`, {field: flag})
}


export function checkScopes(scopes: string[], flag: string): string[] {
  if (scopes.length === 0) throw new BadInputError(`${flag}: give at least one scope (global, project:<slug>, agent:<id>)`, {field: flag})
  for (const scope of scopes) {
    const parsed = scopeSchema.safeParse(scope)
    if (!parsed.success) throw new BadInputError(`${flag}: ${JSON.stringify(scope)} ${parsed.error.issues[0]?.message ?? 'is not a scope'}`, {field: flag, scope})
  }
  return [...new Set(scopes)]
}

/** `fn` under the tree lock when there is a tree (it writes the audit log), as is otherwise. */
export function underTreeLock<T>(tree: TreeContext | undefined, command: string, fn: () => Promise<T>): Promise<T> {
  return tree ? withTreeLock(tree.root, {timeoutMs: tree.config.sync.lockTimeout, command}, fn) : fn()
}
