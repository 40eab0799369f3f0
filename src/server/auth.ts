/**
 * Bearer-token identity. A token is one of the tokens file's (an agent, role `write`), an API key's (made by
 * `jarvis serve token create`: an agent, a role, maybe an expiry or a revocation), or an app's OAuth access token
 * (oauth/: the agent, workspace and role a person granted it, for one resource). Lookup hashes the presented
 * token: the tokens file's are compared with every known hash in constant time, so neither the comparison nor an
 * early exit leaks how much of a token was right; a key or an access token is found by the sha256 of its token,
 * which says nothing of any other token, and read at every request, so a revoked key or grant is refused by every
 * process at once.
 */
import {createHash, timingSafeEqual} from 'node:crypto'

import type {TokenMap} from './config.js'
import {HttpError} from './http-error.js'
import {keyRefusal} from './keys.js'
import {isAccessToken} from './oauth/secrets.js'
import type {OAuthStorage} from './storage/oauth-types.js'
import type {KeyRole, KeyStorage} from './storage/types.js'
import {DEFAULT_WORKSPACE} from './storage/workspace-name.js'

/** An app's OAuth access: the grant a person consented to, and the app's name. */
export interface AppGrant {
  grantId: string
  clientName: string
}

export interface Identity {
  /** The memory the token opens: the key's workspace, or the default one for a tokens-file token. */
  workspace: string
  agentId: string
  role: KeyRole
  /** Set for an app's OAuth access token. */
  app?: AppGrant
}

/**
 * The 403 of a write by a `read` identity, with what its holder can do about it: a key's holder asks for a write
 * key; an app was allowed to read only by a person, who connects it again and allows read and write this time.
 */
export function readOnlyRefusal(what: string, app: AppGrant | undefined): HttpError {
  if (app === undefined) return new HttpError(403, 'forbidden', `this key can only read (role read): ${what} changes the memory; ask for a write key`)
  return new HttpError(
    403,
    'forbidden',
    `${app.clientName} was allowed only to read this memory (grant ${app.grantId}): ${what} changes it. To let it write, connect the app again (in its settings, disconnect and connect the jarvis connector) and choose "read and write" on the consent page`,
    {grant: app.grantId},
  )
}

export type Authentication = {identity: Identity} | {refused: string}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest()
}

export class TokenAuthenticator {
  private readonly entries: ReadonlyArray<{digest: Buffer; agentId: string}>

  constructor(
    tokens: TokenMap,
    private readonly keys?: Pick<KeyStorage, 'keyByTokenHash'> & {readonly oauth?: Pick<OAuthStorage, 'token'>},
    private readonly now: () => Date = () => new Date(),
  ) {
    this.entries = Object.entries(tokens).map(([token, agentId]) => ({digest: digest(token), agentId}))
  }

  /**
   * Who holds `token`, or why it is refused. Always compares against every tokens-file entry. `resource` is what the
   * request reaches (oauth/site.ts), which an app's access token must have been given for; without one (no public
   * HTTPS address) no access token is taken.
   */
  async authenticate(token: string | undefined | null, resource?: string): Promise<Authentication> {
    if (typeof token !== 'string' || token.length === 0) return {refused: 'missing Authorization: Bearer <token> header'}
    const presented = digest(token)
    let found: string | null = null
    for (const entry of this.entries) {
      if (timingSafeEqual(presented, entry.digest) && found === null) found = entry.agentId
    }
    if (found !== null) return {identity: {workspace: DEFAULT_WORKSPACE, agentId: found, role: 'write'}}
    // A tokens-file token may be any string; only what is not one of them is looked up by its prefix.
    if (isAccessToken(token)) return this.appToken(presented.toString('hex'), resource)
    const key = await this.keys?.keyByTokenHash(presented.toString('hex'))
    if (!key) return {refused: 'the token is not known to this server'}
    const refusal = keyRefusal(key, this.now())
    return refusal === null ? {identity: {workspace: key.workspace, agentId: key.agentId, role: key.role}} : {refused: refusal}
  }

  private async appToken(hash: string, resource: string | undefined): Promise<Authentication> {
    const found = await this.keys?.oauth?.token(hash)
    if (!found || found.token.kind !== 'access') return {refused: 'the token is not known to this server'}
    const {token, grant} = found
    if (grant.revokedAt !== null) return {refused: `the access of ${grant.clientName} (${grant.id}) was revoked at ${grant.revokedAt}`}
    if (Date.parse(token.expiresAt) <= this.now().getTime()) return {refused: `the access token expired at ${token.expiresAt}: the app refreshes it`}
    if (resource === undefined || grant.resource !== resource) return {refused: `the access token was given for ${grant.resource}, not for ${resource ?? 'this server'}`}
    return {identity: {workspace: grant.workspace, agentId: grant.agentId, role: grant.role, app: {grantId: grant.id, clientName: grant.clientName}}}
  }

  /** The agent ids that hold at least one tokens-file token. */
  agents(): string[] {
    return [...new Set(this.entries.map((entry) => entry.agentId))].sort()
  }
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), or null. */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null
  const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header)
  return match ? match[1] : null
}
