/** The OAuth tables in SQLite (schema migration 7; oauth-rows.ts): clients, authorizations, grants, hashed tokens. */
import type Database from 'better-sqlite3'

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

export class SqliteOAuthStore implements OAuthStorage {
  private readonly statements

  constructor(private readonly db: Database.Database) {
    this.statements = {
      addClient: db.prepare('INSERT INTO oauth_clients (client_id, secret_hash, secret_expires_at, metadata, created_at) VALUES (?, ?, ?, ?, ?)'),
      client: db.prepare<[string], ClientRowDb>('SELECT client_id, secret_hash, secret_expires_at, metadata, created_at FROM oauth_clients WHERE client_id = ?'),
      addAuthorization: db.prepare(`INSERT INTO oauth_authorizations (${AUTHORIZATION_COLUMNS.split(', ').slice(0, 10).join(', ')}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      authorization: db.prepare<[string], AuthorizationRowDb>(`SELECT ${AUTHORIZATION_COLUMNS} FROM oauth_authorizations WHERE id = ?`),
      byCode: db.prepare<[string], AuthorizationRowDb>(`SELECT ${AUTHORIZATION_COLUMNS} FROM oauth_authorizations WHERE code_hash = ?`),
      decide: db.prepare<[string, string | null, string | null, string | null, string, string]>(
        'UPDATE oauth_authorizations SET decided_at = ?, grant_id = ?, code_hash = ?, code_expires_at = ? WHERE id = ? AND decided_at IS NULL AND expires_at > ?',
      ),
      useCode: db.prepare<[string, string]>('UPDATE oauth_authorizations SET code_used_at = ? WHERE code_hash = ? AND code_used_at IS NULL'),
      addGrant: db.prepare(`INSERT INTO oauth_grants (${GRANT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      grant: db.prepare<[string], GrantRowDb>(`SELECT ${GRANT_COLUMNS} FROM oauth_grants WHERE id = ?`),
      listGrants: db.prepare<[], GrantRowDb & {refreshable_until: string | null}>(LIST_GRANTS_SQL),
      revokeGrant: db.prepare<[string, string]>('UPDATE oauth_grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      addToken: db.prepare('INSERT INTO oauth_tokens (token_hash, grant_id, kind, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?, ?)'),
      token: db.prepare<[string], Record<string, unknown>>(`${TOKEN_WITH_GRANT_SQL} ?`),
      useRefresh: db.prepare<[string, string]>("UPDATE oauth_tokens SET used_at = ? WHERE token_hash = ? AND kind = 'refresh' AND used_at IS NULL"),
      purgeAuthorizations: db.prepare<[string, string]>('DELETE FROM oauth_authorizations WHERE expires_at < ? AND (code_expires_at IS NULL OR code_expires_at < ?)'),
      purgeTokens: db.prepare<[string]>('DELETE FROM oauth_tokens WHERE expires_at < ?'),
    }
  }

  async addClient(client: OAuthClientRow): Promise<void> {
    this.statements.addClient.run(...clientValues(client))
  }

  async client(clientId: string): Promise<OAuthClientRow | null> {
    const row = this.statements.client.get(clientId)
    return row ? toClient(row) : null
  }

  async addAuthorization(authorization: OAuthAuthorization): Promise<void> {
    this.statements.addAuthorization.run(...authorizationValues(authorization))
  }

  async authorization(id: string): Promise<OAuthAuthorization | null> {
    const row = this.statements.authorization.get(id)
    return row ? toAuthorization(row) : null
  }

  async decideAuthorization(id: string, decision: OAuthDecision, now: string): Promise<boolean> {
    return this.db
      .transaction(() => {
        const changed = decision.allow
          ? this.statements.decide.run(now, decision.grant.id, decision.codeHash, decision.codeExpiresAt, id, now).changes
          : this.statements.decide.run(now, null, null, null, id, now).changes
        if (changed === 1 && decision.allow) this.statements.addGrant.run(...grantValues(decision.grant))
        return changed === 1
      })
      .immediate()
  }

  async authorizationByCode(codeHash: string): Promise<OAuthAuthorization | null> {
    const row = this.statements.byCode.get(codeHash)
    return row ? toAuthorization(row) : null
  }

  async useCode(codeHash: string, now: string): Promise<boolean> {
    return this.statements.useCode.run(now, codeHash).changes === 1
  }

  async addTokens(tokens: readonly OAuthTokenRow[]): Promise<void> {
    this.db.transaction(() => {
      for (const token of tokens) this.statements.addToken.run(...tokenValues(token))
    })()
  }

  async token(tokenHash: string): Promise<{token: OAuthTokenRow; grant: OAuthGrant} | null> {
    const row = this.statements.token.get(tokenHash)
    return row ? toTokenWithGrant(row) : null
  }

  async useRefreshToken(tokenHash: string, now: string): Promise<boolean> {
    return this.statements.useRefresh.run(now, tokenHash).changes === 1
  }

  async grant(id: string): Promise<OAuthGrant | null> {
    const row = this.statements.grant.get(id)
    return row ? toGrant(row) : null
  }

  async listGrants(): Promise<OAuthGrantListed[]> {
    return this.statements.listGrants.all().map(toListedGrant)
  }

  async revokeGrant(id: string, now: string): Promise<OAuthGrant | null> {
    this.statements.revokeGrant.run(now, id)
    return this.grant(id)
  }

  async purgeExpired(before: string): Promise<void> {
    this.db.transaction(() => {
      this.statements.purgeAuthorizations.run(before, before)
      this.statements.purgeTokens.run(before)
    })()
  }
}
