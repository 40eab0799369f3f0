/**
 * API keys a team hands out and takes back: `jarvis serve token create|list|revoke` on the server's data
 * directory, while the server runs or not (every process reads the same database, so a revoked key is refused
 * at its next request). A token is printed once and stored only as its sha256; the tokens file keeps working
 * beside them (its tokens act as `write` keys).
 */
import {randomBytes} from 'node:crypto'

import {BadInputError} from '../errors.js'
import {parseDuration} from '../events/duration.js'
import {hashText} from '../store/hash.js'
import {agentIdSchema} from './config.js'
import {type StorageTarget, withStorage} from './storage/open.js'
import {type ApiKey, KEY_ROLES, type KeyRole} from './storage/types.js'

export {KEY_ROLES, type ApiKey, type KeyRole} from './storage/types.js'

/** What tells a key's token apart from a tokens-file token in a log or a leak scanner. */
const TOKEN_PREFIX = 'jvk_'

/** Why a key is not usable now, or null when it is. */
export function keyRefusal(key: ApiKey, now: Date): string | null {
  if (key.revokedAt !== null) return `the key ${key.id} was revoked at ${key.revokedAt}`
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= now.getTime()) return `the key ${key.id} expired at ${key.expiresAt}`
  return null
}

export interface CreateKeyOptions extends StorageTarget {
  agent: string
  role?: string
  /** `90d`, `12h`, `2w`; none: the key does not expire. */
  expires?: string
  now?: Date
}

/** A new key: its token (shown once, never stored) and what is stored of it. */
export async function createKey(options: CreateKeyOptions): Promise<{token: string; key: ApiKey}> {
  const agent = agentIdSchema.safeParse(options.agent)
  if (!agent.success) throw new BadInputError(`--agent: ${JSON.stringify(options.agent)} ${agent.error.issues[0]?.message ?? 'is not an agent id'}`, {field: 'agent'})
  const role = (options.role ?? 'write') as KeyRole
  if (!KEY_ROLES.includes(role)) throw new BadInputError(`--role: ${JSON.stringify(options.role)} is not a role: use read, write or admin`, {field: 'role'})
  const now = options.now ?? new Date()
  const expiresAt = options.expires === undefined ? null : new Date(now.getTime() + parseDuration(options.expires, '--expires') * 86_400_000).toISOString()
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`
  const key: ApiKey = {id: `key_${randomBytes(6).toString('hex')}`, agentId: agent.data, role, createdAt: now.toISOString(), expiresAt, revokedAt: null}
  await withStorage(options, async (storage) => {
    await storage.addKey(key, hashText(token))
    const expiry = expiresAt === null ? 'no expiry' : `expires ${expiresAt}`
    await storage.appendAudit([{at: key.createdAt, agent: key.agentId, kind: 'key', paths: [], event_ids: [], count: 1, detail: `key ${key.id} created (role ${role}, ${expiry})`}])
  })
  return {token, key}
}

export async function listKeys(options: StorageTarget): Promise<ApiKey[]> {
  return withStorage(options, (storage) => storage.listKeys())
}

export async function revokeKey(options: StorageTarget & {id: string; now?: Date}): Promise<ApiKey> {
  const now = (options.now ?? new Date()).toISOString()
  const key = await withStorage(options, async (storage) => {
    const revoked = await storage.revokeKey(options.id, now)
    // Recorded once: revoking a key revoked before changes nothing.
    if (revoked?.revokedAt === now) await storage.appendAudit([{at: now, agent: revoked.agentId, kind: 'key', paths: [], event_ids: [], count: 1, detail: `key ${revoked.id} revoked`}])
    return revoked
  })
  if (key === null) throw new BadInputError(`no key ${JSON.stringify(options.id)} on this server: jarvis serve token list shows them`, {field: 'id'})
  return key
}
