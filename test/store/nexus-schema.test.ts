import {describe, expect, it} from 'vitest'

import {
  auditEntrySchema,
  nexusConfigSchema,
  outboxEntrySchema,
  SYNC_SETTINGS_DEFAULTS,
  syncSettingsSchema,
  syncStateSchema,
} from '../../src/schemas/nexus.js'

const HASH = 'a'.repeat(64)
const AT = '2026-01-01T00:00:00.000Z'

describe('schemas/nexus', () => {
  it('fills every seed 002 sync default, for a missing object and for a partial one', () => {
    expect(nexusConfigSchema.parse({}).sync).toEqual(SYNC_SETTINGS_DEFAULTS)
    expect(nexusConfigSchema.parse({sync: {maxRetries: 9}}).sync).toEqual({...SYNC_SETTINGS_DEFAULTS, maxRetries: 9})
    expect(syncSettingsSchema.parse({})).toEqual(SYNC_SETTINGS_DEFAULTS)
  })

  it('keeps unknown fields everywhere', () => {
    expect(nexusConfigSchema.parse({x: 1, sync: {y: 2}})).toMatchObject({x: 1, sync: {y: 2}})
    expect(syncStateSchema.parse({z: 3, files: {'a.md': {hash: HASH, syncedAt: AT, w: 4}}})).toMatchObject({z: 3, files: {'a.md': {w: 4}}})
    expect(outboxEntrySchema.parse({id: 'a', kind: 'task-result', createdAt: AT, payload: null, n: 1})).toMatchObject({n: 1})
    expect(auditEntrySchema.parse({at: AT, type: 'sync', pushed: 1})).toEqual({at: AT, type: 'sync', pushed: 1})
  })

  it('refuses a non-http server, an unknown outbox kind, a sync state of another version', () => {
    expect(nexusConfigSchema.safeParse({server: 'ftp://x'}).success).toBe(false)
    expect(nexusConfigSchema.safeParse({server: 'https://memory.example.com/base'}).success).toBe(true)
    expect(outboxEntrySchema.safeParse({id: 'a', kind: 'other', createdAt: AT, payload: 1}).success).toBe(false)
    expect(syncStateSchema.safeParse({version: 2}).success).toBe(false)
    expect(syncStateSchema.parse({})).toEqual({version: 1, files: {}})
  })
})
