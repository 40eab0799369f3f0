/**
 * The OAuth tables as both backends store them (one schema: the same SQL runs on SQLite and PostgreSQL), and their
 * rows → the records of oauth-types.ts. Tokens and codes are stored only as their sha256.
 */
import type {GrantRole, OAuthAuthorization, OAuthClientRow, OAuthGrant, OAuthGrantListed, OAuthTokenKind, OAuthTokenRow} from './oauth-types.js'

/** Schema migration 7 of both backends. */
export const OAUTH_MIGRATION_SQL = `
  CREATE TABLE oauth_clients (
    client_id TEXT PRIMARY KEY,
    secret_hash TEXT,
    secret_expires_at BIGINT,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE TABLE oauth_grants (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL,
    client_name TEXT NOT NULL,
    workspace TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('read', 'write')),
    resource TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  CREATE TABLE oauth_authorizations (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL,
    client_name TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    resource TEXT NOT NULL,
    scope TEXT,
    state TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    decided_at TEXT,
    grant_id TEXT,
    code_hash TEXT UNIQUE,
    code_expires_at TEXT,
    code_used_at TEXT
  );
  CREATE INDEX oauth_authorizations_by_expiry ON oauth_authorizations (expires_at);
  CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at TEXT
  );
  CREATE INDEX oauth_tokens_by_grant ON oauth_tokens (grant_id);
  CREATE INDEX oauth_tokens_by_expiry ON oauth_tokens (expires_at);
`

export const OAUTH_MIGRATION_DESCRIPTION = 'OAuth for apps (ChatGPT, Claude): registered clients, authorizations, grants, hashed tokens'

export interface ClientRowDb {
  client_id: string
  secret_hash: string | null
  secret_expires_at: number | null
  metadata: string
  created_at: string
}

export function toClient(row: ClientRowDb): OAuthClientRow {
  return {clientId: row.client_id, secretHash: row.secret_hash, secretExpiresAt: row.secret_expires_at === null ? null : Number(row.secret_expires_at), metadata: row.metadata, createdAt: row.created_at}
}

export function clientValues(client: OAuthClientRow): [string, string | null, number | null, string, string] {
  return [client.clientId, client.secretHash, client.secretExpiresAt, client.metadata, client.createdAt]
}

export const AUTHORIZATION_COLUMNS =
  'id, client_id, client_name, redirect_uri, code_challenge, resource, scope, state, created_at, expires_at, decided_at, grant_id, code_hash, code_expires_at, code_used_at'

export interface AuthorizationRowDb {
  id: string
  client_id: string
  client_name: string
  redirect_uri: string
  code_challenge: string
  resource: string
  scope: string | null
  state: string | null
  created_at: string
  expires_at: string
  decided_at: string | null
  grant_id: string | null
  code_hash: string | null
  code_expires_at: string | null
  code_used_at: string | null
}

export function toAuthorization(row: AuthorizationRowDb): OAuthAuthorization {
  return {
    id: row.id,
    clientId: row.client_id,
    clientName: row.client_name,
    redirectUri: row.redirect_uri,
    codeChallenge: row.code_challenge,
    resource: row.resource,
    scope: row.scope,
    state: row.state,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    decidedAt: row.decided_at,
    grantId: row.grant_id,
    codeExpiresAt: row.code_expires_at,
    codeUsedAt: row.code_used_at,
  }
}

/** The values of a new authorization, in the order of the first ten AUTHORIZATION_COLUMNS. */
export function authorizationValues(a: OAuthAuthorization): [string, string, string, string, string, string, string | null, string | null, string, string] {
  return [a.id, a.clientId, a.clientName, a.redirectUri, a.codeChallenge, a.resource, a.scope, a.state, a.createdAt, a.expiresAt]
}

export const GRANT_COLUMNS = 'id, client_id, client_name, workspace, agent_id, role, resource, created_at, revoked_at'

export interface GrantRowDb {
  id: string
  client_id: string
  client_name: string
  workspace: string
  agent_id: string
  role: GrantRole
  resource: string
  created_at: string
  revoked_at: string | null
}

export function toGrant(row: GrantRowDb): OAuthGrant {
  return {
    id: row.id,
    clientId: row.client_id,
    clientName: row.client_name,
    workspace: row.workspace,
    agentId: row.agent_id,
    role: row.role,
    resource: row.resource,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  }
}

export function grantValues(g: OAuthGrant): [string, string, string, string, string, string, string, string, string | null] {
  return [g.id, g.clientId, g.clientName, g.workspace, g.agentId, g.role, g.resource, g.createdAt, g.revokedAt]
}

/** Every grant with the expiry of its newest unused refresh token (the same SQL on both backends). */
export const LIST_GRANTS_SQL = `
  SELECT ${GRANT_COLUMNS.split(', ').map((column) => `g.${column}`).join(', ')},
    (SELECT MAX(t.expires_at) FROM oauth_tokens t WHERE t.grant_id = g.id AND t.kind = 'refresh' AND t.used_at IS NULL) AS refreshable_until
  FROM oauth_grants g ORDER BY g.created_at, g.id`

export function toListedGrant(row: GrantRowDb & {refreshable_until: string | null}): OAuthGrantListed {
  return {...toGrant(row), refreshableUntil: row.refreshable_until}
}

export const TOKEN_COLUMNS = 'token_hash, grant_id, kind, created_at, expires_at, used_at'

export interface TokenRowDb {
  token_hash: string
  grant_id: string
  kind: OAuthTokenKind
  created_at: string
  expires_at: string
  used_at: string | null
}

export function toToken(row: TokenRowDb): OAuthTokenRow {
  return {tokenHash: row.token_hash, grantId: row.grant_id, kind: row.kind, createdAt: row.created_at, expiresAt: row.expires_at, usedAt: row.used_at}
}

export function tokenValues(t: OAuthTokenRow): [string, string, string, string, string, string | null] {
  return [t.tokenHash, t.grantId, t.kind, t.createdAt, t.expiresAt, t.usedAt]
}

/** A token's row joined with its grant's (`g_` columns), as both backends read them. */
export const TOKEN_WITH_GRANT_SQL = `
  SELECT ${TOKEN_COLUMNS.split(', ').map((column) => `t.${column}`).join(', ')},
    ${GRANT_COLUMNS.split(', ').map((column) => `g.${column} AS g_${column}`).join(', ')}
  FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = `

export function toTokenWithGrant(row: Record<string, unknown>): {token: OAuthTokenRow; grant: OAuthGrant} {
  const grant = Object.fromEntries(GRANT_COLUMNS.split(', ').map((column) => [column, row[`g_${column}`]])) as unknown as GrantRowDb
  return {token: toToken(row as unknown as TokenRowDb), grant: toGrant(grant)}
}
