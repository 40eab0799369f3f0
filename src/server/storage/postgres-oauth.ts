/**
 * The OAuth tables in PostgreSQL (schema migration 7; oauth-rows.ts). Every check that must hold across processes —
 * a request decided once, a code or a refresh token used once — is one conditional UPDATE, decided by the database.
 */
import type pg from 'pg'

import {
  AUTHORIZATION_COLUMNS,
  type AuthorizationRowDb,
  authorizationValues,
  type ClientRowDb,
  clientValues,
  GRANT_COLUMNS,
  type GrantRowDb,
  grantValues,
  LIST_GRANTS_SQL,
  toAuthorization,
  toClient,
  toGrant,
  toListedGrant,
  TOKEN_WITH_GRANT_SQL,
  tokenValues,
  toTokenWithGrant,
} from './oauth-rows.js'
import type {OAuthAuthorization, OAuthClientRow, OAuthDecision, OAuthGrant, OAuthGrantListed, OAuthStorage, OAuthTokenRow} from './oauth-types.js'

const placeholders = (count: number, from = 1) => Array.from({length: count}, (_, index) => `$${index + from}`).join(', ')

export class PostgresOAuthStore implements OAuthStorage {
  constructor(
    private readonly pool: pg.Pool,
    private readonly transaction: <T>(work: (client: pg.PoolClient) => Promise<T>) => Promise<T>,
  ) {}

  async addClient(client: OAuthClientRow): Promise<void> {
    await this.pool.query(`INSERT INTO oauth_clients (client_id, secret_hash, secret_expires_at, metadata, created_at) VALUES (${placeholders(5)})`, clientValues(client))
  }

  async client(clientId: string): Promise<OAuthClientRow | null> {
    const row = (await this.pool.query<ClientRowDb>('SELECT client_id, secret_hash, secret_expires_at, metadata, created_at FROM oauth_clients WHERE client_id = $1', [clientId])).rows[0]
    return row ? toClient(row) : null
  }

  async addAuthorization(authorization: OAuthAuthorization): Promise<void> {
    await this.pool.query(`INSERT INTO oauth_authorizations (${AUTHORIZATION_COLUMNS.split(', ').slice(0, 10).join(', ')}) VALUES (${placeholders(10)})`, authorizationValues(authorization))
  }

  async authorization(id: string): Promise<OAuthAuthorization | null> {
    const row = (await this.pool.query<AuthorizationRowDb>(`SELECT ${AUTHORIZATION_COLUMNS} FROM oauth_authorizations WHERE id = $1`, [id])).rows[0]
    return row ? toAuthorization(row) : null
  }

  async decideAuthorization(id: string, decision: OAuthDecision, now: string): Promise<boolean> {
    return this.transaction(async (client) => {
      const values = decision.allow ? [now, decision.grant.id, decision.codeHash, decision.codeExpiresAt] : [now, null, null, null]
      const updated = await client.query(
        'UPDATE oauth_authorizations SET decided_at = $1, grant_id = $2, code_hash = $3, code_expires_at = $4 WHERE id = $5 AND decided_at IS NULL AND expires_at > $6',
        [...values, id, now],
      )
      if (updated.rowCount !== 1) return false
      if (decision.allow) await client.query(`INSERT INTO oauth_grants (${GRANT_COLUMNS}) VALUES (${placeholders(9)})`, grantValues(decision.grant))
      return true
    })
  }

  async authorizationByCode(codeHash: string): Promise<OAuthAuthorization | null> {
    const row = (await this.pool.query<AuthorizationRowDb>(`SELECT ${AUTHORIZATION_COLUMNS} FROM oauth_authorizations WHERE code_hash = $1`, [codeHash])).rows[0]
    return row ? toAuthorization(row) : null
  }

  async useCode(codeHash: string, now: string): Promise<boolean> {
    return (await this.pool.query('UPDATE oauth_authorizations SET code_used_at = $1 WHERE code_hash = $2 AND code_used_at IS NULL', [now, codeHash])).rowCount === 1
  }

  async addTokens(tokens: readonly OAuthTokenRow[]): Promise<void> {
    await this.transaction(async (client) => {
      for (const token of tokens) {
        await client.query(`INSERT INTO oauth_tokens (token_hash, grant_id, kind, created_at, expires_at, used_at) VALUES (${placeholders(6)})`, tokenValues(token))
      }
    })
  }

  async token(tokenHash: string): Promise<{token: OAuthTokenRow; grant: OAuthGrant} | null> {
    const row = (await this.pool.query<Record<string, unknown>>(`${TOKEN_WITH_GRANT_SQL} $1`, [tokenHash])).rows[0]
    return row ? toTokenWithGrant(row) : null
  }

  async useRefreshToken(tokenHash: string, now: string): Promise<boolean> {
    return (await this.pool.query("UPDATE oauth_tokens SET used_at = $1 WHERE token_hash = $2 AND kind = 'refresh' AND used_at IS NULL", [now, tokenHash])).rowCount === 1
  }

  async grant(id: string): Promise<OAuthGrant | null> {
    const row = (await this.pool.query<GrantRowDb>(`SELECT ${GRANT_COLUMNS} FROM oauth_grants WHERE id = $1`, [id])).rows[0]
    return row ? toGrant(row) : null
  }

  async listGrants(): Promise<OAuthGrantListed[]> {
    return (await this.pool.query<GrantRowDb & {refreshable_until: string | null}>(LIST_GRANTS_SQL)).rows.map(toListedGrant)
  }

  async revokeGrant(id: string, now: string): Promise<OAuthGrant | null> {
    await this.pool.query('UPDATE oauth_grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now, id])
    return this.grant(id)
  }

  async purgeExpired(before: string): Promise<void> {
    await this.transaction(async (client) => {
      await client.query('DELETE FROM oauth_authorizations WHERE expires_at < $1 AND (code_expires_at IS NULL OR code_expires_at < $1)', [before])
      await client.query('DELETE FROM oauth_tokens WHERE expires_at < $1', [before])
    })
  }
}
