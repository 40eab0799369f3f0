/** Human output of the `jarvis serve` subcommands (token, export, import, backup, restore); `--json` prints their results instead. */
import type {ApiKey} from '../server/keys.js'
import type {OAuthGrant, OAuthGrantListed} from '../server/oauth/grants.js'

function state(key: ApiKey, now: Date): string {
  if (key.revokedAt !== null) return `revoked ${key.revokedAt}`
  if (key.expiresAt === null) return 'never expires'
  return Date.parse(key.expiresAt) <= now.getTime() ? `expired ${key.expiresAt}` : `expires ${key.expiresAt}`
}

export function renderKeyCreated({token, key}: {token: string; key: ApiKey}, now = new Date()): string {
  return [
    `created ${key.id}: workspace ${key.workspace}, agent ${key.agentId}, role ${key.role}, ${state(key, now)}`,
    'the token, shown this once (the server keeps only its hash):',
    `  JARVIS_TOKEN=${token}`,
  ].join('\n')
}

export function renderKeys(keys: ApiKey[], now = new Date()): string {
  if (keys.length === 0) return 'no keys yet: jarvis serve token create --agent <id> (the tokens file still works beside them)'
  return keys.map((key) => `${key.id}  ${key.workspace}  ${key.agentId}  ${key.role}  created ${key.createdAt}, ${state(key, now)}`).join('\n')
}

function grantState(grant: OAuthGrantListed, now: Date): string {
  if (grant.revokedAt !== null) return `revoked ${grant.revokedAt}`
  if (grant.refreshableUntil === null || Date.parse(grant.refreshableUntil) <= now.getTime()) return 'signed out (no refresh token left)'
  return `refreshable until ${grant.refreshableUntil}`
}

/** The access people gave apps (OAuth), under the keys; nothing when there is none. */
export function renderGrants(grants: OAuthGrantListed[], now = new Date()): string {
  if (grants.length === 0) return ''
  return ['apps (signed in with OAuth):', ...grants.map((grant) => `${grant.id}  ${grant.workspace}  ${grant.agentId}  ${grant.role}  app ${JSON.stringify(grant.clientName)} for ${grant.resource}  allowed ${grant.createdAt}, ${grantState(grant, now)}`)].join('\n')
}

/** Where the servers that refuse a revoked key keep their data: `--database` or `--data`. */
export type RevokedOn = 'database' | 'data directory'

export function renderGrantRevoked(grant: OAuthGrant, on: RevokedOn): string {
  return `revoked ${grant.id} (app ${JSON.stringify(grant.clientName)}, workspace ${grant.workspace}, agent ${grant.agentId}, role ${grant.role}): every server on this ${on} refuses its tokens from now on`
}

export function renderKeyRevoked(key: ApiKey, on: RevokedOn): string {
  return `revoked ${key.id} (workspace ${key.workspace}, agent ${key.agentId}, role ${key.role}): every server on this ${on} refuses it from now on`
}

/** `12 files, 30 events, 2 keys` of a dump. */
export function describeCounts(counts: {files: number; memory_events: number; api_keys: number; audit_log: number}): string {
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`
  return [plural(counts.files, 'file'), plural(counts.memory_events, 'event'), plural(counts.api_keys, 'key'), plural(counts.audit_log, 'audit entry').replace(/entrys$/, 'entries')].join(', ')
}

/** What `jarvis serve export` says of the tokens file's tokens it put in the dump as keys. */
export function renderTokensFileKeys(tokensFile: {file: string; keys: number}): string {
  return `the ${tokensFile.keys === 1 ? 'token' : `${tokensFile.keys} tokens`} of ${tokensFile.file} went in as write ${tokensFile.keys === 1 ? 'key' : 'keys'} (hashes only, counted above): clients using them go on against the imported copy`
}

export function renderBackup(result: {file: string; bytes: number; removed: string[]}): string {
  const lines = [`backed up to ${result.file} (${(result.bytes / 1024).toFixed(0)} KiB)`]
  if (result.removed.length > 0) lines.push(`removed ${result.removed.length} older backup(s): ${result.removed.join(', ')}`)
  return lines.join('\n')
}

export function renderRestore(result: {file: string; dataDir?: string; database?: string; movedAside?: string}): string {
  const lines = [`restored ${result.file} into ${result.database ?? result.dataDir}`]
  if (result.movedAside) lines.push(`the database that was there is kept as ${result.movedAside}`)
  lines.push(result.database ? 'start the server: jarvis serve --database <the same URL>' : `start the server: jarvis serve --data ${result.dataDir}`)
  return lines.join('\n')
}
