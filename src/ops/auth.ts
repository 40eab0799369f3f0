/**
 * `jarvis auth login|logout|status`: an agent's own token for a server, kept in the user config
 * (`$XDG_CONFIG_HOME/jarvis/config.json`, mode 0600, under `tokens["<server>"]["<agent>"]`) so that several agents on
 * one machine each read and write as themselves, whatever JARVIS_TOKEN holds. Never in a tree; the token is never
 * printed.
 */
import {mkdir} from 'node:fs/promises'
import {sep} from 'node:path'

import {BadInputError, JarvisError, UnreachableError} from '../errors.js'
import {EventsClient} from '../protocol/events.js'
import {agentIdSchema} from '../schemas/index.js'
import {MEMORY_DIR, NEXUS_DIR, writeFileAtomic} from '../store/index.js'
import {openTreeIfAny} from './context.js'
import {checkAgent} from './events/common.js'
import {
  describeTokenSource,
  type Identity,
  readUserConfig,
  requireServer,
  resolveIdentity,
  type TokenSource,
  tokenOwnerNamedBy,
  type UserConfig,
  userConfigDir,
  userConfigFile,
} from './identity.js'

/** How long `auth login` waits for the server to say whose token it is. */
const VERIFY_TIMEOUT_MS = 10_000

export interface AuthOptions {
  dir?: string
  server?: string
  /** The agent (`codex` is accepted for `chatgpt`); default JARVIS_AGENT, then the tree's. */
  agent?: string
  env?: NodeJS.ProcessEnv
}

export interface AuthLoginOptions extends AuthOptions {
  /** What came on stdin: the token, maybe with a line break. */
  tokenText: string
  /** Ask the server whether the token is this agent's before storing it (default true). */
  verify?: boolean
}

export interface AuthLoginResult {
  server: string
  agent: string
  /** The user config file the token went into. */
  file: string
  /** Whether the agent had another token stored for this server, now replaced. */
  replaced: boolean
  /** Whether the server confirmed the token is this agent's (false with --no-verify). */
  verified: boolean
}

export interface AuthLogoutResult {
  server: string
  agent: string
  file: string
  /** False when there was no token stored for this agent and server. */
  removed: boolean
}

interface Target {
  env: NodeJS.ProcessEnv
  user: UserConfig
  server: string
  agent: string
}

async function targetOf(options: AuthOptions, why: string): Promise<Target> {
  const env = options.env ?? process.env
  const tree = await openTreeIfAny(options.dir)
  const user = await readUserConfig(env)
  const named = options.agent?.trim().toLowerCase() === 'codex' ? 'chatgpt' : options.agent
  const identity = resolveIdentity({flags: {server: options.server, agent: named}, env, tree: tree?.config, user})
  return {env, user, server: requireServer(identity), agent: checkAgent(identity.agentId, why)}
}

/** `jarvis auth login --with-token`: the agent's own token for the server, checked with the server, stored. */
export async function loginAgent(options: AuthLoginOptions): Promise<AuthLoginResult> {
  const target = await targetOf(options, 'to store a token for')
  const token = tokenOf(options.tokenText)
  if (options.verify !== false) await verifyToken(target, token)
  const file = userConfigFile(target.env)
  const entry = target.user.tokens?.[target.server]
  if (typeof entry === 'string') {
    throw new BadInputError(
      `${file}: tokens["${target.server}"] is one token for every agent of that server, so it cannot also hold ${target.agent}'s; write it per agent ({"claude": "…", "gemini": "…"}) or remove it with \`jarvis auth logout --server ${target.server} --all\`, then log in each agent; nothing was changed`,
      {file, field: `tokens.${target.server}`},
    )
  }
  const replaced = entry?.[target.agent] !== undefined && entry[target.agent] !== token
  const next: UserConfig = {...target.user, tokens: {...target.user.tokens, [target.server]: {...entry, [target.agent]: token}}}
  await writeUserConfig(target.env, next)
  return {server: target.server, agent: target.agent, file, replaced, verified: options.verify !== false}
}

/**
 * `jarvis auth logout`: forgets the agent's token for the server. With `all` (no agent named) it removes the
 * server's whole entry, a per-server token included.
 */
export async function logoutAgent(options: AuthOptions & {all?: boolean}): Promise<AuthLogoutResult> {
  const env = options.env ?? process.env
  const file = userConfigFile(env)
  if (options.all) {
    const tree = await openTreeIfAny(options.dir)
    const user = await readUserConfig(env)
    const server = requireServer(resolveIdentity({flags: {server: options.server}, env, tree: tree?.config, user}))
    const removed = user.tokens?.[server] !== undefined
    if (removed) await writeUserConfig(env, withoutServer(user, server))
    return {server, agent: '*', file, removed}
  }
  const target = await targetOf(options, 'to forget the token of')
  const entry = target.user.tokens?.[target.server]
  const removed = typeof entry === 'object' && entry[target.agent] !== undefined
  if (removed) {
    const {[target.agent]: _gone, ...rest} = entry
    await writeUserConfig(env, Object.keys(rest).length === 0 ? withoutServer(target.user, target.server) : {...target.user, tokens: {...target.user.tokens, [target.server]: rest}})
  }
  return {server: target.server, agent: target.agent, file, removed}
}

