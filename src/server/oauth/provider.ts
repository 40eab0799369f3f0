/**
 * jarvis as an OAuth 2.1 authorization server, the part the MCP SDK's handlers leave to the server (its
 * `OAuthServerProvider`): the SDK's handlers check the requests (client, redirect URI, PKCE S256 only, the code
 * verifier against the challenge); this keeps what they decided, in the storage every process shares:
 *
 * - an authorization request waits for a person's consent on the dashboard (consent.ts), which makes the grant
 *   (one agent, one workspace, one role, one resource) and the code;
 * - a code is exchanged once: a second exchange revokes every token the first one gave (OAuth 2.1);
 * - a refresh token is used once: each exchange hands out a new one, and presenting a used one revokes the grant
 *   (a stolen token and its owner cannot both go on);
 * - tokens are bound to the grant's resource (RFC 8707): the token request may name it again, never another.
 */
import type {Response} from 'express'
import {InvalidGrantError, InvalidRequestError, InvalidTargetError} from '@modelcontextprotocol/sdk/server/auth/errors.js'
import type {AuthorizationParams, OAuthServerProvider} from '@modelcontextprotocol/sdk/server/auth/provider.js'
import type {AuthInfo} from '@modelcontextprotocol/sdk/server/auth/types.js'
import type {OAuthClientInformationFull, OAuthTokenRevocationRequest, OAuthTokens} from '@modelcontextprotocol/sdk/shared/auth.js'

import {NUL_REFUSAL, nulPath} from '../../schemas/index.js'
import type {OAuthGrant, OAuthStorage} from '../storage/oauth-types.js'
import {clientName, JarvisClientsStore, type ClientDocumentFetch} from './clients.js'
import {newId, newSecret, secretHash} from './secrets.js'
import {OAUTH_LIFETIMES, type OAuthSite} from './site.js'

/** Where the dashboard's consent page for an authorization request is (same origin as /authorize). */
export function consentPath(authorizationId: string): string {
  return `/#/consent/${authorizationId}`
}

export interface ProviderOptions {
  site: OAuthSite
  now: () => Date
  fetchDocument?: ClientDocumentFetch
}

export class JarvisOAuthProvider implements OAuthServerProvider {
  readonly clientsStore: JarvisClientsStore

  constructor(
    private readonly storage: OAuthStorage,
    private readonly options: ProviderOptions,
  ) {
    this.clientsStore = new JarvisClientsStore(storage, {now: options.now, fetchDocument: options.fetchDocument})
  }

