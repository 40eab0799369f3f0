/** An API key's row as both backends store it (never the token, only its hash, which is not read back), and its ApiKey. */
import type {ApiKey, KeyRole} from './types.js'

export interface KeyRow {
  id: string
  agent_id: string
  role: KeyRole
  created_at: string
  expires_at: string | null
  revoked_at: string | null
}

export const KEY_COLUMNS = 'id, agent_id, role, created_at, expires_at, revoked_at'

export function toKey(row: KeyRow): ApiKey {
  return {id: row.id, agentId: row.agent_id, role: row.role, createdAt: row.created_at, expiresAt: row.expires_at, revokedAt: row.revoked_at}
}

