/**
 * The secrets of the OAuth flow — authorization codes, access and refresh tokens, client secrets — and the ids
 * that name its records. A secret is 32 random bytes with a prefix that tells what it is in a log or a leak scanner;
 * only its sha256 is ever stored.
 */
import {randomBytes} from 'node:crypto'

import {hashText} from '../../store/hash.js'

export const SECRET_PREFIX = {code: 'jvc_', access: 'jva_', refresh: 'jvr_', clientSecret: 'jvs_'} as const

export function newSecret(kind: keyof typeof SECRET_PREFIX): {secret: string; hash: string} {
  const secret = `${SECRET_PREFIX[kind]}${randomBytes(32).toString('base64url')}`
  return {secret, hash: hashText(secret)}
}

/** What is stored of a presented secret. */
export function secretHash(secret: string): string {
  return hashText(secret)
}

/** `authz_…`, `grant_…`: names, not secrets. */
export function newId(prefix: 'authz' | 'grant'): string {
  return `${prefix}_${randomBytes(prefix === 'authz' ? 16 : 6).toString('hex')}`
}

/** True for a token that only the OAuth flow hands out (so an API key or a tokens-file token is never looked up there). */
export function isAccessToken(token: string): boolean {
  return token.startsWith(SECRET_PREFIX.access)
}
