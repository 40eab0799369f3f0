import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {basename, join} from 'node:path'

import fc from 'fast-check'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {messageKey} from '../../src/merge/transcript.js'
import {
  claudeProjectSlug,
  claudeSessionProblems,
  geminiCheckpointProblems,
  geminiSessionProblems,
  readClaudeSession,
  readGeminiSession,
  toClaudeSessionJsonl,
  toGeminiCheckpointJson,
  toGeminiSessionText,
  type UniversalMessage,
  writeClaudeSession,
} from '../../src/session/index.js'
import {clock, gist} from './helpers.js'

const FIXTURES = new URL('../../fixtures/transcripts/', import.meta.url).pathname
const ROOT = '/home/dev/acme-api'
const V1 = '6b8f1c2a-0d3e-4f5a-9b7c-1a2b3c4d5e6f'
const V2 = '8f0c2b6e-3d1a-4c53-9a51-2f7d9d4c1e10'


/** Every user and assistant text, every tool call with its input, every result: what a round trip must keep. */

let dir: string
let n = 0
const file = (name: string) => join(dir, `${++n}-${name}`)

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jarvis-roundtrip-'))
})
afterAll(async () => {
  await rm(dir, {recursive: true, force: true})
})

async function viaGeminiCheckpoint(messages: UniversalMessage[]): Promise<UniversalMessage[]> {
  const {text} = toGeminiCheckpointJson(messages, {projectRoot: ROOT, ...clock()})
  expect(geminiCheckpointProblems(text)).toEqual([])
  const path = file('checkpoint-rt.json')
  await writeFile(path, text)
  const back = await readGeminiSession(path)
  expect(back.warnings).toEqual([])
  return back.messages
}

async function viaGeminiSession(messages: UniversalMessage[], format: 'json' | 'jsonl'): Promise<UniversalMessage[]> {
  const {text} = toGeminiSessionText(ROOT, messages, {sessionId: 'abcdef12-0000-4000-8000-000000000000', format, ...clock()})
  const path = file(`session-2026-09-01T12-00-abcdef12.${format}`)
  expect(geminiSessionProblems(text, basename(path).replace(/^\d+-/, ''))).toEqual([])
  await writeFile(path, text)
  const back = await readGeminiSession(path)
  expect(back.warnings).toEqual([])
  return back.messages
}

async function viaClaude(messages: UniversalMessage[]): Promise<UniversalMessage[]> {
  const sessionId = '99999999-0000-4000-8000-000000000000'
  const {text} = toClaudeSessionJsonl(ROOT, messages, {sessionId, ...clock()})
  expect(claudeSessionProblems(text, sessionId)).toEqual([])
  const path = join(await mkdtemp(join(dir, 'c-')), `${sessionId}.jsonl`)
  await writeFile(path, text)
  const back = await readClaudeSession(path)
  expect(back.warnings).toEqual([])
  return back.messages
}

describe('Claude → Gemini → Claude', () => {
  it.each([
    ['1.x linear', V1, {}],
    ['2.x resume view', V2, {}],
    ['2.x with the history before the compaction', V2, {history: 'full' as const}],
  ])('keeps every text, tool call and result (%s)', async (_, id, options) => {
    const source = (await readClaudeSession(join(FIXTURES, 'claude', `${id}.jsonl`), options)).messages
    for (const gemini of [await viaGeminiCheckpoint(source), await viaGeminiSession(source, 'json'), await viaGeminiSession(source, 'jsonl')]) {
      expect(gemini.map(gist)).toEqual(source.map(gist))
      const claude = await viaClaude(gemini)
      expect(claude.map(gist)).toEqual(source.map(gist))
      // the sync's content key sees the same conversation: nothing would be added twice
      expect(claude.map(messageKey)).toEqual(source.map(messageKey))
    }
  })
})

