/**
 * The apps' OAuth records on both backends (conformance): a request is decided once, a code and a refresh token are
 * used once — even when several storages on one database try at the same time — and a revoked grant reads revoked.
 */
import {afterEach, describe, expect, it} from 'vitest'

import type {OAuthAuthorization, OAuthGrant} from '../../src/server/storage/oauth-types.js'
import {openStorage} from '../../src/server/storage/open.js'
import {BACKENDS, freshTarget, openFresh} from '../helpers/backends.js'
import {Cleanup} from './temp.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

const T0 = '2026-03-01T10:00:00.000Z'
const LATER = '2026-03-01T10:05:00.000Z'
const EXPIRES = '2026-03-01T10:10:00.000Z'

function authorization(id: string): OAuthAuthorization {
  return {
    id,
    clientId: 'client-1',
    clientName: 'ChatGPT',
    redirectUri: 'https://app.example.test/callback',
    codeChallenge: 'challenge',
    resource: 'https://memory.example.test/mcp',
    scope: null,
    state: 'st',
    createdAt: T0,
    expiresAt: EXPIRES,
    decidedAt: null,
    grantId: null,
    codeExpiresAt: null,
    codeUsedAt: null,
  }
}

function grant(id: string): OAuthGrant {
  return {id, clientId: 'client-1', clientName: 'ChatGPT', workspace: 'default', agentId: 'chatgpt', role: 'write', resource: 'https://memory.example.test/mcp', createdAt: LATER, revokedAt: null}
}

