/** Human output of `jarvis serve token …`; `--json` prints their results instead. */
import type {ApiKey} from '../server/keys.js'

function state(key: ApiKey, now: Date): string {
  if (key.revokedAt !== null) return `revoked ${key.revokedAt}`
  if (key.expiresAt === null) return 'never expires'
  return Date.parse(key.expiresAt) <= now.getTime() ? `expired ${key.expiresAt}` : `expires ${key.expiresAt}`
}

export function renderKeyCreated({token, key}: {token: string; key: ApiKey}, now = new Date()): string {
  return [
    `created ${key.id}: agent ${key.agentId}, role ${key.role}, ${state(key, now)}`,
    'the token, shown this once (the server keeps only its hash):',
    `  JARVIS_TOKEN=${token}`,
  ].join('\n')
}

export function renderKeys(keys: ApiKey[], now = new Date()): string {
  if (keys.length === 0) return 'no keys yet: jarvis serve token create --agent <id> (the tokens file still works beside them)'
  return keys.map((key) => `${key.id}  ${key.agentId}  ${key.role}  created ${key.createdAt}, ${state(key, now)}`).join('\n')
}

export function renderKeyRevoked(key: ApiKey): string {
  return `revoked ${key.id} (agent ${key.agentId}, role ${key.role}): every server on this data directory refuses it from now on`
}
