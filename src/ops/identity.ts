import {readFileSync} from 'node:fs'
import {homedir} from 'node:os'
import {join} from 'node:path'

import {z} from 'zod'

import {BadInputError, SchemaError, UnreachableError} from '../errors.js'
import {parseJsonFile, type NexusConfig} from '../schemas/index.js'
import {isPlainRecord} from '../schemas/plain-fields.js'

/**
 * The user's own settings, outside any tree: `$XDG_CONFIG_HOME/jarvis/config.json` (mode 0600).
 * The only place besides JARVIS_TOKEN where a token may live (contract §1: no secret in either tree).
 */
export const userConfigSchema = () => (userConfig ??= buildUserConfigSchema())
let userConfig: ReturnType<typeof buildUserConfigSchema> | undefined
// Built on first use: zod is not touched when this module loads (every sync loads it; scripts/bundle.mjs).
const buildUserConfigSchema = () => z.looseObject({
  server: z.string().optional(),
  agentId: z.string().optional(),
  token: z.string().optional(),
  /**
   * A token per server URL, for people who talk to several servers; or, per server, a token per agent
   * (`{"http://…": {"claude": "…", "gemini": "…"}}`) when several agents of one machine share the memory,
   * each with its own private scope. `jarvis auth login --agent X --with-token` writes the second form.
   */
  tokens: z.record(z.string(), z.union([z.string(), z.record(z.string(), z.string())])).optional(),
})
export type UserConfig = z.output<ReturnType<typeof userConfigSchema>>

export function userConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config'), 'jarvis')
}

export function userConfigFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(userConfigDir(env), 'config.json')
}

/** The user config file as a person types it: `~/.config/jarvis/config.json` under their home. */
export function shownUserConfigFile(env: NodeJS.ProcessEnv = process.env): string {
  const file = userConfigFile(env)
  const home = env.HOME || homedir()
  return home && file.startsWith(`${home}/`) ? `~/${file.slice(home.length + 1)}` : file
}

export async function readUserConfig(env: NodeJS.ProcessEnv = process.env): Promise<UserConfig> {
  const file = userConfigFile(env)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw unreadableUserConfig(file, error)
  }
  // Most user configs (a server, an agent, tokens) pass a hand check: zod, and every schema, is then not loaded.
  try {
    const value: unknown = JSON.parse(text)
    if (isPlainUserConfig(value)) return value
  } catch {
    // parseJsonFile says where
  }
  return parseJsonFile(userConfigSchema(), text, file)
}

/**
 * A user config that is there but cannot be read stops the command (exit 2) naming it and what to do: ignored, its
 * tokens and server would silently be missing, and `auth login` would fail on it with the system's bare error.
 * An error this does not know stays the system's (exit 1).
 */
function unreadableUserConfig(file: string, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code
  const keeps = 'jarvis keeps your settings and agent tokens in that file'
  if (code === 'EISDIR') return new BadInputError(`${file} is a directory, not jarvis's user config file: remove or rename that directory (${keeps})`, {file}, error)
  if (code === 'ENOTDIR') return new BadInputError(`${file}: a folder on its path is a file: remove or rename that file (${keeps})`, {file}, error)
  if (code === 'EACCES') return new BadInputError(`${file}: this user may not read it (permission denied): give it back read access (chmod u+r)`, {file}, error)
  return error
}

/** True only for what userConfigSchema reads unchanged (property-tested); anything else is zod's to read and name. */
export function isPlainUserConfig(value: unknown): value is UserConfig {
  if (!isPlainRecord(value)) return false
  const {server, agentId, token, tokens} = value
  if (![server, agentId, token].every((field) => field === undefined || typeof field === 'string')) return false
  if (tokens === undefined) return true
  if (!isPlainRecord(tokens)) return false
  for (const key in tokens) {
    const entry = tokens[key]
    if (typeof entry === 'string') continue
    if (!isPlainRecord(entry)) return false
    for (const agent in entry) if (typeof entry[agent] !== 'string') return false
  }
  return true
}

/** Where a token came from, to name it in a message without ever showing it. */
export type TokenSource =
  /** The user config's token for this agent on this server: `tokens[server][agent]`. */
  | {kind: 'agent'; server: string; agent: string}
  /** The JARVIS_TOKEN variable. */
  | {kind: 'env'}
  /** The user config's one token for every agent of this server: `tokens[server]`. */
  | {kind: 'server'; server: string}
  /** The user config's `token`, for any server. */
  | {kind: 'user'}

export interface Identity {
  server?: string
  agentId?: string
  token?: string
  project?: string
  /** Where the token came from; undefined when there is none. */
  tokenFrom?: TokenSource
  /** The agent the user config stores this very token for on this server, when it does (it may be another agent). */
  tokenOwner?: string
}