describe('Gemini → Claude → Gemini', () => {
  it.each([['session-2025-10-01T10-00-3b9e6f4a.json'], ['session-2026-08-20T09-20-7c2d9e1f.jsonl'], ['checkpoint-fix%20tests.json'], ['checkpoint-legacy.json']])(
    'keeps every text, tool call and result (%s)',
    async (name) => {
      const source = (await readGeminiSession(join(FIXTURES, 'gemini', name))).messages
      const claude = await viaClaude(source)
      expect(claude.map(gist)).toEqual(source.map(gist))
      for (const gemini of [await viaGeminiCheckpoint(claude), await viaGeminiSession(claude, 'json')]) {
        expect(gemini.map(gist)).toEqual(source.map(gist))
        expect(gemini.map(messageKey)).toEqual(source.map(messageKey))
        // and the Gemini tool names come back
        const names = (ms: UniversalMessage[]) => ms.filter((m) => m.type === 'tool_use').map((m) => m.metadata.toolName ?? m.content.tool_use?.tool_name)
        expect(names(gemini)).toEqual(names(source))
      }
    },
  )
})

describe('same-tool round trips are byte-identical in the records they kept', () => {
  it('Claude 1.x and 2.x: every chain line comes back byte for byte', async () => {
    for (const id of [V1, V2]) {
      const path = join(FIXTURES, 'claude', `${id}.jsonl`)
      const source = await readClaudeSession(path)
      const env = {CLAUDE_CONFIG_DIR: await mkdtemp(join(dir, 'cfg-'))}
      const written = await writeClaudeSession(ROOT, source.messages, {env, sessionId: id, ...clock()})
      expect(written.path).toBe(join(env.CLAUDE_CONFIG_DIR, 'projects', claudeProjectSlug(ROOT), `${id}.jsonl`))
      expect(written.notCarried).toEqual([])
      const out = (await readFile(written.path, 'utf8')).trimEnd().split('\n')
      const kept = source.messages.flatMap((m) => m.metadata.original ?? []).map((r) => JSON.stringify(r))
      const sourceLines = new Set((await readFile(path, 'utf8')).split('\n'))
      expect(kept.every((line) => sourceLines.has(line))).toBe(true)
      expect(out.slice(0, -1)).toEqual(kept)
      expect(JSON.parse(out.at(-1)!)).toMatchObject({type: 'last-prompt', sessionId: id})
    }
  })

  it('Claude 2.x through the compaction: only the re-attached parallel results change, and only their parentUuid', async () => {
    const path = join(FIXTURES, 'claude', `${V2}.jsonl`)
    const source = await readClaudeSession(path, {history: 'full'})
    const {text} = toClaudeSessionJsonl(ROOT, source.messages, {sessionId: V2, ...clock()})
    expect(claudeSessionProblems(text, V2)).toEqual([])
    const out = text.trimEnd().split('\n').slice(0, -1)
    const kept = source.messages.flatMap((m) => m.metadata.original ?? []).map((r) => JSON.stringify(r))
    expect(out).toHaveLength(kept.length)
    const changed = out.flatMap((line, i) => (line === kept[i] ? [] : [i]))
    expect(changed).toHaveLength(2)
    for (const i of changed) {
      const a = JSON.parse(out[i]) as Record<string, unknown>
      const b = JSON.parse(kept[i]) as Record<string, unknown>
      expect({...a, parentUuid: null}).toEqual({...b, parentUuid: null})
    }
  })

  it('a Claude session written under another id keeps uuids and rewrites only sessionId', async () => {
    const source = await readClaudeSession(join(FIXTURES, 'claude', `${V1}.jsonl`))
    const other = '12345678-0000-4000-8000-000000000000'
    const {text} = toClaudeSessionJsonl(ROOT, source.messages, {sessionId: other, ...clock()})
    expect(claudeSessionProblems(text, other)).toEqual([])
    const kept = source.messages.flatMap((m) => m.metadata.original ?? []) as Array<Record<string, unknown>>
    const out = text.trimEnd().split('\n').slice(0, -1).map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(out).toEqual(kept.map((r) => ({...r, sessionId: other})))
  })

  it('Gemini checkpoint → checkpoint: the same file, byte for byte', async () => {
    const path = join(FIXTURES, 'gemini', 'checkpoint-fix%20tests.json')
    const source = await readGeminiSession(path)
    const {text, notCarried} = toGeminiCheckpointJson(source.messages, {authType: 'oauth-personal', ...clock()})
    expect(text).toBe(await readFile(path, 'utf8'))
    expect(notCarried).toEqual([])
    const bare = join(FIXTURES, 'gemini', 'checkpoint-legacy.json')
    const legacy = await readGeminiSession(bare)
    const rewritten = JSON.parse(toGeminiCheckpointJson(legacy.messages, clock()).text) as {history: unknown[]}
    expect(rewritten.history).toEqual(JSON.parse(await readFile(bare, 'utf8')))
  })

  it('Gemini session → session: every kept record comes back verbatim, notices and commands included', async () => {
    for (const [name, format] of [
      ['session-2025-10-01T10-00-3b9e6f4a.json', 'json'],
      ['session-2026-08-20T09-20-7c2d9e1f.jsonl', 'jsonl'],
    ] as const) {
      const source = await readGeminiSession(join(FIXTURES, 'gemini', name))
      const sessionId = source.sessionId
      const {text, notCarried} = toGeminiSessionText(ROOT, source.messages, {sessionId, format, ...clock()})
      expect(notCarried).toEqual([])
      const kept = source.messages.flatMap((m) => m.metadata.original ?? [])
      const records = format === 'json' ? (JSON.parse(text) as {messages: unknown[]}).messages : text.trimEnd().split('\n').slice(1).map((l) => JSON.parse(l) as unknown)
      expect(records.map((r) => JSON.stringify(r))).toEqual(kept.map((r) => JSON.stringify(r)))
      if (format === 'jsonl') {
        const sourceLines = new Set((await readFile(join(FIXTURES, 'gemini', name), 'utf8')).split('\n'))
        expect(text.trimEnd().split('\n').slice(1).every((l) => sourceLines.has(l))).toBe(true)
      }
    }
  })
})

