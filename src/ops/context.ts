import {NotATreeError, UnreachableError} from '../errors.js'
import {MemoryClient} from '../protocol/client.js'
import type {NexusConfig} from '../schemas/index.js'
import {findRoot, readConfig} from '../store/index.js'
import {explainTokenRefusal, foreignTokenError, readUserConfig, requireServer, resolveIdentity, type Identity} from './identity.js'

export interface TreeContext {
  root: string
  config: NexusConfig
}

/** The tree this command works on: `--dir`, else the nearest parent holding `.memory/`. */
export async function openTree(dir: string | undefined): Promise<TreeContext> {
  const root = findRoot(process.cwd(), dir)
  return {root, config: await readConfig(root)}
}

/** The tree, when there is one: commands that talk only to the server also work outside a tree. */
export async function openTreeIfAny(dir: string | undefined): Promise<TreeContext | undefined> {
  try {
    return await openTree(dir)
  } catch (error) {
    if (error instanceof NotATreeError && dir === undefined) return undefined
    throw error
  }
}

export interface Connection {
  client: MemoryClient
  identity: Identity & {server: string}
}

/**
 * A client for the server this tree syncs with, identity resolved flag > env > tree > user config. A refused token
 * is answered with the variable or file that holds it and what to set (identity.ts). `signal`: the client's (protocol/client.ts).
 */
export async function connect(tree: TreeContext | undefined, flags: {server?: string; agent?: string; signal?: AbortSignal}): Promise<Connection> {
  const identity = resolveIdentity({flags, env: process.env, tree: tree?.config, user: await readUserConfig()})
  const server = requireServer(identity)
  const explainRefusal = (status: 401 | 403, message: string) => explainTokenRefusal(identity, status, message)
  return {client: new MemoryClient({server, token: identity.token, agentId: identity.agentId, timeoutMs: tree?.config.sync.requestTimeout, explainRefusal, signal: flags.signal}), identity: {...identity, server}}
}

/**
 * A client that reads and writes as the agent named: before any request, a token the user config says is another
 * agent's is refused with the one sentence saying what to set (a server that does not check would file the
 * agent's writes under the other agent).
 */
export async function connectAs(tree: TreeContext | undefined, flags: {server?: string; agent: string}): Promise<Connection> {
  const connection = await connect(tree, flags)
  const foreign = foreignTokenError(connection.identity)
  if (foreign) {
    await connection.client.close()
    throw foreign
  }
  return connection
}

/**
 * Refuses to queue a write for a server that is not the one `jarvis sync` sends this tree's outbox to (a command
 * pointed elsewhere with --server): the next sync would deliver it to the tree's own server. Nothing is queued then,
 * and the message says to run the command again. A tree with no server of its own queues as before: its sync is
 * told the server each time.
 */
export async function assertOutboxServer(tree: TreeContext, server: string, cause: UnreachableError): Promise<void> {
  const own = resolveIdentity({flags: {}, env: process.env, tree: tree.config, user: await readUserConfig()}).server
  if (own === undefined || own === server) return
  throw new UnreachableError(
    `${cause.message}\nnothing was queued: this tree's outbox goes to ${own} at the next \`jarvis sync\`, not to ${server}; run the same command again when ${server} answers`,
    {...cause.data, queued: false},
    cause,
  )
}