/**
 * Config precedence in one place (STYLE habit 7): flag > environment > `.nexus/config.json` > user config, for the
 * server and the agent. A token never comes from a tree, and the most specific token wins: the user config's token
 * for this agent on this server (`tokens[server][agent]`), then JARVIS_TOKEN, then the user config's token for
 * this server, then its `token`. JARVIS_TOKEN holds one agent's token; with several agents on one machine, each
 * agent that has its own token stored reads and writes as itself whatever the shell exported.
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
  const picked = pickToken(user, server, agentId, env)
  const tokenOwner = picked && server ? ownerOf(user, server, picked.token) : undefined
  return {server, agentId, token: picked?.token, project: tree?.project, ...(picked ? {tokenFrom: picked.from} : {}), ...(tokenOwner ? {tokenOwner} : {})}
}

function pickToken(user: UserConfig | undefined, server: string | undefined, agentId: string | undefined, env: NodeJS.ProcessEnv): {token: string; from: TokenSource} | undefined {
  const entry = server ? user?.tokens?.[server] : undefined
  const own = typeof entry === 'object' && agentId ? entry[agentId] : undefined
  if (own && server && agentId) return {token: own, from: {kind: 'agent', server, agent: agentId}}
  if (env.JARVIS_TOKEN) return {token: env.JARVIS_TOKEN, from: {kind: 'env'}}
  if (typeof entry === 'string' && entry && server) return {token: entry, from: {kind: 'server', server}}
  if (user?.token) return {token: user.token, from: {kind: 'user'}}
  return undefined
}

/** The agent whose token this is, by the user config's per-agent tokens of this server. */
function ownerOf(user: UserConfig | undefined, server: string, token: string): string | undefined {
  const entry = user?.tokens?.[server]
  if (typeof entry !== 'object') return undefined
  return Object.entries(entry).find(([, value]) => value === token)?.[0]
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

// ---------------------------------------------------------------------------------------------------------------
// the one sentence that says which token to set

/** The command that stores an agent's own token (it reads the token on stdin). */
export function loginCommand(agentId: string): string {
  return `jarvis auth login --agent ${agentId} --with-token`
}

/** `JARVIS_TOKEN`, `the token stored for gemini in ~/.config/jarvis/config.json`, … */
export function describeTokenSource(from: TokenSource, env: NodeJS.ProcessEnv = process.env): string {
  const file = shownUserConfigFile(env)
  switch (from.kind) {
    case 'env':
      return 'JARVIS_TOKEN'
    case 'agent':
      return `the token stored for ${from.agent} in ${file} (tokens["${from.server}"]["${from.agent}"])`
    case 'server':
      return `the token of ${file} for every agent of ${from.server} (tokens["${from.server}"])`
    case 'user':
      return `the token of ${file} ("token")`
  }
}

/** What to do so that `agentId` reads and writes as itself: store its own token. */
export function storeOwnToken(agentId: string, env: NodeJS.ProcessEnv = process.env): string {
  return `store ${agentId}'s own with \`${loginCommand(agentId)}\` (token on stdin, kept in ${shownUserConfigFile(env)})`
}

/**
 * The sentence for a token that belongs to another agent than the one that runs: what holds it, whose it is, and
 * what to set. Known before any request when the user config stores the token under the other agent.
 */
export function foreignTokenMessage(identity: Identity, owner: string, env: NodeJS.ProcessEnv = process.env): string {
  const agentId = identity.agentId ?? 'this agent'
  const holder = identity.tokenFrom ? describeTokenSource(identity.tokenFrom, env) : 'the token'
  return `${agentId} runs with ${holder}, which holds ${owner}'s token: ${storeOwnToken(agentId, env)}`
}

/** A token the user config says is another agent's, found before any request is made; undefined when none is known. */
export function foreignTokenError(identity: Identity, env: NodeJS.ProcessEnv = process.env): UnreachableError | undefined {
  const owner = identity.tokenOwner
  if (!owner || !identity.agentId || owner === identity.agentId) return undefined
  return tokenError(foreignTokenMessage(identity, owner, env), identity, {token_owner: owner})
}

/** The agent a refusal says the token belongs to (jarvis's own server: "… names "gemini", but the token belongs to claude"). */
export function tokenOwnerNamedBy(serverMessage: string): string | undefined {
  return /but the token belongs to ([A-Za-z0-9_.:-]+)/.exec(serverMessage)?.[1]
}

/**
 * The server refused the token (401) or refused it for this agent (403 "… but the token belongs to Y", the words
 * of jarvis's own server): one sentence naming the variable or file that holds the token and what to set.
 * Undefined for any other refusal, which keeps the client's own message.
 */
export function explainTokenRefusal(identity: Identity, status: number, serverMessage: string, env: NodeJS.ProcessEnv = process.env): UnreachableError | undefined {
  const agentId = identity.agentId
  const server = identity.server ?? 'the server'
  if (status === 403) {
    const owner = tokenOwnerNamedBy(serverMessage)
    if (!owner || !agentId || owner === agentId) return undefined
    return tokenError(foreignTokenMessage(identity, owner, env), identity, {status, token_owner: owner})
  }
  if (status !== 401) return undefined
  const storeIt = agentId ? storeOwnToken(agentId, env) : `store your agent's own with \`${loginCommand('<agent>')}\``
  if (!identity.tokenFrom) return tokenError(`no token for ${agentId ?? 'this agent'} on ${server}: ${storeIt}, or set JARVIS_TOKEN`, identity, {status})
  const reason = serverMessage.replace(/[.\s]+$/, '')
  const holder = describeTokenSource(identity.tokenFrom, env)
  const fix = identity.tokenFrom.kind === 'env' ? `set JARVIS_TOKEN to ${agentId ? `${agentId}'s token` : 'the token of your agent'}, or ${storeIt}` : storeIt
  return tokenError(`the jarvis server at ${server} refused ${holder} (HTTP 401${reason ? `: ${reason}` : ''}): ${fix}`, identity, {status})
}

function tokenError(message: string, identity: Identity, data: Record<string, unknown>): UnreachableError {
  return new UnreachableError(message, {reason: 'token', server: identity.server, agent_id: identity.agentId, token_from: identity.tokenFrom?.kind ?? 'none', ...data})
}

/** Whether an error is one of the token sentences above (its message already says what to set). */
export function isTokenError(error: unknown): boolean {
  return error instanceof UnreachableError && error.data.reason === 'token'
}
