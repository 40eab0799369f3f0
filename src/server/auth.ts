/**
 * Bearer-token identity: every token maps to one agent id. Lookup hashes the presented token and compares it
 * with every known token's hash in constant time, so neither the comparison nor an early exit leaks how much
 * of a token was right.
 */
import {createHash, timingSafeEqual} from 'node:crypto'

import type {TokenMap} from './config.js'

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest()
}

export class TokenAuthenticator {
  private readonly entries: ReadonlyArray<{digest: Buffer; agentId: string}>

  constructor(tokens: TokenMap) {
    this.entries = Object.entries(tokens).map(([token, agentId]) => ({digest: digest(token), agentId}))
  }

  /** The agent of `token`, or null. Always compares against every entry. */
  authenticate(token: string | undefined | null): string | null {
    if (typeof token !== 'string' || token.length === 0) return null
    const presented = digest(token)
    let found: string | null = null
    for (const entry of this.entries) {
      if (timingSafeEqual(presented, entry.digest) && found === null) found = entry.agentId
    }
    return found
  }

  /** The agent ids that hold at least one token. */
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
