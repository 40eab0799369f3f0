/**
 * Bearer-token identity. A token is one of the tokens file's (an agent, role `write`) or an API key's (made by
 * `jarvis serve token create`: an agent, a role, maybe an expiry or a revocation). Lookup hashes the presented
 * token: the tokens file's are compared with every known hash in constant time, so neither the comparison nor an
 * early exit leaks how much of a token was right; a key is found by the sha256 of its token, which says nothing
 * of any other token, and read at every request, so a revoked key is refused by every process at once.
 */
import {createHash, timingSafeEqual} from 'node:crypto'

import type {TokenMap} from './config.js'
import {keyRefusal} from './keys.js'
import type {KeyRole, KeyStorage} from './storage/types.js'
import {DEFAULT_WORKSPACE} from './storage/workspace-name.js'

export interface Identity {
  /** The memory the token opens: the key's workspace, or the default one for a tokens-file token. */
  workspace: string
  agentId: string
  role: KeyRole
}

export type Authentication = {identity: Identity} | {refused: string}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest()
}

export class TokenAuthenticator {
  private readonly entries: ReadonlyArray<{digest: Buffer; agentId: string}>

  constructor(
    tokens: TokenMap,
    private readonly keys?: Pick<KeyStorage, 'keyByTokenHash'>,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.entries = Object.entries(tokens).map(([token, agentId]) => ({digest: digest(token), agentId}))
  }

  /** Who holds `token`, or why it is refused. Always compares against every tokens-file entry. */
  async authenticate(token: string | undefined | null): Promise<Authentication> {
    if (typeof token !== 'string' || token.length === 0) return {refused: 'missing Authorization: Bearer <token> header'}
    const presented = digest(token)
    let found: string | null = null
    for (const entry of this.entries) {
      if (timingSafeEqual(presented, entry.digest) && found === null) found = entry.agentId
    }
    if (found !== null) return {identity: {workspace: DEFAULT_WORKSPACE, agentId: found, role: 'write'}}
    const key = await this.keys?.keyByTokenHash(presented.toString('hex'))
    if (!key) return {refused: 'the token is not known to this server'}
    const refusal = keyRefusal(key, this.now())
    return refusal === null ? {identity: {workspace: key.workspace, agentId: key.agentId, role: key.role}} : {refused: refusal}
  }

  /** The agent ids that hold at least one tokens-file token. */
  agents(): string[] {
    return [...new Set(this.entries.map((entry) => entry.agentId))].sort()
  }
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), or null. */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null
  const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header)
  return match ? match[1] : null
}
