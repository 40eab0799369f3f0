import {describe, expect, it} from 'vitest'

import {parseJsonFile} from '../../src/schemas/index.js'
import {publishedSchemas} from '../../src/schemas/json-schema.js'
import {makeAjv, seedFixtures} from './helpers.js'

const ajv = makeAjv()
const fixtures = seedFixtures()

describe('seed fixtures', () => {
  it.each(fixtures.map((f) => [f.file, f] as const))('%s validates against its published JSON Schema and its zod schema', (_, fixture) => {
    const validate = ajv.getSchema(`${fixture.schema}.schema.json`)
    expect(validate, `docs/schemas/${fixture.schema}.schema.json`).toBeDefined()
    const value: unknown = JSON.parse(fixture.text)
    expect(validate!(value) ? [] : validate!.errors).toEqual([])
    expect(() => parseJsonFile(publishedSchemas[fixture.schema], fixture.text, fixture.file)).not.toThrow()
  })

  it('covers every published schema with at least one fixture', () => {
    const covered = new Set(fixtures.map((f) => f.schema))
    expect(Object.keys(publishedSchemas).filter((name) => !covered.has(name as never))).toEqual([])
  })

  it('holds the three events of seed 001 §13 verbatim', () => {
    const events = fixtures.filter((f) => f.file.startsWith('memory-event.example-'))
    expect(events.map((f) => (JSON.parse(f.text) as {dedupe_key: string}).dedupe_key)).toEqual([
      'telegram_bot_token_location',
      'gateway_auth_401_issue',
      'memory_protocol_v1',
    ])
  })

  it('fills the seed defaults into a config that names only some settings', () => {
    const config = parseJsonFile(publishedSchemas['nexus-config'], '{"sync": {"maxRetries": 5}}', 'config.json')
    expect(config.sync).toEqual({enabled: true, autoSync: true, incrementalSync: true, deduplicateMessages: true, maxRetries: 5, retryDelay: 1000, lockTimeout: 5000, requestTimeout: 60_000})
  })
})
