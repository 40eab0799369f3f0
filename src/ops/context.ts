import {NotATreeError} from '../errors.js'
import {MemoryClient} from '../protocol/client.js'
import type {NexusConfig} from '../schemas/index.js'
import {findRoot, readConfig} from '../store/index.js'
import {readUserConfig, requireServer, resolveIdentity, type Identity} from './identity.js'

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

/** A client for the server this tree syncs with, identity resolved flag > env > tree > user config. */
export async function connect(tree: TreeContext | undefined, flags: {server?: string; agent?: string}, onBytes?: (sent: number, received: number) => void): Promise<Connection> {
  const identity = resolveIdentity({flags, env: process.env, tree: tree?.config, user: await readUserConfig()})
  const server = requireServer(identity)
  return {client: new MemoryClient({server, token: identity.token, onBytes, timeoutMs: tree?.config.sync.requestTimeout}), identity: {...identity, server}}
}
