/**
 * The sync state's per-file entries are checked by hand on the hot path (store/sync-state.ts): that check may be
 * stricter than syncStateSchema, never looser, and what it lets through must read exactly as zod reads it.
 */
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {SchemaError} from '../../src/errors.js'
import {memoryPathSchema} from '../../src/schemas/common.js'
import {syncedFileStateSchema} from '../../src/schemas/nexus.js'
import {hashText, initTree, readSyncState, writeSyncState} from '../../src/store/index.js'
import {isWrittenEntry} from '../../src/store/sync-state.js'
import {removeAll, tempDir} from '../helpers/world.js'

const HASH = hashText('x')

/** Entries as jarvis writes them, then (mostly) one field damaged the way a hand edit or another writer may. */
const isoDate = fc.date({min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true}).map((d) => d.toISOString())
const written = fc.record({hash: fc.constant(HASH), syncedAt: isoDate, rev: fc.nat(), updatedAt: isoDate}, {requiredKeys: ['hash', 'syncedAt']})
const damage = fc.oneof(
  fc.constantFrom('2026-02-30T10:00:00.000Z', '2026-02-02T10:00:00Z', '2026-02-02T19:00:00+09:00', '2026-13-01T00:00:00.000Z', '2026-02-02T24:00:00.000Z', '2026-02-02T10:00:00.000z', 'yesterday', ''),
  fc.constantFrom(HASH.toUpperCase(), HASH.slice(1), `${HASH}0`),
  fc.constantFrom(-1, 1.5, Number.MAX_SAFE_INTEGER + 2, Number.NaN, null),
  fc.anything(),
)
const entry = fc
  .tuple(written, fc.option(fc.tuple(fc.constantFrom('hash', 'rev', 'updatedAt', 'syncedAt', 'extra'), damage), {freq: 3}))
  .map(([e, hurt]) => (hurt ? {...e, [hurt[0]]: hurt[1]} : e) as Record<string, unknown>)
const path = fc.oneof(fc.constantFrom('a.md', 'notes/plan.md', 'jarvis/claude.json', '../up.md', '/abs.md', 'a//b.md', 'a/./b.md', 'a\\b.md', 'tab\there.md', 'x/'), fc.string())

describe('the sync state', () => {
  it('the hand check of an entry accepts nothing zod refuses, and zod reads what it accepts unchanged', () => {
    fc.assert(
      fc.property(path, entry, (p, e) => {
        if (!isWrittenEntry(p, e)) return
        expect(memoryPathSchema.safeParse(p).success).toBe(true)
        const parsed = syncedFileStateSchema.safeParse(e)
        expect(parsed.success).toBe(true)
        expect(parsed.data).toEqual(e)
      }),
      {numRuns: 5000},
    )
  })

  it('reads a date-time by its digits exactly as a round trip through Date does: no 30 February, no 29 February of 2100', () => {
    const two = (n: number) => String(n).padStart(2, '0')
    const dateTime = fc
      .tuple(fc.integer({min: 0, max: 9999}), fc.integer({min: 0, max: 13}), fc.integer({min: 0, max: 32}), fc.integer({min: 0, max: 25}), fc.integer({min: 0, max: 61}), fc.integer({min: 0, max: 61}), fc.integer({min: 0, max: 999}))
      .map(([y, mo, d, h, mi, s, ms]) => `${String(y).padStart(4, '0')}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}:${two(s)}.${String(ms).padStart(3, '0')}Z`)
    const roundTrip = (text: string) => !Number.isNaN(Date.parse(text)) && new Date(text).toISOString() === text
    const edges = ['2024-02-29T00:00:00.000Z', '2100-02-29T00:00:00.000Z', '2000-02-29T23:59:59.999Z', '2026-04-31T00:00:00.000Z', '0000-01-01T00:00:00.000Z']
    for (const text of edges) expect(isWrittenEntry('a.md', {hash: HASH, syncedAt: text}), text).toBe(roundTrip(text))
    fc.assert(
      fc.property(dateTime, (text) => {
        expect(isWrittenEntry('a.md', {hash: HASH, syncedAt: text})).toBe(roundTrip(text))
      }),
      {numRuns: 20000},
    )
  })

  it('accepts what jarvis writes, and reads it back the same', async () => {
    const {root} = await initTree(await tempDir(), {})
    try {
      const state = {version: 1 as const, seq: 7, files: {'notes/plan.md': {hash: HASH, rev: 3, updatedAt: new Date(0).toISOString(), syncedAt: new Date().toISOString()}, 'b.md': {hash: HASH, syncedAt: new Date().toISOString()}}}
      expect(Object.entries(state.files).every(([p, e]) => isWrittenEntry(p, e))).toBe(true)
      await writeSyncState(root, state)
      expect(await readSyncState(root)).toEqual(state)
    } finally {
      await removeAll([root])
    }
  })

  it('an entry checked once is not edited in place afterwards, and one put in its place, or moved to another path, is checked again', async () => {
    const {root} = await initTree(await tempDir(), {})
    try {
      await writeSyncState(root, {version: 1, files: {'a.md': {hash: HASH, syncedAt: new Date().toISOString()}}})
      const state = await readSyncState(root)
      // Frozen at its check: an edit in place would slip past the next write's check.
      expect(() => {
        state.files['a.md'].hash = 'not a hash'
      }).toThrow(TypeError)
      await writeSyncState(root, state)
      state.files['a.md'] = {hash: 'not a hash', syncedAt: new Date().toISOString()}
      await expect(writeSyncState(root, state)).rejects.toThrow(/files\.a\.md\.hash/)
      const good = (await readSyncState(root)).files['a.md']
      await expect(writeSyncState(root, {version: 1, files: {'../out.md': good}})).rejects.toBeInstanceOf(SchemaError)
    } finally {
      await removeAll([root])
    }
  })

  it('a hand-damaged entry among thousands is named by file and field, as before', async () => {
    const {root} = await initTree(await tempDir(), {})
    try {
      const files: Record<string, unknown> = {}
      for (let i = 0; i < 2000; i++) files[`n/${i}.md`] = {hash: HASH, syncedAt: new Date().toISOString()}
      files['n/1234.md'] = {hash: HASH, syncedAt: '2026-02-30T10:00:00.000Z'}
      await writeFile(join(root, '.nexus', 'sync-state.json'), JSON.stringify({version: 1, files}))
      const error = await readSyncState(root).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(SchemaError)
      expect(String((error as Error).message)).toContain('.nexus/sync-state.json')
      expect(String((error as Error).message)).toContain('files.n/1234.md.syncedAt')
    } finally {
      await removeAll([root])
    }
  })
})
