/**
 * A person's consent to an app's request, as the dashboard's consent page asks for it. The person is signed in
 * with a jarvis key (never with an app's token) and grants what that key may give, nothing more:
 *
 * - the key's own workspace;
 * - an agent identity: the key's own agent, or any agent with an `admin` key. What the app then does is that
 *   agent's, its private `agent:<id>` scope included — so only a key that may already act as that agent grants it.
 *   It is one of the event log's agents: an app's tools append events, and an agent the log does not know (a typo,
 *   `chatgtp`) would sign in and then have every append refused — so it is refused here, where the person can fix it;
 * - a role, read or write, no more than the key's own (a read key grants read).
 */
import {HttpError} from '../http-error.js'
import {agentIdSchema as eventLogAgentSchema} from '../../schemas/common.js'
import {agentIdSchema} from '../config.js'
import type {KeyRole} from '../storage/types.js'
import {GRANT_ROLES, type GrantRole, type OAuthAuthorization, type OAuthGrant, type OAuthStorage} from '../storage/oauth-types.js'
import type {ConsentDecision, ConsentOutcome, ConsentView} from './consent-wire.js'
import {newId, newSecret} from './secrets.js'
import {OAUTH_LIFETIMES, type OAuthSite} from './site.js'

export type {ConsentDecision, ConsentOutcome, ConsentView} from './consent-wire.js'

/** Who is consenting: the identity of the key the dashboard is signed in with. */
export interface Consenter {
  agentId: string
  role: KeyRole
  workspace: string
}

/** The agent an app usually is, from its name. */
export function suggestedAgent(clientName: string, fallback: string): string {
  if (/chatgpt|openai/i.test(clientName)) return 'chatgpt'
  if (/claude|anthropic/i.test(clientName)) return 'claude'
  return fallback
}

function rolesFor(role: KeyRole): GrantRole[] {
  return role === 'read' ? ['read'] : [...GRANT_ROLES]
}

function hostOf(uri: string): string {
  try {
    const url = new URL(uri)
    return url.host === '' ? url.protocol.replace(/:$/, '') : url.host
  } catch {
    return uri
  }
}

export class ConsentService {
  constructor(
    private readonly storage: OAuthStorage,
    private readonly site: OAuthSite,
    private readonly now: () => Date,
  ) {}

  /** The request waiting for consent; 404 when unknown, 410 when decided or expired. */
  private async waiting(id: string): Promise<OAuthAuthorization> {
    const authorization = /^authz_[0-9a-f]{32}$/.test(id) ? await this.storage.authorization(id) : null
    if (authorization === null) throw new HttpError(404, 'not_found', 'no app is asking for access with this link: start again from the app')
    if (authorization.decidedAt !== null) throw new HttpError(410, 'not_found', `this request was answered at ${authorization.decidedAt}: start again from the app`)
    if (Date.parse(authorization.expiresAt) <= this.now().getTime()) throw new HttpError(410, 'not_found', `this request expired at ${authorization.expiresAt}: start again from the app`)
    return authorization
  }

  async view(id: string, who: Consenter): Promise<ConsentView> {
    const authorization = await this.waiting(id)
    return {
      id,
      client: {id: authorization.clientId, name: authorization.clientName, redirectUri: authorization.redirectUri, redirectHost: hostOf(authorization.redirectUri)},
      resource: authorization.resource,
      resourceKind: authorization.resource === this.site.mcpResource ? 'mcp' : 'api',
      expiresAt: authorization.expiresAt,
      workspace: who.workspace,
      suggestedAgent: suggestedAgent(authorization.clientName, who.agentId),
      agents: who.role === 'admin' ? {any: true} : {only: who.agentId},
      roles: rolesFor(who.role),
    }
  }

  /** Allows (a grant and a code) or denies the request, once; where the browser goes then. */
  async decide(id: string, who: Consenter, decision: ConsentDecision): Promise<ConsentOutcome> {
    const authorization = await this.waiting(id)
    const now = this.now()
    const back = new URL(authorization.redirectUri)
    if (authorization.state !== null) back.searchParams.set('state', authorization.state)
    back.searchParams.set('iss', this.site.issuer)
    if (!decision.allow) {
      if (!(await this.storage.decideAuthorization(id, {allow: false}, now.toISOString()))) throw new HttpError(410, 'not_found', 'this request was answered already: start again from the app')
      back.searchParams.set('error', 'access_denied')
      back.searchParams.set('error_description', 'the person did not allow it')
      return {redirect: back.href, grant: null}
    }
    const grant = this.grantOf(authorization, who, decision, now)
    const code = newSecret('code')
    const decided = await this.storage.decideAuthorization(id, {allow: true, grant, codeHash: code.hash, codeExpiresAt: new Date(now.getTime() + OAUTH_LIFETIMES.codeMs).toISOString()}, now.toISOString())
    if (!decided) throw new HttpError(410, 'not_found', 'this request was answered already: start again from the app')
    back.searchParams.set('code', code.secret)
    return {redirect: back.href, grant}
  }

  private grantOf(authorization: OAuthAuthorization, who: Consenter, decision: ConsentDecision, now: Date): OAuthGrant {
    const agent = decision.agent ?? who.agentId
    const parsed = agentIdSchema.safeParse(agent)
    if (!parsed.success) throw new HttpError(400, 'bad_request', `agent: ${JSON.stringify(agent)} ${parsed.error.issues[0]?.message ?? 'is not an agent id'}`, {field: 'agent'})
    if (!eventLogAgentSchema.safeParse(agent).success) {
      const agents = eventLogAgentSchema.options
      throw new HttpError(
        400,
        'bad_request',
        `agent: ${agent} is not one of the agents that write the shared event log (${agents.join(', ')}): an app allowed as ${agent} could sign in, but every memory it saves would be refused; choose one of them`,
        {field: 'agent', agents},
      )
    }
    if (agent !== who.agentId && who.role !== 'admin') {
      throw new HttpError(403, 'forbidden', `you are signed in as ${who.agentId}: only ${agent}'s own token or an admin key can let an app act as ${agent}`, {field: 'agent'})
    }
    const role = (decision.role ?? 'read') as GrantRole
    if (!GRANT_ROLES.includes(role)) throw new HttpError(400, 'bad_request', `role: ${JSON.stringify(decision.role)} is not a role: read or write`, {field: 'role'})
    if (!rolesFor(who.role).includes(role)) throw new HttpError(403, 'forbidden', 'your key can only read (role read): it can let an app read, not write', {field: 'role'})
    return {
      id: newId('grant'),
      clientId: authorization.clientId,
      clientName: authorization.clientName,
      workspace: who.workspace,
      agentId: parsed.data,
      role,
      resource: authorization.resource,
      createdAt: now.toISOString(),
      revokedAt: null,
    }
  }
}
