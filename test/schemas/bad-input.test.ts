import {readFileSync} from 'node:fs'
import {describe, expect, it} from 'vitest'

import {SchemaError} from '../../src/errors.js'
import {
  memoryEventSchema,
  nexusConfigSchema,
  parseJsonFile,
  parseJsonText,
  parseWith,
  pushRequestSchema,
  recentTaskSchema,
  statusResponseSchema,
  syncStateSchema,
  taskResultSchema,
  workerMemorySchema,
} from '../../src/schemas/index.js'
import {fixturesDir, makeAjv} from './helpers.js'

const ajv = makeAjv()
const exampleEvent = JSON.parse(readFileSync(`${fixturesDir}memory-event.example-1-claude-config.json`, 'utf8')) as Record<string, unknown>
const gemini = JSON.parse(readFileSync(`${fixturesDir}worker-memory.gemini.json`, 'utf8')) as {recentTasks: Record<string, unknown>[]}

/** The problems a SchemaError carries, or a failure when nothing was thrown. */
function problems(fn: () => unknown): string[] {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaError)
    return (error as SchemaError).problems
  }
  throw new Error('expected a SchemaError')
}

function messageOf(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    return (error as Error).message
  }
  throw new Error('expected an error')
}

describe('malformed JSON text', () => {
  it.each([
    ['{\n  "workerId": "gemini",\n  "status": }\n', 3, 13],
    ['{\n  "workerId": "gemini",\n}', 3, 1],
    ['{\n  "workerId": \'gemini\'\n}', 2, 15],
    ['{"a": 1} x', 1, 10],
    ['{\n  "a": [1, 2\n', 3, 1],
    ['', 1, 1],
  ])('%j is reported at line %i, column %i', (text, line, column) => {
    const message = messageOf(() => parseJsonFile(workerMemorySchema, text, '.memory/jarvis/gemini.json'))
    expect(message).toMatch(new RegExp(`^\\.memory/jarvis/gemini\\.json: line ${line}, column ${column}: \\S`))
    expect(message).not.toContain('\n')
  })

  it('ignores a byte-order mark in front of the JSON', () => {
    expect(parseJsonText('\uFEFF{"a": 1}', 'x.json')).toEqual({a: 1})
    expect(messageOf(() => parseJsonText('\uFEFF{\n"a" 1}', 'x.json'))).toMatch(/^x\.json: line 2, column 5: /)
  })
})

describe('a field of the wrong type', () => {
  it('names the file and the path to the field', () => {
    const bad = structuredClone(gemini)
    bad.recentTasks[0].timestamp = 1_738_490_140
    expect(messageOf(() => parseWith(workerMemorySchema, bad, '.memory/jarvis/gemini.json'))).toBe(
      '.memory/jarvis/gemini.json: recentTasks.0.timestamp: Invalid input: expected string, received number',
    )
  })

  it('lists every bad field, one line each', () => {
    const bad = structuredClone(gemini) as Record<string, unknown> & typeof gemini
    bad.status = 'asleep'
    bad.recentTasks[1].success = 'yes'
    expect(problems(() => parseWith(workerMemorySchema, bad, 'w.json'))).toEqual([
      expect.stringMatching(/^status: /),
      expect.stringMatching(/^recentTasks\.1\.success: /),
    ])
  })

  it.each(['2026-02-02T10:00:00Z', '2026-02-02T10:00:00+09:00', '2026-02-02T10:00:00.123Z', '2026-02-02T10:00:00.123456-05:30'])(
    'accepts the ISO-8601 date-time %s',
    (timestamp) => {
      expect(recentTaskSchema.safeParse({taskId: 't', timestamp, type: 'x', success: true}).success).toBe(true)
    },
  )

  it.each(['2026-02-02', '2026-02-02T10:00:00', '2026-02-02 10:00:00Z', '2026-02-30T10:00:00Z', 'yesterday'])('refuses the timestamp %j', (timestamp) => {
    expect(problems(() => parseWith(recentTaskSchema, {taskId: 't', timestamp, type: 'x', success: true}, 't.json'))).toEqual([
      expect.stringMatching(/^timestamp: must be an ISO-8601 date-time with a zone/),
    ])
  })

  it('requires of a task result only what identifies and orders it', () => {
    expect(problems(() => parseWith(taskResultSchema, {input: 'x'}, 'body'))).toEqual([
      expect.stringMatching(/^taskId: /),
      expect.stringMatching(/^timestamp: /),
      expect.stringMatching(/^type: /),
      expect.stringMatching(/^success: /),
    ])
  })
})

describe('dedupe_key (CONTRACT §4, seed 001 §6a)', () => {
  const withKey = (dedupe_key: string) => ({...exampleEvent, dedupe_key})
  const validate = ajv.getSchema('memory-event.schema.json')!

  it.each(['config:telegram_bot_token_location', 'decision:memory_ssot_2026_02', 'bug:gateway_auth_401', 'constraint:no_secrets_in_memory', 'a'.repeat(64)])(
    'accepts %s',
    (key) => {
      expect(memoryEventSchema.safeParse(withKey(key)).success).toBe(true)
      expect(validate(withKey(key))).toBe(true)
    },
  )

  it.each([
    ['CONFIG:FOO', 'upper case'],
    ['決定_20260202', 'not ASCII'],
    ['a'.repeat(65), '65 characters'],
    ['this-is-a-very-long-key-that-exceeds-sixty-four-characters-limit-bad', 'the seed example, 68 characters'],
    ['', 'empty'],
    ['with space', 'a space'],
  ])('refuses %j (%s)', (key) => {
    expect(problems(() => parseWith(memoryEventSchema, withKey(key), 'event'))).toEqual([expect.stringMatching(/^dedupe_key: must be 1-64 characters/)])
    expect(validate(withKey(key))).toBe(false)
  })
})

