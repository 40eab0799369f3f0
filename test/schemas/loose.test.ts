import {describe, expect, it} from 'vitest'

import {
  memoryEventSchema,
  nexusConfigSchema,
  sessionRegistrySchema,
  statusResponseSchema,
  syncStateSchema,
  universalMessageSchema,
  workerMemorySchema,
  wsMessageSchema,
} from '../../src/schemas/index.js'
import {publishedSchemas} from '../../src/schemas/json-schema.js'
import {seedFixtures} from './helpers.js'

/** What a read-modify-write does: parse, then serialize as jarvis writes JSON. */
function rewrite(schema: {parse(v: unknown): unknown}, value: unknown): unknown {
  return JSON.parse(JSON.stringify(schema.parse(value), null, 2)) as unknown
}

const future = {addedBy: 'jarvis 9.0', nested: {list: [1, 'two']}}

describe('unknown fields survive a rewrite (seed 001 §12)', () => {
  it.each(seedFixtures().map((f) => [f.file, f] as const))('%s keeps a top-level field it does not know', (_, fixture) => {
    const value = {...(JSON.parse(fixture.text) as object), x_future: future}
    expect(rewrite(publishedSchemas[fixture.schema], value)).toMatchObject({x_future: future})
  })

  it.each(seedFixtures().map((f) => [f.file, f] as const))('%s reads back the same after one rewrite', (_, fixture) => {
    const schema = publishedSchemas[fixture.schema]
    const once = rewrite(schema, JSON.parse(fixture.text))
    expect(rewrite(schema, once)).toEqual(once)
  })

  it('keeps unknown fields nested in worker memory', () => {
    const out = rewrite(workerMemorySchema, {
      workerId: 'gemini',
      recentTasks: [{taskId: 't1', timestamp: '2026-02-02T10:00:00Z', type: 'x', success: true, x_future: future}],
      context: {lastFiles: ['a'], x_future: future},
      performance: {errorRate: 0.1, x_future: future},
    })
    expect(out).toMatchObject({recentTasks: [{x_future: future}], context: {x_future: future}, performance: {x_future: future}})
  })

  it('keeps unknown fields nested in events, messages, state and wire bodies', () => {
    const event = {
      agent_id: 'claude',
      run_id: 'r',
      scope: 'global',
      kind: 'fact',
      dedupe_key: 'k',
      confidence: 'low',
      content_md: 'x',
      source: {system: 'cli', x_future: future},
    }
    expect(rewrite(memoryEventSchema, event)).toMatchObject({source: {x_future: future}})

    const message = {
      id: 'm',
      sessionId: 's',
      timestamp: '2026-02-02T10:00:00Z',
      role: 'assistant',
      type: 'tool_use',
      content: {tool_use: {tool_name: 'bash', tool_input: {cmd: 'ls'}, x_future: future}, x_future: future},
      metadata: {provider: 'claude', x_future: future},
    }
    expect(rewrite(universalMessageSchema, message)).toMatchObject({
      content: {tool_use: {x_future: future}, x_future: future},
      metadata: {x_future: future},
    })

    const hash = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'
    expect(rewrite(syncStateSchema, {files: {'a.md': {hash, syncedAt: '2026-02-02T10:00:00Z', x_future: future}}})).toMatchObject({
      files: {'a.md': {x_future: future}},
    })
    expect(rewrite(nexusConfigSchema, {sync: {x_future: future}})).toMatchObject({sync: {x_future: future, maxRetries: 3}})
    expect(
      rewrite(sessionRegistrySchema, {
        sessions: [
          {
            sessionId: 's',
            projectPath: '/p',
            createdAt: '2026-02-02T10:00:00Z',
            lastActivity: '2026-02-02T10:00:00Z',
            providers: [{provider: 'claude', sessionId: 's', messageCount: 1, x_future: future}],
          },
        ],
      }),
    ).toMatchObject({sessions: [{providers: [{x_future: future}]}]})
    expect(rewrite(statusResponseSchema, {serverTime: '2026-02-02T10:00:00Z', files: {'a.md': {updatedAt: '2026-02-02T10:00:00Z', x_future: future}}})).toMatchObject({
      files: {'a.md': {x_future: future}},
    })
    expect(rewrite(wsMessageSchema, {type: 'MEM_UPDATE', path: 'a.md', x_future: future})).toMatchObject({x_future: future})
  })

  it('fills defaults into a worker memory that names only its worker', () => {
    expect(workerMemorySchema.parse({workerId: 'claude'})).toEqual({
      workerId: 'claude',
      recentTasks: [],
      expertise: {},
      context: {lastFiles: [], lastTopics: [], knownIssues: []},
    })
  })
})