describe('any conversation survives both round trips (property)', () => {
  const text = fc.stringMatching(/^[A-Za-z][A-Za-z0-9 .,!]{0,24}$/)
  const toolName = fc.constantFrom('Bash', 'Read', 'Grep', 'TodoWrite', 'mcp__github__create_issue', 'save_memory', 'Glob')
  const toolInput = fc.dictionary(fc.constantFrom('command', 'path', 'dir_path', 'glob', 'file_path', 'todos', 'q'), fc.oneof(text, fc.boolean(), fc.integer()), {maxKeys: 4})
  const call = fc.record({name: toolName, input: toolInput, result: fc.oneof(fc.record({output: text}), fc.record({error: text}))})
  const turn = fc.oneof(
    fc.record({kind: fc.constant('user' as const), text}),
    fc.record({kind: fc.constant('assistant' as const), text: fc.option(text, {nil: undefined}), calls: fc.array(call, {maxLength: 3})}),
  )

  type CallSpec = {name: string; input: Record<string, unknown>; result: {output?: string; error?: string}}
  type TurnSpec = {kind: 'user'; text: string} | {kind: 'assistant'; text?: string; calls: CallSpec[]}

  function build(turns: TurnSpec[]): UniversalMessage[] {
    const messages: UniversalMessage[] = []
    let i = 0
    const base = () => ({id: `m${++i}`, parentId: null, sessionId: 's', timestamp: '2026-01-01T00:00:00.000Z', metadata: {}})
    for (const t of turns) {
      if (t.kind === 'user') {
        messages.push({...base(), role: 'user', type: 'message', content: {text: t.text}})
        continue
      }
      if (t.text !== undefined) messages.push({...base(), role: 'assistant', type: 'message', content: {text: t.text}})
      const ids = t.calls.map((_, k) => `call_${i}_${k}`)
      t.calls.forEach((c: CallSpec, k: number) => messages.push({...base(), role: 'assistant', type: 'tool_use', content: {tool_use: {tool_name: c.name, tool_input: c.input, tool_use_id: ids[k]}}}))
      t.calls.forEach((c: CallSpec, k: number) => messages.push({...base(), role: 'user', type: 'tool_result', content: {tool_result: {...c.result, tool_use_id: ids[k]}}}))
    }
    return messages
  }

  it('keeps every text, call and result Claude → Gemini → Claude and Gemini → Claude → Gemini', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(turn, {minLength: 1, maxLength: 6}), async (turns) => {
        const source = build(turns)
        fc.pre(source.length > 0)
        const viaG = await viaGeminiCheckpoint(source)
        expect(viaG.map(gist)).toEqual(source.map(gist))
        expect((await viaClaude(viaG)).map(gist)).toEqual(source.map(gist))
        const viaC = await viaClaude(source)
        expect(viaC.map(gist)).toEqual(source.map(gist))
        expect((await viaGeminiSession(viaC, 'json')).map(gist)).toEqual(source.map(gist))
      }),
      {numRuns: 40},
    )
  })
})