describe('memory event fields', () => {
  it.each(['global', 'project:memory-gateway', 'agent:claude'])('accepts the scope %s', (scope) => {
    expect(memoryEventSchema.safeParse({...exampleEvent, scope}).success).toBe(true)
  })

  it.each(['Global', 'project:', 'project:../x', 'agent:someone', 'agent:', 'team:x'])('refuses the scope %j', (scope) => {
    expect(problems(() => parseWith(memoryEventSchema, {...exampleEvent, scope}, 'event'))).toEqual([expect.stringMatching(/^scope: /)])
  })

  it('refuses an unknown agent, kind, confidence or source system', () => {
    const bad = {...exampleEvent, agent_id: 'copilot', kind: 'opinion', confidence: 'certain', source: {system: 'email'}}
    expect(problems(() => parseWith(memoryEventSchema, bad, 'event')).map((p) => p.split(':')[0])).toEqual(['agent_id', 'kind', 'confidence', 'source.system'])
  })

  it('defaults ttl_days to 0 and refuses a negative or fractional one', () => {
    const {ttl_days: _, ...rest} = exampleEvent
    expect(memoryEventSchema.parse(rest).ttl_days).toBe(0)
    expect(memoryEventSchema.safeParse({...exampleEvent, ttl_days: -1}).success).toBe(false)
    expect(memoryEventSchema.safeParse({...exampleEvent, ttl_days: 1.5}).success).toBe(false)
  })

  it('requires run_id, refuses blank or oversized content and keeps supersedes as sent', () => {
    const {run_id: _, ...noRun} = exampleEvent
    expect(problems(() => parseWith(memoryEventSchema, noRun, 'event'))).toEqual([expect.stringMatching(/^run_id: /)])
    expect(memoryEventSchema.safeParse({...exampleEvent, content_md: ' \n '}).success).toBe(false)
    expect(memoryEventSchema.safeParse({...exampleEvent, content_md: 'x'.repeat(4001)}).success).toBe(false)
    expect(memoryEventSchema.safeParse({...exampleEvent, content_md: 'x'.repeat(4000)}).success).toBe(true)
    expect(memoryEventSchema.parse(exampleEvent).supersedes).toBeNull()
    const {supersedes: __, ...noSupersedes} = exampleEvent
    expect('supersedes' in memoryEventSchema.parse(noSupersedes)).toBe(false)
  })
})

describe('paths in bodies and state', () => {
  const hash = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'

  it.each(['../outside.md', 'a/../../b', '/etc/passwd', 'a//b', './a', 'a\\b', 'dir/', 'a\u0000b', 'a\nb'])('refuses %j as a key and in a list', (path) => {
    expect(problems(() => parseWith(pushRequestSchema, {files: {[path]: 'x'}}, 'push'))).toEqual([expect.stringMatching(/: not a path inside \.memory\//)])
    expect(pushRequestSchema.safeParse({files: {}, deletes: [path]}).success).toBe(false)
    expect(syncStateSchema.safeParse({files: {[path]: {hash, syncedAt: '2026-02-02T10:00:00Z'}}}).success).toBe(false)
  })

  it.each(['PROJECT_MEMORY.md', 'jarvis/gemini.json', 'episodes/2026-02-02/notes.md', '.hidden.md', 'a..b.md'])('accepts %j', (path) => {
    expect(statusResponseSchema.safeParse({serverTime: '2026-02-02T10:00:00Z', files: {[path]: {updatedAt: '2026-02-02T10:00:00Z'}}}).success).toBe(true)
  })

  it('refuses a hash that is not lowercase sha256 hex', () => {
    const state = (h: string) => ({files: {'a.md': {hash: h, syncedAt: '2026-02-02T10:00:00Z'}}})
    expect(syncStateSchema.safeParse(state(hash)).success).toBe(true)
    expect(syncStateSchema.safeParse(state(hash.toUpperCase())).success).toBe(false)
    expect(syncStateSchema.safeParse(state(hash.slice(1))).success).toBe(false)
  })
})

describe('config', () => {
  it('refuses a server that is not http(s), an unknown agent and a project that is not a slug', () => {
    expect(problems(() => parseWith(nexusConfigSchema, {server: 'ftp://x', agentId: 'bob', project: 'My Project'}, '.nexus/config.json'))).toEqual([
      'server: must be an http(s) URL',
      expect.stringMatching(/^agentId: /),
      expect.stringMatching(/^project: must be 1-64 characters/),
    ])
  })

  it('refuses a sync setting of the wrong type', () => {
    expect(problems(() => parseWith(nexusConfigSchema, {sync: {maxRetries: '3'}}, 'c'))).toEqual([expect.stringMatching(/^sync\.maxRetries: /)])
  })
})
