/**
 * What a sync with nothing to do, or with a few files to push or pull, reads and writes without zod (so that it loads
 * none): a status (isPlainStatus), a push answer (isPlainPushAnswer), the sync state's fields besides its entries
 * (isWrittenRest), the audit line, the dates of all of them (isWrittenDateTime), the user config
 * (isPlainUserConfig). Each hand check accepts only what the schema reads unchanged; anything else still goes
 * through zod, which names the problem.
 */
import {readFile} from 'node:fs/promises'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {isPlainUserConfig, userConfigSchema} from '../../src/ops/identity.js'
import {isPlainPushAnswer, isPlainStatus, pushAnswerSchema} from '../../src/protocol/client.js'
import {isoDateTimeSchema} from '../../src/schemas/common.js'
import {auditEntrySchema, syncStateSchema} from '../../src/schemas/nexus.js'
import {statusResponseSchema} from '../../src/schemas/protocol.js'
import {appendAudit, auditPath, hashText, initTree} from '../../src/store/index.js'
import {isWrittenRest} from '../../src/store/sync-state.js'
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

  it('a status that lists no file is taken as it is only when zod reads it unchanged (and not a status a server sends with anything in it zod would not keep)', () => {
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
        if (!isPlainStatus(answer)) return
        taken++
        expect(zodReadsUnchanged(statusResponseSchema, answer)).toBe(true)
      }),
      {numRuns: 20000},
    )
    // The check is not vacuous: `jarvis serve`'s own answer of a no-op is taken.
    expect(taken).toBeGreaterThan(100)
    expect(isPlainStatus({serverTime: new Date().toISOString(), seq: 12, serverId: 'abc', files: {}, activeProjectId: null})).toBe(true)
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

/** Paths near the rule's edges, `__proto__` (a path, but not a key zod's record keeps) and any string. */
const path = fc.oneof(fc.constantFrom('a.md', 'notes/plan.md', 'b/c.md', 'd.json', '__proto__', 'constructor', '../up.md', '/abs.md', 'a//b.md', 'a/./b.md', 'a\\b.md', 'tab\there.md', 'x/', 'x'.repeat(1025)), fc.string())
/** Mostly `good` (the shape `jarvis serve` writes), sometimes anything: so that whole answers of several entries pass too. */
const mostly = <T>(good: fc.Arbitrary<T>, other: fc.Arbitrary<unknown> = anyValue) => fc.oneof({arbitrary: good, weight: 12}, {arbitrary: other, weight: 1})
const writtenDate = fc.date({min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true}).map((d) => d.toISOString())
const date = mostly(writtenDate, fc.oneof(dateTime, anyValue))
const hash = mostly(fc.constant(hashText('x')), fc.oneof(fc.constantFrom(hashText('x').toUpperCase(), hashText('x').slice(1)), anyValue))
const revision = mostly(fc.nat())
/** JSON only, as the client reads an answer: a value JSON cannot carry is not an answer. */
const asRead = (value: unknown): unknown => {
  const text = JSON.stringify(value)
  return text === undefined ? undefined : JSON.parse(text)
}
/** Objects from JSON text with an own `__proto__` key (JSON.parse makes one; zod drops it or sets the prototype). */
const withProtoKey = (inner: string) => JSON.parse(inner) as unknown

/**
 * Each JSON value of `values` (as read from a file or an answer) that `check` takes, `schema` reads unchanged; and
 * the check is not vacuous: it takes over 100 that `counts` (those with entries, where there are entries).
 */
function takenOnlyUnchanged(values: fc.Arbitrary<unknown>, check: (json: unknown) => boolean, schema: Parameters<typeof zodReadsUnchanged>[0], counts: (json: unknown) => boolean): void {
  let taken = 0
  fc.assert(
    fc.property(values, (value) => {
      const json = asRead(value)
      if (!check(json)) return
      if (counts(json)) taken++
      expect(zodReadsUnchanged(schema, json)).toBe(true)
    }),
    {numRuns: 5000},
  )
  expect(taken).toBeGreaterThan(100)
}
const listsFiles = (json: unknown) => Object.keys((json as {files: object}).files).length > 0

describe('a sync of a few files reads its answers and state without zod', () => {
  it('a status listing files, with their texts, is taken as it is only when zod reads it unchanged', () => {
    const statusFile = fc.record({updatedAt: date, hash, rev: revision, deleted: mostly(fc.boolean()), content: mostly(fc.string())}, {requiredKeys: ['updatedAt']})
    const status = fc.record({files: mostly(fc.dictionary(path, statusFile, {maxKeys: 4})), seq: revision, serverTime: date, activeProjectId: mostly(fc.option(fc.string())), serverId: fc.string()}, {requiredKeys: ['files']})
    const answers = fc.oneof(status, anyValue, fc.constantFrom(withProtoKey('{"files": {"__proto__": {"updatedAt": "2026-02-02T10:00:00.000Z"}}}'), withProtoKey('{"files": {"a.md": {"updatedAt": "2026-02-02T10:00:00.000Z", "__proto__": 1}}}')))
    takenOnlyUnchanged(answers, isPlainStatus, statusResponseSchema, listsFiles)
  })

  it('a push answer is taken as it is only when the push answer’s schema reads it unchanged', () => {
    const pushed = fc.record({rev: revision, hash, updatedAt: date, other: anyValue}, {requiredKeys: ['rev', 'hash', 'updatedAt']})
    const answer = fc.record({files: mostly(fc.dictionary(path, pushed, {maxKeys: 4})), deleted: mostly(fc.dictionary(path, pushed, {maxKeys: 3})), seq: revision, other: anyValue}, {requiredKeys: ['files']})
    const answers = fc.oneof(answer, anyValue, fc.constantFrom(withProtoKey('{"files": {"__proto__": {"rev": 1, "hash": "' + hashText('x') + '", "updatedAt": "2026-02-02T10:00:00.000Z"}}}'), withProtoKey('{"__proto__": {}, "files": {}}')))
    takenOnlyUnchanged(answers, isPlainPushAnswer, pushAnswerSchema(), listsFiles)
  })

  it('the sync state’s fields besides its entries are taken as they are only when syncStateSchema reads them unchanged', () => {
    const rest = fc.record(
      {version: mostly(fc.constant(1)), server: mostly(fc.webUrl()), serverId: fc.string(), seq: revision, mode: mostly(fc.constantFrom('revision', 'timestamp'), fc.oneof(fc.constant('other'), anyValue)), lastSyncAt: date, sessions: mostly(fc.dictionary(fc.string(), anyValue, {maxKeys: 3})), other: anyValue},
      {requiredKeys: []},
    )
    const states = fc.oneof(
      rest.map((r) => ({...r, files: {}})),
      rest.map((r) => ({...r, files: {'a.md': {hash: hashText('x'), syncedAt: '2026-02-02T10:00:00.000Z'}}})),
      fc.constantFrom(withProtoKey('{"version": 1, "files": {}, "__proto__": {}}'), withProtoKey('{"version": 1, "files": {}, "sessions": {"__proto__": 1}}')),
    )
    const isRest = (json: unknown) => typeof json === 'object' && json !== null && isWrittenRest(json as Record<string, unknown>)
    takenOnlyUnchanged(states, isRest, syncStateSchema, () => true)
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
