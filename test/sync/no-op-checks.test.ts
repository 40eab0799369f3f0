/**
 * What a sync with nothing to do reads and writes without zod (so that it loads none): a status that lists no file
 * (isEmptyStatus), its audit line, the dates of both (isWrittenDateTime), the user config (isPlainUserConfig). Each
 * hand check accepts only what the schema reads unchanged; anything else still goes through zod, which names the
 * problem.
 */
import {readFile} from 'node:fs/promises'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {isPlainUserConfig, userConfigSchema} from '../../src/ops/identity.js'
import {isEmptyStatus} from '../../src/protocol/client.js'
import {isoDateTimeSchema} from '../../src/schemas/common.js'
import {auditEntrySchema} from '../../src/schemas/nexus.js'
import {statusResponseSchema} from '../../src/schemas/protocol.js'
import {appendAudit, auditPath, initTree} from '../../src/store/index.js'
import {isWrittenDateTime} from '../../src/schemas/written-date.js'
import {removeAll, tempDir} from '../helpers/world.js'

const two = (n: number) => String(n).padStart(2, '0')
/** Date-times of every shape near the written one: out-of-range fields, other zones, other lengths. */
const dateTime = fc.oneof(
  fc
    .tuple(fc.integer({min: 0, max: 9999}), fc.integer({min: 0, max: 13}), fc.integer({min: 0, max: 32}), fc.integer({min: 0, max: 25}), fc.integer({min: 0, max: 61}), fc.integer({min: 0, max: 61}), fc.integer({min: 0, max: 999}))
    .map(([y, mo, d, h, mi, s, ms]) => `${String(y).padStart(4, '0')}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}:${two(s)}.${String(ms).padStart(3, '0')}Z`),
  fc.date({noInvalidDate: true}).map((d) => d.toISOString()),
  fc.constantFrom('2026-02-02T10:00:00Z', '2026-02-02T19:00:00+09:00', '2026-02-02T10:00:00.000z', '2026-02-02 10:00:00.000Z', '+012026-01-01T00:00:00.000Z', ''),
)
const anyValue = fc.oneof(fc.anything(), dateTime, fc.integer(), fc.double(), fc.constantFrom(null, undefined, -0, Number.MAX_SAFE_INTEGER + 2))

/** Does zod read `value` with `schema`, to an equal value? */
function zodReadsUnchanged(schema: {safeParse(value: unknown): {success: boolean; data?: unknown}}, value: unknown): boolean {
  const parsed = schema.safeParse(value)
  if (!parsed.success) return false
  // As read from JSON: the same keys and values (toEqual: what JSON cannot carry, such as an undefined value, aside).
  expect(parsed.data).toEqual(value)
  return true
}

describe('a no-op sync’s reads and writes without zod', () => {
  it('a date-time as jarvis writes it is one zod reads unchanged', () => {
    fc.assert(
      fc.property(dateTime, (text) => {
        if (isWrittenDateTime(text)) expect(zodReadsUnchanged(isoDateTimeSchema, text), text).toBe(true)
      }),
      {numRuns: 20000},
    )
  })

  it('a status that lists no file is taken as it is only when zod reads it unchanged', () => {
    const status = fc.record(
      {
        files: fc.oneof(fc.constant({}), fc.dictionary(fc.string(), fc.anything(), {maxKeys: 2}), anyValue),
        seq: anyValue,
        serverTime: anyValue,
        activeProjectId: fc.oneof(fc.string(), anyValue),
        serverId: fc.oneof(fc.string(), anyValue),
        full: fc.boolean(),
      },
      {requiredKeys: []},
    )
    const answers = fc.oneof(status, status.map((s) => ({...s, files: {}})), anyValue, fc.constant({["__proto__"]: [], files: {}}))
    let taken = 0
    fc.assert(
      fc.property(answers, (answer) => {
        if (!isEmptyStatus(answer)) return
        taken++
        expect(zodReadsUnchanged(statusResponseSchema, answer)).toBe(true)
      }),
      {numRuns: 20000},
    )
    // The check is not vacuous: `jarvis serve`'s own answer of a no-op is taken.
    expect(taken).toBeGreaterThan(100)
    expect(isEmptyStatus({serverTime: new Date().toISOString(), seq: 12, serverId: 'abc', files: {}, activeProjectId: null})).toBe(true)
  })

  it('an audit line jarvis writes is written as the schema reads it; any other still goes through zod, which refuses what it must', async () => {
    const work = await tempDir('jarvis-audit-')
    try {
      const {root} = await initTree(work, {agent: 'claude'})
      const entries = fc.record({at: fc.option(dateTime, {nil: undefined}), type: fc.oneof(fc.constantFrom('sync', 'conflict', ''), fc.string()), pushed: fc.nat(), note: fc.string()}, {requiredKeys: ['type']})
      await fc.assert(
        fc.asyncProperty(entries, async (entry) => {
          const full = {...entry, at: entry.at ?? 'now'}
          const zodRead = auditEntrySchema.safeParse(entry.at === undefined ? {...entry, at: new Date().toISOString()} : entry)
          const written = await appendAudit(root, entry).then(
            (value) => value,
            () => undefined,
          )
          expect(written !== undefined, JSON.stringify(full)).toBe(zodRead.success)
          if (written === undefined) return
          expect(auditEntrySchema.parse(written)).toStrictEqual(written)
          const lines = (await readFile(auditPath(root), 'utf8')).trimEnd().split('\n')
          expect(JSON.parse(lines[lines.length - 1])).toStrictEqual(JSON.parse(JSON.stringify(written)))
        }),
        {numRuns: 300},
      )
    } finally {
      await removeAll([work])
    }
  })
})

describe('the user config without zod', () => {
  it('is taken as it is only when userConfigSchema reads it unchanged', () => {
    const tokens = fc.dictionary(fc.oneof(fc.webUrl(), fc.string()), fc.oneof(fc.string(), fc.dictionary(fc.string(), fc.oneof(fc.string(), anyValue), {maxKeys: 3}), anyValue), {maxKeys: 3})
    const config = fc.record({server: fc.oneof(fc.webUrl(), anyValue), agentId: fc.oneof(fc.string(), anyValue), token: fc.oneof(fc.string(), anyValue), tokens: fc.oneof(tokens, anyValue), other: anyValue}, {requiredKeys: []})
    let taken = 0
    fc.assert(
      fc.property(fc.oneof(config, anyValue, fc.constant({["__proto__"]: []})), (value) => {
        // As read from a file: JSON only.
        const text = JSON.stringify(value)
        if (text === undefined) return
        const json: unknown = JSON.parse(text)
        if (!isPlainUserConfig(json)) return
        taken++
        expect(zodReadsUnchanged(userConfigSchema(), json)).toBe(true)
      }),
      {numRuns: 20000},
    )
    expect(taken).toBeGreaterThan(100)
  })
})
