/** `jarvis memory snapshot` / `memory_snapshot`. */
import createDebug from 'debug'
import {z} from 'zod'

import {JarvisError, UnreachableError} from '../../errors.js'
import {RULESET_STAMP} from '../../events/index.js'
import {missingPart} from '../../protocol/client.js'
import {isoDateTimeSchema, parseJsonFile, type SnapshotResponse, snapshotResponseSchema} from '../../schemas/index.js'
import {readNexusFile, writeNexusFile} from '../../store/index.js'
import {openTreeIfAny, type TreeContext} from '../context.js'
import {isTokenError, readUserConfig, resolveIdentity} from '../identity.js'
import {asFlagRefusal, checkAgent, checkScopes, type IdentityOptions, openEvents, type Warn} from './common.js'

const debug = createDebug('jarvis:memory')

export const SNAPSHOT_CACHE_FILE = 'snapshot-cache.json'
export const DEFAULT_LIMIT_RECENT = 50

export interface SnapshotOptions extends IdentityOptions {
  /** Default: global, project:<tree project> when the tree has one, agent:<me>. */
  scopes?: string[]
  limitRecent?: number
  /** Show the last snapshot cached in this tree instead of asking the server. */
  offline?: boolean
  /** Cache the snapshot in the tree for `offline` (default true; a long-lived MCP session caches one now and then). */
  cache?: boolean
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


/**
 * `jarvis memory snapshot`: the pinned memory and the recent events as the server holds them now.
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
  if (tree && options.cache !== false) await cacheSnapshot(tree, {version: 1, cached_at: now().toISOString(), server: connected.server, agent_id: agentId, scopes, limit_recent: limitRecent, snapshot: answer})
  else debug('not in a jarvis tree: the snapshot is not cached')
  return {...answer, agent_id: agentId, scopes, server: connected.server, cached: null}
}

/** Every way a snapshot can fail is "the memory cannot be read" (exit 3), with what to fix; but a flag the server refuses (exit 2). */
function unreadable(error: unknown, agentId: string, scopes: string[]): unknown {
  const refusal = asFlagRefusal(error)
  if (refusal !== error) return refusal
  if (!(error instanceof JarvisError)) return error
  // A refused token: its message already names what holds it and what to set.
  if (isTokenError(error)) return new UnreachableError(`the shared memory cannot be read, so nothing is shown: ${error.message}`, {...error.data, scopes}, error)
  const fix =
    missingPart(error) === 'events'
      ? 'point --server / JARVIS_SERVER at a server with the event log, such as `jarvis serve`'
      : error.data.status === 403
      ? `agent ${agentId} may not read every scope asked for (${scopes.join(', ')}): another agent's agent:<id> scope is private; drop it from --scopes, or check that JARVIS_TOKEN is ${agentId}'s token`
      : error.data.status === 401
        ? `set JARVIS_TOKEN to ${agentId}'s token`
        : error instanceof UnreachableError && error.data.status === undefined && !/unexpected body/.test(error.message)
          ? 'check that the server is running and --server / JARVIS_SERVER points at it'
          : 'check the server and its logs'
  const message = `the shared memory cannot be read, so nothing is shown: ${error.message}\nto fix: ${fix}; \`jarvis memory snapshot --offline\` shows the last cached snapshot, marked as not current`
  return new UnreachableError(message, {...error.data, agent_id: agentId, scopes}, error)
}

/**
 * A cache, rebuilt by the next snapshot and checked when read: written atomically (old or new file, never a torn one)
 * but neither under the tree lock nor fsynced, which would cost an agent's every start four fsyncs. Two snapshots at
 * once leave the later one.
 */
async function cacheSnapshot(tree: TreeContext, entry: z.input<typeof snapshotCacheSchema>): Promise<void> {
  try {
    await writeNexusFile(tree.root, SNAPSHOT_CACHE_FILE, JSON.stringify(entry, null, 2) + '\n', {durable: false})
  } catch (error) {
    // A tree this user cannot write (a shared checkout, a read-only mount) is still read: the cache is only a cache.
    debug('the snapshot is not cached: %s', (error as Error).message)
  }
}

export type SnapshotCache = z.output<typeof snapshotCacheSchema>

/** The last snapshot cached in the tree at `root`; undefined when there is none. A malformed cache → SchemaError. */
export async function readSnapshotCache(root: string): Promise<SnapshotCache | undefined> {
  const text = await readNexusFile(root, SNAPSHOT_CACHE_FILE)
  return text === null ? undefined : parseJsonFile(snapshotCacheSchema, text, `.nexus/${SNAPSHOT_CACHE_FILE}`)
}

async function readCachedSnapshot(tree: TreeContext | undefined, agentId: string | undefined, options: SnapshotOptions, now: Date): Promise<SnapshotResult> {
  const file = `.nexus/${SNAPSHOT_CACHE_FILE}`
  if (!tree) throw new UnreachableError('no cached snapshot: --offline reads the cache of a jarvis tree, and there is none here (run inside a tree or pass --dir)')
  const cache = await readSnapshotCache(tree.root)
  if (cache === undefined) {
    throw new UnreachableError(`no cached snapshot in ${file}: nothing can be shown offline; run \`jarvis memory snapshot\` once the server answers`, {file})
  }
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
