import {readFile} from 'node:fs/promises'
import {homedir} from 'node:os'
import {join} from 'node:path'

import {z} from 'zod'

import {BadInputError, SchemaError} from '../errors.js'
import {parseJsonFile, type NexusConfig} from '../schemas/index.js'

/**
 * The user's own settings, outside any tree: `$XDG_CONFIG_HOME/jarvis/config.json` (mode 0600).
 * The only place besides JARVIS_TOKEN where a token may live (contract §1: no secret in either tree).
 */
export const userConfigSchema = z.looseObject({
  server: z.string().optional(),
  agentId: z.string().optional(),
  token: z.string().optional(),
  /**
   * A token per server URL, for people who talk to several servers; or, per server, a token per agent
   * (`{"http://…": {"claude": "…", "gemini": "…"}}`) when several agents of one machine share the memory,
   * each with its own private scope.
   */
  tokens: z.record(z.string(), z.union([z.string(), z.record(z.string(), z.string())])).optional(),
})
export type UserConfig = z.output<typeof userConfigSchema>

export function userConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'jarvis')
}

export async function readUserConfig(env: NodeJS.ProcessEnv = process.env): Promise<UserConfig> {
  const file = join(userConfigDir(env), 'config.json')
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch {
    return {}
  }
  return parseJsonFile(userConfigSchema, text, file)
}

export interface Identity {
  server?: string
  agentId?: string
  token?: string
  project?: string
}

/**
 * Config precedence in one place (STYLE habit 7): flag > environment > `.nexus/config.json` >
 * user config. A token never comes from a tree.
 */
export function resolveIdentity(sources: {
  flags: {server?: string; agent?: string}
  env: NodeJS.ProcessEnv
  tree?: Pick<NexusConfig, 'server' | 'agentId' | 'project'>
  user?: UserConfig
}): Identity {
  const {flags, env, tree, user} = sources
  // An empty variable (`JARVIS_SERVER= jarvis sync`) means unset, as in git and the shells.
  const server = trimSlash(flags.server || env.JARVIS_SERVER || tree?.server || user?.server)
  const agentId = flags.agent || env.JARVIS_AGENT || tree?.agentId || user?.agentId
  const token = env.JARVIS_TOKEN || tokenFor(user, server, agentId) || user?.token
  return {server, agentId, token, project: tree?.project}
}

/** The user config's token for this server: its own, or this agent's when the server has one per agent. */
function tokenFor(user: UserConfig | undefined, server: string | undefined, agentId: string | undefined): string | undefined {
  const entry = server ? user?.tokens?.[server] : undefined
  if (typeof entry === 'string') return entry
  return entry && agentId ? entry[agentId] : undefined
}

function trimSlash(url: string | undefined): string | undefined {
  return url?.replace(/\/+$/, '')
}

export function requireServer(identity: Identity): string {
  if (!identity.server) {
    throw new BadInputError('no server to talk to: pass --server URL, set JARVIS_SERVER, or run `jarvis init --server URL`')
  }
  try {
    const url = new URL(identity.server)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http')
  } catch {
    throw new SchemaError('--server', [`${JSON.stringify(identity.server)} is not an http(s) URL`])
  }
  return identity.server
}
