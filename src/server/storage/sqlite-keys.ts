/** API keys in SQLite (schema migration 4): the sha256 of each token, its agent, role, expiry and revocation. */
import type Database from 'better-sqlite3'

import {KEY_COLUMNS as COLUMNS, type KeyRow, toKey} from './key-rows.js'
import type {ApiKey} from './types.js'

export const KEYS_MIGRATION_SQL = `
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT
  ) WITHOUT ROWID;
`

export class SqliteKeyStore {
  private readonly statements

  constructor(db: Database.Database) {
    this.statements = {
      add: db.prepare<[string, string, string, string, string, string, string | null, string | null]>(
        'INSERT INTO api_keys (id, token_hash, workspace, agent_id, role, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      list: db.prepare<[], KeyRow>(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, id`),
      one: db.prepare<[string], KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = ?`),
      revoke: db.prepare<[string, string]>('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      byHash: db.prepare<[string], KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE token_hash = ?`),
    }
  }

  add(key: ApiKey, tokenHash: string): void {
    this.statements.add.run(key.id, tokenHash, key.workspace, key.agentId, key.role, key.createdAt, key.expiresAt, key.revokedAt)
  }

  list(): ApiKey[] {
    return this.statements.list.all().map(toKey)
  }

  revoke(id: string, now: string): ApiKey | null {
    this.statements.revoke.run(now, id)
    const row = this.statements.one.get(id)
    return row ? toKey(row) : null
  }

  byTokenHash(tokenHash: string): ApiKey | null {
    const row = this.statements.byHash.get(tokenHash)
    return row ? toKey(row) : null
  }
}