function withoutServer(user: UserConfig, server: string): UserConfig {
  const {[server]: _gone, ...tokens} = user.tokens ?? {}
  const {tokens: _all, ...rest} = user
  return Object.keys(tokens).length === 0 ? rest : {...rest, tokens}
}

export interface AgentToken {
  agent: string
  /** Where the token this agent would use comes from; `none` when it has none. */
  source: TokenSource['kind'] | 'none'
  /** The same in words: `JARVIS_TOKEN`, `the token stored for gemini in ~/.config/jarvis/config.json (…)`. */
  from?: string
  /** The agent the user config stores this token for, when that is another agent. */
  owner?: string
}

export interface AuthStatusResult {
  server?: string
  file: string
  /** Per agent id, the token it would use (never the token itself). */
  agents: AgentToken[]
}

/** `jarvis auth status`: which token each agent would use with the server, and where it comes from. */
export async function authStatus(options: AuthOptions): Promise<AuthStatusResult> {
  const env = options.env ?? process.env
  const tree = await openTreeIfAny(options.dir)
  const user = await readUserConfig(env)
  const server = resolveIdentity({flags: {server: options.server}, env, tree: tree?.config, user}).server
  const agents = agentIdSchema.options.map((agent) => agentToken(resolveIdentity({flags: {server, agent}, env, tree: tree?.config, user}), env))
  return {server, file: userConfigFile(env), agents}
}

/** The token an agent would use, described (never shown). */
export function agentToken(identity: Identity, env: NodeJS.ProcessEnv = process.env): AgentToken {
  const agent = identity.agentId ?? ''
  if (!identity.tokenFrom) return {agent, source: 'none'}
  const owner = identity.tokenOwner && identity.tokenOwner !== agent ? identity.tokenOwner : undefined
  return {agent, source: identity.tokenFrom.kind, from: describeTokenSource(identity.tokenFrom, env), ...(owner ? {owner} : {})}
}

/** One token, as it came on stdin: surrounding white space is dropped; inside, only printable ASCII. */
function tokenOf(text: string): string {
  const token = text.trim()
  if (token === '') throw new BadInputError('no token on stdin: pipe it in, e.g. `jarvis auth login --agent gemini --with-token < gemini.token`', {field: 'stdin'})
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new BadInputError('the text on stdin is not one token: it holds spaces, line breaks or characters an HTTP header cannot carry; give exactly one token', {field: 'stdin'})
  }
  if (token.length > 4096) throw new BadInputError(`the text on stdin is not one token: ${token.length} characters (at most 4096)`, {field: 'stdin'})
  return token
}

/**
 * Asks the server for the agent's own snapshot with the token: it answers only when the token is that agent's.
 * A token of another agent (403 naming it) or one the server does not know (401) is refused before it is stored.
 */
async function verifyToken(target: Target, token: string): Promise<void> {
  const client = new EventsClient({server: target.server, token, timeoutMs: VERIFY_TIMEOUT_MS})
  const nothing = 'nothing was stored'
  try {
    await client.snapshot({agentId: target.agent, scopes: [`agent:${target.agent}`], limitRecent: 1})
  } catch (error) {
    if (!(error instanceof JarvisError)) throw error
    const status = error.data.status
    const owner = tokenOwnerNamedBy(error.message)
    if (status === 403 && owner) throw new BadInputError(`the server at ${target.server} says this token is ${owner}'s, not ${target.agent}'s: ${nothing}; give ${target.agent}'s own token`, {status, token_owner: owner})
    if (status === 401) throw new BadInputError(`the server at ${target.server} does not know this token: ${nothing}; check that it is ${target.agent}'s token for this server`, {status})
    const fix = '`--no-verify` stores it without asking the server'
    throw new UnreachableError(`could not check the token with the server at ${target.server} (${error.message.split('\n')[0]}): ${nothing}; ${fix}`, {...error.data, server: target.server}, error)
  } finally {
    await client.close()
  }
}

/**
 * The user config, written whole and atomically (a complete old or new file), mode 0600 in a 0700 directory. A
 * config directory inside a jarvis tree is refused: no token is ever written into one.
 */
async function writeUserConfig(env: NodeJS.ProcessEnv, config: UserConfig): Promise<void> {
  const dir = userConfigDir(env)
  const file = userConfigFile(env)
  if (dir.split(sep).some((part) => part === MEMORY_DIR || part === NEXUS_DIR)) {
    throw new BadInputError(`${file} is inside a jarvis tree (${MEMORY_DIR}/ or ${NEXUS_DIR}/), where no token may be written: point XDG_CONFIG_HOME elsewhere; nothing was stored`, {file})
  }
  await mkdir(dir, {recursive: true, mode: 0o700})
  await writeFileAtomic(file, JSON.stringify(config, null, 2) + '\n', {mode: 0o600})
}
