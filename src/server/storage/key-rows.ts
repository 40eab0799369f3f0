/** An API key's row as both backends store it (never the token, only its hash, which is not read back), and its ApiKey. */
import type {ApiKey, KeyRole} from './types.js'

export interface KeyRow {
  id: string
  workspace: string
  agent_id: string
  role: KeyRole
  created_at: string
  expires_at: string | null
  revoked_at: string | null
}

export const KEY_COLUMNS = 'id, workspace, agent_id, role, created_at, expires_at, revoked_at'

export function toKey(row: KeyRow): ApiKey {
  return {id: row.id, workspace: row.workspace, agentId: row.agent_id, role: row.role, createdAt: row.created_at, expiresAt: row.expires_at, revokedAt: row.revoked_at}
}


/** Keys made before workspaces belong to the default workspace: the column every backend adds (migration 5). */
export const KEYS_WORKSPACE_MIGRATION_SQL = "ALTER TABLE api_keys ADD COLUMN workspace TEXT NOT NULL DEFAULT 'default'"