describe.each(BACKENDS)('OAuth records on %s', (backend) => {
  it('keep a registered client with its secret as a hash, and find none for an unknown id', async () => {
    const {oauth} = await openFresh(backend, cleanup)
    await oauth.addClient({clientId: 'client-1', secretHash: 'ab'.repeat(32), secretExpiresAt: 4_000_000_000, metadata: '{"client_name":"ChatGPT"}', createdAt: T0})
    expect(await oauth.client('client-1')).toEqual({clientId: 'client-1', secretHash: 'ab'.repeat(32), secretExpiresAt: 4_000_000_000, metadata: '{"client_name":"ChatGPT"}', createdAt: T0})
    expect(await oauth.client('client-2')).toBeNull()
  })

  it('decide a request once: allowing stores the grant and the code; a second decision, or one after expiry, changes nothing', async () => {
    const {oauth} = await openFresh(backend, cleanup)
    await oauth.addAuthorization(authorization('authz_1'))
    await oauth.addAuthorization(authorization('authz_2'))
    expect(await oauth.decideAuthorization('authz_1', {allow: true, grant: grant('grant_1'), codeHash: 'c1', codeExpiresAt: EXPIRES}, LATER)).toBe(true)
    expect(await oauth.decideAuthorization('authz_1', {allow: false}, LATER)).toBe(false)
    expect(await oauth.decideAuthorization('authz_1', {allow: true, grant: grant('grant_x'), codeHash: 'cx', codeExpiresAt: EXPIRES}, LATER)).toBe(false)
    expect(await oauth.grant('grant_x')).toBeNull()
    expect(await oauth.authorizationByCode('c1')).toMatchObject({id: 'authz_1', grantId: 'grant_1', decidedAt: LATER, codeExpiresAt: EXPIRES, codeUsedAt: null})
    expect(await oauth.grant('grant_1')).toEqual(grant('grant_1'))
    expect(await oauth.decideAuthorization('authz_2', {allow: false}, '2026-03-01T10:11:00.000Z')).toBe(false)
    expect(await oauth.authorization('authz_2')).toMatchObject({decidedAt: null})
    expect(await oauth.authorization('authz_none')).toBeNull()
  })

  it('use a code and a refresh token once, however many storages on the database try together', async () => {
    const target = await freshTarget(backend, cleanup)
    const storages = await Promise.all([0, 1, 2].map(() => openStorage(target)))
    for (const storage of storages) cleanup.add(() => storage.close())
    const [first] = storages
    await first.oauth.addAuthorization(authorization('authz_1'))
    await first.oauth.decideAuthorization('authz_1', {allow: true, grant: grant('grant_1'), codeHash: 'c1', codeExpiresAt: EXPIRES}, LATER)
    const codeUses = await Promise.all(storages.flatMap((storage) => [storage.oauth.useCode('c1', LATER), storage.oauth.useCode('c1', LATER)]))
    expect(codeUses.filter(Boolean)).toHaveLength(1)
    await first.oauth.addTokens([
      {tokenHash: 'a1', grantId: 'grant_1', kind: 'access', createdAt: LATER, expiresAt: EXPIRES, usedAt: null},
      {tokenHash: 'r1', grantId: 'grant_1', kind: 'refresh', createdAt: LATER, expiresAt: '2026-04-01T10:00:00.000Z', usedAt: null},
    ])
    const refreshUses = await Promise.all(storages.flatMap((storage) => [storage.oauth.useRefreshToken('r1', LATER), storage.oauth.useRefreshToken('r1', LATER)]))
    expect(refreshUses.filter(Boolean)).toHaveLength(1)
    // An access token is never "used" as a refresh token.
    expect(await first.oauth.useRefreshToken('a1', LATER)).toBe(false)
  })

  it('read a token with its grant, list grants with their refresh expiry, and revoke a grant for every reader at once', async () => {
    const target = await freshTarget(backend, cleanup)
    const one = await openStorage(target)
    const two = await openStorage(target)
    cleanup.add(() => one.close())
    cleanup.add(() => two.close())
    await one.oauth.addAuthorization(authorization('authz_1'))
    await one.oauth.decideAuthorization('authz_1', {allow: true, grant: grant('grant_1'), codeHash: 'c1', codeExpiresAt: EXPIRES}, LATER)
    await one.oauth.addTokens([
      {tokenHash: 'a1', grantId: 'grant_1', kind: 'access', createdAt: LATER, expiresAt: EXPIRES, usedAt: null},
      {tokenHash: 'r1', grantId: 'grant_1', kind: 'refresh', createdAt: LATER, expiresAt: '2026-04-01T10:00:00.000Z', usedAt: null},
      {tokenHash: 'r0', grantId: 'grant_1', kind: 'refresh', createdAt: T0, expiresAt: '2026-05-01T10:00:00.000Z', usedAt: LATER},
    ])
    expect(await two.oauth.token('a1')).toEqual({token: {tokenHash: 'a1', grantId: 'grant_1', kind: 'access', createdAt: LATER, expiresAt: EXPIRES, usedAt: null}, grant: grant('grant_1')})
    expect(await two.oauth.token('nope')).toBeNull()
    // A used refresh token does not keep the grant alive: only r1 counts.
    expect(await two.oauth.listGrants()).toEqual([{...grant('grant_1'), refreshableUntil: '2026-04-01T10:00:00.000Z'}])
    const revoked = await one.oauth.revokeGrant('grant_1', '2026-03-01T10:06:00.000Z')
    expect(revoked).toMatchObject({id: 'grant_1', revokedAt: '2026-03-01T10:06:00.000Z'})
    expect((await two.oauth.token('a1'))?.grant.revokedAt).toBe('2026-03-01T10:06:00.000Z')
    // Revoked once: a second revocation keeps the first time.
    expect(await two.oauth.revokeGrant('grant_1', '2026-03-01T11:00:00.000Z')).toMatchObject({revokedAt: '2026-03-01T10:06:00.000Z'})
    expect(await two.oauth.revokeGrant('grant_none', LATER)).toBeNull()
  })

  it('forget what expired before a time, and nothing younger', async () => {
    const {oauth} = await openFresh(backend, cleanup)
    await oauth.addAuthorization(authorization('authz_old'))
    await oauth.addAuthorization({...authorization('authz_new'), expiresAt: '2026-03-02T10:00:00.000Z'})
    await oauth.decideAuthorization('authz_new', {allow: true, grant: grant('grant_1'), codeHash: 'c1', codeExpiresAt: '2026-03-02T10:00:00.000Z'}, LATER)
    await oauth.addTokens([
      {tokenHash: 'old', grantId: 'grant_1', kind: 'access', createdAt: T0, expiresAt: EXPIRES, usedAt: null},
      {tokenHash: 'new', grantId: 'grant_1', kind: 'refresh', createdAt: T0, expiresAt: '2026-03-02T10:00:00.000Z', usedAt: null},
    ])
    expect(await oauth.token('old')).not.toBeNull()
    await oauth.purgeExpired('2026-03-01T12:00:00.000Z')
    expect(await oauth.authorization('authz_old')).toBeNull()
    expect(await oauth.authorization('authz_new')).not.toBeNull()
    expect(await oauth.token('old')).toBeNull()
    expect(await oauth.token('new')).not.toBeNull()
  })
})
