/**
 * API keys a team hands out and takes back: `jarvis serve token create|list|revoke` on the server's data
 * directory, while the server runs or not (every process reads the same database, so a revoked key is refused
 * at its next request). A token is printed once and stored only as its sha256; the tokens file keeps working
 * beside them (its tokens act as `write` keys of the default workspace). Each key opens one workspace; the keys
 * of every workspace live in the default workspace's storage, which is the one a token is looked up in.
 */
import {randomBytes} from 'node:crypto'

import {BadInputError} from '../errors.js'
import {parseDuration} from '../events/duration.js'
import {agentIdSchema as eventLogAgentSchema} from '../schemas/common.js'
import {hashText} from '../store/hash.js'
import {agentIdSchema} from './config.js'
import {assertServerData, type StorageTarget, withStorage} from './storage/open.js'
import {type ApiKey, KEY_ROLES, type KeyRole} from './storage/types.js'
import {checkWorkspaceName, DEFAULT_WORKSPACE} from './storage/workspace-name.js'

export {KEY_ROLES, type ApiKey, type KeyRole} from './storage/types.js'

/** What tells a key's token apart from a tokens-file token in a log or a leak scanner. */
const TOKEN_PREFIX = 'jvk_'

const DAY_MS = 86_400_000
/** The shortest lifetime of a key, in days: a shorter one is dead before it is handed over (0.0001h is 0.36 s). */
const MIN_LIFETIME_DAYS = 1 / 1440
/** The last moment a Date can hold (ECMA-262: 8.64e15 ms from the epoch). */
const LAST_DATE_MS = 8.64e15

/** When a key made at `now` for `--expires text` expires, or null without one; exit 2 naming --expires when it cannot. */
export function keyExpiry(text: string | undefined, now: Date): string | null {
  if (text === undefined) return null
  const lifetime = parseDuration(text, '--expires')
  const leaveOut = 'leave --expires out for a key that lasts until it is revoked'
  // A key dead on arrival is a mistake (0d, 0.0001h), never what was meant.
  if (lifetime < MIN_LIFETIME_DAYS) throw new BadInputError(`--expires ${text}: a key must live at least a minute (12h, 90d, 2w); ${leaveOut}`, {field: '--expires'})
  const at = now.getTime() + lifetime * DAY_MS
  if (!(at <= LAST_DATE_MS)) {
    throw new BadInputError(`--expires ${text}: the key would expire after ${new Date(LAST_DATE_MS).toISOString()}, the last moment a date can hold; ${leaveOut}`, {field: '--expires'})
  }
  return new Date(at).toISOString()
}

/** Why a key is not usable now, or null when it is. */
export function keyRefusal(key: ApiKey, now: Date): string | null {
  if (key.revokedAt !== null) return `the key ${key.id} was revoked at ${key.revokedAt}`
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= now.getTime()) return `the key ${key.id} expired at ${key.expiresAt}`
  return null
}

export interface CreateKeyOptions extends StorageTarget {
  agent: string
  /** The workspace the key opens; default the default workspace. Made at the key's first request when new. */
  workspace?: string
  role?: string
  /** `90d`, `12h`, `2w`; none: the key does not expire. */
  expires?: string
  now?: Date
}

/** A new key: its token (shown once, never stored) and what is stored of it. */
export async function createKey(options: CreateKeyOptions): Promise<{token: string; key: ApiKey; warnings: string[]}> {
  const agent = agentIdSchema.safeParse(options.agent)
  if (!agent.success) throw new BadInputError(`--agent: ${JSON.stringify(options.agent)} ${agent.error.issues[0]?.message ?? 'is not an agent id'}`, {field: 'agent'})
  const workspace = checkWorkspaceName(options.workspace ?? DEFAULT_WORKSPACE, '--workspace')
  const role = (options.role ?? 'write') as KeyRole
  if (!KEY_ROLES.includes(role)) throw new BadInputError(`--role: ${JSON.stringify(options.role)} is not a role: use read, write or admin`, {field: 'role'})
  const now = options.now ?? new Date()
  const expiresAt = keyExpiry(options.expires, now)
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`
  const key: ApiKey = {id: `key_${randomBytes(6).toString('hex')}`, workspace, agentId: agent.data, role, createdAt: now.toISOString(), expiresAt, revokedAt: null}
  await withStorage(options, (storage) => storage.addKey(key, hashText(token)))
  const warnings = await auditKey(options, key, key.createdAt, `key ${key.id} created (role ${role}, ${expiresAt === null ? 'no expiry' : `expires ${expiresAt}`})`)
  // A CI job's key is meant to be outside the four; a typo of one of them (`claud`) is worth seeing now, not at the first append.
  if (!eventLogAgentSchema.safeParse(agent.data).success) {
    warnings.unshift(`${agent.data} is not one of the event log's agents (${eventLogAgentSchema.options.join(', ')}): its key syncs files and reads the global and project events, but cannot append, supersede or forget events`)
  }
  return {token, key, warnings}
}

/** Every key, or those of one workspace. */
export async function listKeys(options: StorageTarget & {workspace?: string}): Promise<ApiKey[]> {
  const workspace = options.workspace === undefined ? undefined : checkWorkspaceName(options.workspace, '--workspace')
  await assertServerData(options)
  const keys = await withStorage(options, (storage) => storage.listKeys(), {migrate: false})
  return workspace === undefined ? keys : keys.filter((key) => key.workspace === workspace)
}

export async function revokeKey(options: StorageTarget & {id: string; now?: Date}): Promise<{key: ApiKey; warnings: string[]}> {
  const now = (options.now ?? new Date()).toISOString()
  await assertServerData(options)
  const key = await withStorage(options, (storage) => storage.revokeKey(options.id, now))
  if (key === null) throw new BadInputError(`no key ${JSON.stringify(options.id)} on this server: jarvis serve token list shows them`, {field: 'id'})
  // Recorded once: revoking a key revoked before changes nothing.
  return {key, warnings: key.revokedAt === now ? await auditKey(options, key, now, `key ${key.id} revoked`) : []}
}

/**
 * Records a key's (or an app's access's) creation or revocation in the audit log of its own workspace (its storage made
 * when new), so that workspace's people see it and no other workspace does. The key itself lives with every key, in the
 * default one. The key is made or revoked already: an entry that cannot be written is a warning, never a lost token.
 */
export async function auditKey(target: StorageTarget, key: Pick<ApiKey, 'workspace' | 'agentId'>, at: string, detail: string): Promise<string[]> {
  try {
    await withStorage(target, (storage) => storage.appendAudit([{at, agent: key.agentId, kind: 'key', paths: [], event_ids: [], count: 1, detail}]), {workspace: key.workspace})
    return []
  } catch (error) {
    return [`${detail}, but the workspace ${key.workspace}'s audit log could not record it: ${(error as Error).message}`]
  }
}
