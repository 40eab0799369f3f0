/**
 * Which wired agent has no token of its own (`agents install`, `agents status`, `jarvis status`). An agent's hooks
 * and MCP server read and write as that agent, so each needs its own token: one stored for it in the user config
 * (`jarvis auth login --agent X --with-token`), or the one token at hand (JARVIS_TOKEN, …) when no other wired agent
 * uses it too. Read from the user config and the environment only: no server is asked.
 */
import {agentIdOf, type HookAgent} from '../hook/events.js'
import {describeTokenSource, foreignTokenMessage, type Identity, readUserConfig, resolveIdentity, storeOwnToken, type TokenSource} from '../ops/identity.js'
import type {NexusConfig} from '../schemas/index.js'
import {AGENT_LABELS} from './wiring.js'

export interface AgentTokenState {
  /**
   * True when the agent has a token of its own: one stored for it in the user config, or the one token at hand
   * (JARVIS_TOKEN, the config's token for the server, its `token`) when no other wired agent would use it too and
   * the config does not say it is another agent's.
   */
  own: boolean
  /** Where its token comes from: `agent` (stored for it), `env` (JARVIS_TOKEN), `server`, `user`, or `none`. */
  source: TokenSource['kind'] | 'none'
  /** The same in words, e.g. `JARVIS_TOKEN`. */
  from?: string
  /** The agent the user config stores this token for, when it is another one. */
  owner?: string
  /** The other wired agents (their ids) that would use the very same token. */
  sharedWith?: string[]
  /** When it has none of its own: the one sentence saying what to set. */
  fix?: string
}

/** The token state of each wired agent, for the server the tree (or JARVIS_SERVER, the user config) names. */
export async function tokenStates(wired: HookAgent[], sources: {env: NodeJS.ProcessEnv; tree?: Pick<NexusConfig, 'server' | 'agentId' | 'project'>}): Promise<Map<HookAgent, AgentTokenState>> {
  const user = await readUserConfig(sources.env)
  const identities = new Map(wired.map((agent) => [agent, resolveIdentity({flags: {agent: agentIdOf(agent)}, env: sources.env, tree: sources.tree, user})]))
  return new Map(wired.map((agent) => [agent, stateOf(agent, identities, sources.env)]))
}

function stateOf(agent: HookAgent, identities: Map<HookAgent, Identity>, env: NodeJS.ProcessEnv): AgentTokenState {
  const identity = identities.get(agent)!
  const id = agentIdOf(agent)
  const where = identity.server ? ` for ${identity.server}` : ''
  const store = storeOwnToken(id, env)
  if (!identity.tokenFrom || !identity.token) return {own: false, source: 'none', fix: `${id} has no token${where}: ${store}, or set JARVIS_TOKEN`}
  const base = {source: identity.tokenFrom.kind, from: describeTokenSource(identity.tokenFrom, env)}
  if (identity.tokenFrom.kind === 'agent') return {own: true, ...base}
  if (identity.tokenOwner && identity.tokenOwner !== id) return {own: false, ...base, owner: identity.tokenOwner, fix: foreignTokenMessage(identity, identity.tokenOwner, env)}
  const sharing = [...identities].filter(([other, o]) => other !== agent && o.token === identity.token).map(([other]) => other)
  if (sharing.length === 0) return {own: true, ...base}
  const others = sharing.map((other) => AGENT_LABELS[other]).join(' and ')
  return {
    own: false,
    ...base,
    sharedWith: sharing.map((other) => agentIdOf(other)),
    fix: `${id} has no token of its own${where}: it shares ${base.from} with ${others}, and a token is one agent's; ${store}`,
  }
}
