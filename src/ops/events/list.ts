/** `jarvis memory list` / the event half of `memory search`. */
import {BadInputError, JarvisError, UnreachableError} from '../../errors.js'
import {canRead} from '../../events/index.js'
import type {EventQuery} from '../../protocol/events.js'
import {EVENT_QUERY_MAX, eventKindSchema, parseWith, type StoredMemoryEvent} from '../../schemas/index.js'
import {openTreeIfAny} from '../context.js'
import {readUserConfig, resolveIdentity} from '../identity.js'
import {headOf} from '../../schemas/shorten.js'
import {asFlagRefusal, checkAgent, checkScopes, openEvents, parseSince, type ServerOptions} from './common.js'

export interface ListOptions extends ServerOptions {
  /** A scope, or a family ending in `*` (`agent:*`). */
  scope?: string
  kind?: string
  key?: string
  /** The author of the events (not who asks: that is the token's agent). */
  agent?: string
  /** Who asks, when it is not the tree's agent (`jarvis mcp --agent X`): its token is used, its private scope read. */
  as?: string
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
  if (options.until !== undefined) {
    // A day is up to its end, as a person means `--since 2026-12-07 --until 2026-12-07`: the server's bound is exclusive.
    const day = /^\d{4}-\d{2}-\d{2}$/.test(options.until.trim())
    const until = parseSince(options.until.trim(), '--until', now())
    filters.until = day ? new Date(Date.parse(until) + 86_400_000).toISOString() : until
    if (filters.since !== undefined && Date.parse(filters.since) >= Date.parse(filters.until)) {
      throw new BadInputError(`--since ${options.since} is not before --until ${options.until}: no event can be in between`, {field: '--until'})
    }
  }
  if (options.limit !== undefined) filters.limit = options.limit
  if (options.includeDeprecated) filters.include_deprecated = true
  if (options.query !== undefined) {
    if (options.query.trim() === '') throw new BadInputError('the search query is empty', {field: 'query'})
    filters.q = eventQueryOf(options.query)
  }

  const tree = await openTreeIfAny(options.dir)
  // Who asks is the token's agent; knowing it here turns a private scope of another agent into a clear refusal.
  const me = resolveIdentity({flags: {server: options.server, agent: options.as}, env: process.env, tree: tree?.config, user: await readUserConfig()}).agentId
  if (me && filters.scope && !filters.scope.endsWith('*') && !canRead(me, filters.scope)) {
    throw new BadInputError(`agent ${me} cannot read ${filters.scope}: another agent's agent:<id> scope is private; it is shared by writing to global or project:<slug>`, {
      field: '--scope',
      scope: filters.scope,
    })
  }
  const {client, identity} = await openEvents(tree, {server: options.server, agent: options.as})
  try {
    const answer = await client.events(filters).catch((error: unknown) => {
      // A server with only the basic protocol keeps the log but offers no list of it.
      if (error instanceof JarvisError && error.data.status === 404) {
        throw new UnreachableError(`the server at ${identity.server} has no event list (GET /v1/memory/events answered 404), so events cannot be listed or searched there; \`jarvis memory snapshot\` shows its recent events`, {server: identity.server, status: 404}, error)
      }
      throw asFlagRefusal(error)
    })
    return {server: identity.server, ...(options.query === undefined ? {} : {query: options.query}), filters, total: answer.total ?? answer.events.length, events: answer.events}
  } finally {
    await client.close()
  }
}

/**
 * The text search a server answers: the query itself, or, past EVENT_QUERY_MAX, its beginning cut at the last space
 * (never inside a surrogate pair). A long question (a pasted paragraph) still finds events by its first words, where
 * the server would refuse it whole; the memory files are searched with all of it.
 */
export function eventQueryOf(query: string): string {
  if (query.length <= EVENT_QUERY_MAX) return query
  let cut = headOf(query, EVENT_QUERY_MAX)
  const space = cut.search(/\s\S*$/)
  if (space > 0 && /\S/.test(query[EVENT_QUERY_MAX])) cut = cut.slice(0, space)
  return cut.trimEnd()
}
