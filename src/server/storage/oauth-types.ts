/**
 * What `jarvis serve` keeps of the apps that sign in with OAuth (ChatGPT's and Claude's connectors): the clients that
 * registered, each authorization from the request to the code it ends with, the grants a person consented to, and
 * the access and refresh tokens of each grant — tokens and codes only as their sha256, like API keys. It lives with
 * the keys, in the default workspace's storage, read at every request, so every process on one database refuses a
 * revoked grant at once. Both backends implement it (sqlite-oauth.ts, postgres-oauth.ts); server/oauth/ uses it.
 */

/** A client registered through Dynamic Client Registration (RFC 7591). */
export interface OAuthClientRow {
  clientId: string
  /** sha256 hex of the client's secret; null for a public client (PKCE only). */
  secretHash: string | null
  /** Seconds since the epoch after which the secret is refused; null: never. */
  secretExpiresAt: number | null
  /** The registered metadata (redirect_uris, client_name, …) as JSON text. */
  metadata: string
  createdAt: string
}

/** The roles a person can grant an app: what a key of that role may do. */
export const GRANT_ROLES = ['read', 'write'] as const
export type GrantRole = (typeof GRANT_ROLES)[number]

/** One authorization request, from `/authorize` to the code it ends with (or its refusal). */
export interface OAuthAuthorization {
  /** `authz_…`: names the request in the consent page's address (not a secret: consenting needs a jarvis key). */
  id: string
  clientId: string
  clientName: string
  redirectUri: string
  /** The PKCE S256 challenge the token request's verifier must match. */
  codeChallenge: string
  /** The resource (RFC 8707) the tokens will be for. */
  resource: string
  scope: string | null
  state: string | null
  createdAt: string
  /** After this, nobody can consent to it any more. */
  expiresAt: string
  /** When the person allowed or denied it; null while it waits. */
  decidedAt: string | null
  /** The grant made when the person allowed it. */
  grantId: string | null
  codeExpiresAt: string | null
  /** When the code was exchanged; a second exchange revokes the grant. */
  codeUsedAt: string | null
}

/** What a person allowed an app: one agent of one workspace, with one role, for one resource. */
export interface OAuthGrant {
  /** `grant_…`: names the grant in `jarvis serve token list|revoke` (not secret). */
  id: string
  clientId: string
  /** The app's name as it registered (or its client id), shown wherever the grant is. */
  clientName: string
  workspace: string
  agentId: string
  role: GrantRole
  resource: string
  createdAt: string
  revokedAt: string | null
}

/** A grant as `token list` shows it: with the expiry of its newest refresh token (null: none left). */
export interface OAuthGrantListed extends OAuthGrant {
  refreshableUntil: string | null
}

export type OAuthTokenKind = 'access' | 'refresh'

export interface OAuthTokenRow {
  tokenHash: string
  grantId: string
  kind: OAuthTokenKind
  createdAt: string
  expiresAt: string
  /** A refresh token exchanged already (rotation): a second exchange revokes the grant. */
  usedAt: string | null
}

/** The decision a person took on the consent page. */
export type OAuthDecision =
  | {allow: true; grant: OAuthGrant; codeHash: string; codeExpiresAt: string}
  | {allow: false}

export interface OAuthStorage {
  addClient(client: OAuthClientRow): Promise<void>
  client(clientId: string): Promise<OAuthClientRow | null>
  addAuthorization(authorization: OAuthAuthorization): Promise<void>
  authorization(id: string): Promise<OAuthAuthorization | null>
  /**
   * Records the person's decision, once: false when the request was decided already or is unknown (two tabs, two
   * processes: only one decision counts). Allowing stores the grant and the code's hash in the same transaction.
   */
  decideAuthorization(id: string, decision: OAuthDecision, now: string): Promise<boolean>
  authorizationByCode(codeHash: string): Promise<OAuthAuthorization | null>
  /** Marks the code used; false when it was used before (by any process). */
  useCode(codeHash: string, now: string): Promise<boolean>
  addTokens(tokens: readonly OAuthTokenRow[]): Promise<void>
  /** The token with this hash and its grant, expired, used or revoked ones included: the caller decides. */
  token(tokenHash: string): Promise<{token: OAuthTokenRow; grant: OAuthGrant} | null>
  /** Marks a refresh token used (rotated); false when it was used before. */
  useRefreshToken(tokenHash: string, now: string): Promise<boolean>
  grant(id: string): Promise<OAuthGrant | null>
  listGrants(): Promise<OAuthGrantListed[]>
  /** The grant, revoked now (or earlier); null when there is no such grant. Its every token is refused from now on. */
  revokeGrant(id: string, now: string): Promise<OAuthGrant | null>
  /** Forgets authorizations and tokens that expired before `before` (nothing a request could still use). */
  purgeExpired(before: string): Promise<void>
}