  /** The resource a request names, checked: one of this server's two, `/mcp` when it names none. */
  private resourceOf(resource: URL | undefined): string {
    const {site} = this.options
    if (resource === undefined) return site.mcpResource
    // A URL object adds `/` to a bare origin: the API's resource is the origin itself.
    const named = resource.href === `${site.apiResource}/` ? site.apiResource : resource.href
    if (named !== site.mcpResource && named !== site.apiResource) {
      throw new InvalidTargetError(`this server gives tokens for ${site.mcpResource} (the MCP tools) or ${site.apiResource} (the REST API), not for ${resource.href}`)
    }
    return named
  }

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response): Promise<void> {
    // Kept as sent, so refused with a NUL (schemas/common.ts); the SDK sends the app back with invalid_request.
    const nul = nulPath({state: params.state, scope: params.scopes?.join(' '), code_challenge: params.codeChallenge})
    if (nul !== null) throw new InvalidRequestError(`${nul} ${NUL_REFUSAL}`)
    const now = this.options.now()
    const id = newId('authz')
    await this.storage.addAuthorization({
      id,
      clientId: client.client_id,
      clientName: clientName(client),
      redirectUri: params.redirectUri,
      codeChallenge: params.codeChallenge,
      resource: this.resourceOf(params.resource),
      scope: params.scopes && params.scopes.length > 0 ? params.scopes.join(' ') : null,
      state: params.state ?? null,
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + OAUTH_LIFETIMES.authorizationMs).toISOString(),
      decidedAt: null,
      grantId: null,
      codeExpiresAt: null,
      codeUsedAt: null,
    })
    // Now and then, what no request can use any more goes (a day late: a reused code still finds its grant to revoke).
    if (Math.random() < 0.05) await this.storage.purgeExpired(new Date(now.getTime() - 86_400_000).toISOString())
    res.redirect(302, consentPath(id))
  }

  private async codeOf(client: OAuthClientInformationFull, code: string) {
    const authorization = await this.storage.authorizationByCode(secretHash(code))
    if (authorization === null || authorization.clientId !== client.client_id || authorization.grantId === null) {
      throw new InvalidGrantError('the authorization code is not known to this server (or was given to another app)')
    }
    return authorization
  }

  async challengeForAuthorizationCode(client: OAuthClientInformationFull, authorizationCode: string): Promise<string> {
    return (await this.codeOf(client, authorizationCode)).codeChallenge
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, authorizationCode: string, _codeVerifier?: string, redirectUri?: string, resource?: URL): Promise<OAuthTokens> {
    const authorization = await this.codeOf(client, authorizationCode)
    const now = this.options.now()
    if (redirectUri !== undefined && redirectUri !== authorization.redirectUri) {
      throw new InvalidGrantError(`redirect_uri ${redirectUri} is not the one the authorization was asked with`)
    }
    if (resource !== undefined && this.resourceOf(resource) !== authorization.resource) {
      throw new InvalidTargetError(`the code was given for ${authorization.resource}, not for ${resource.href}`)
    }
    if (!(await this.storage.useCode(secretHash(authorizationCode), now.toISOString()))) {
      await this.storage.revokeGrant(authorization.grantId!, now.toISOString())
      throw new InvalidGrantError('the authorization code was used already: the access it gave is revoked; sign in again')
    }
    if (Date.parse(authorization.codeExpiresAt!) <= now.getTime()) throw new InvalidGrantError(`the authorization code expired at ${authorization.codeExpiresAt}`)
    return this.issue(await this.liveGrant(authorization.grantId!))
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string, _scopes?: string[], resource?: URL): Promise<OAuthTokens> {
    const found = await this.storage.token(secretHash(refreshToken))
    if (found === null || found.token.kind !== 'refresh' || found.grant.clientId !== client.client_id) {
      throw new InvalidGrantError('the refresh token is not known to this server (or was given to another app)')
    }
    const now = this.options.now()
    if (resource !== undefined && this.resourceOf(resource) !== found.grant.resource) {
      throw new InvalidTargetError(`the refresh token was given for ${found.grant.resource}, not for ${resource.href}`)
    }
    if (!(await this.storage.useRefreshToken(found.token.tokenHash, now.toISOString()))) {
      await this.storage.revokeGrant(found.grant.id, now.toISOString())
      throw new InvalidGrantError('the refresh token was used already: the access it gave is revoked; sign in again')
    }
    if (Date.parse(found.token.expiresAt) <= now.getTime()) throw new InvalidGrantError(`the refresh token expired at ${found.token.expiresAt}; sign in again`)
    return this.issue(await this.liveGrant(found.grant.id))
  }

  private async liveGrant(id: string): Promise<OAuthGrant> {
    const grant = await this.storage.grant(id)
    if (grant === null || grant.revokedAt !== null) throw new InvalidGrantError(`the access was revoked${grant?.revokedAt ? ` at ${grant.revokedAt}` : ''}; sign in again`)
    return grant
  }

  /** A new access token and refresh token of `grant`. */
  private async issue(grant: OAuthGrant): Promise<OAuthTokens> {
    const now = this.options.now()
    const access = newSecret('access')
    const refresh = newSecret('refresh')
    const at = (ms: number) => new Date(now.getTime() + ms).toISOString()
    await this.storage.addTokens([
      {tokenHash: access.hash, grantId: grant.id, kind: 'access', createdAt: now.toISOString(), expiresAt: at(OAUTH_LIFETIMES.accessMs), usedAt: null},
      {tokenHash: refresh.hash, grantId: grant.id, kind: 'refresh', createdAt: now.toISOString(), expiresAt: at(OAUTH_LIFETIMES.refreshMs), usedAt: null},
    ])
    return {access_token: access.secret, token_type: 'Bearer', expires_in: OAUTH_LIFETIMES.accessMs / 1000, refresh_token: refresh.secret, scope: grant.role}
  }

  /** For the SDK's own bearer middleware, which jarvis does not use (auth.ts checks access tokens at every request). */
  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const found = await this.storage.token(secretHash(token))
    if (found === null || found.token.kind !== 'access') throw new InvalidGrantError('the access token is not known to this server')
    return {token, clientId: found.grant.clientId, scopes: [found.grant.role], expiresAt: Math.floor(Date.parse(found.token.expiresAt) / 1000), resource: new URL(found.grant.resource)}
  }

  /** RFC 7009: revoking either token of a grant ends the grant (the app signs out); an unknown token changes nothing. */
  async revokeToken(client: OAuthClientInformationFull, request: OAuthTokenRevocationRequest): Promise<void> {
    const found = await this.storage.token(secretHash(request.token))
    if (found !== null && found.grant.clientId === client.client_id) await this.storage.revokeGrant(found.grant.id, this.options.now().toISOString())
  }
}
