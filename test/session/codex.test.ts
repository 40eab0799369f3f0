/**
 * The Codex CLI rollout reader and writer without a process: the recorded-shape fixtures (fixtures/transcripts/codex),
 * the file rules Codex needs to list and resume a thread (codexRolloutProblems), appends, listing by project, and
 * round trips through Claude Code and Gemini CLI — on the fixtures and on any generated conversation (fast-check).
 */
import {readFileSync} from 'node:fs'
import {mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {basename, join} from 'node:path'

import fc from 'fast-check'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {messageKey} from '../../src/merge/transcript.js'
import {
  appendCodexSession,
  claudeSessionProblems,
  codexRolloutId,
  codexRolloutProblems,
  geminiSessionProblems,
  listCodexSessions,
  parseClaudeTranscript,
  parseCodexRollout,
  parseGeminiText,
  readClaudeSession,
  readCodexSession,
  REASONING_PREFIX,
  toClaudeSessionJsonl,
  toCodexRolloutJsonl,
  toGeminiSessionText,
  type UniversalMessage,
  writeCodexSession,
} from '../../src/session/index.js'
import {clock, gist} from './helpers.js'

const FIXTURES = new URL('../../fixtures/transcripts/', import.meta.url).pathname
const ROOT = '/home/dev/acme-api'
const MAIN = join(FIXTURES, 'codex', 'rollout-2026-08-20T09-30-00-0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f.jsonl')
const COMPACTED = join(FIXTURES, 'codex', 'rollout-2026-08-21T10-00-00-0198c1d3-0000-7000-8000-00000000c0a1.jsonl')
const BROKEN = join(FIXTURES, 'codex', 'rollout-2026-08-22T11-00-00-0198c1d4-0000-7000-8000-000000000b0c.jsonl')
const THREAD = '0123abcd-0000-7000-8000-000000000001'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jarvis-codex-'))
})
afterAll(async () => {
  await rm(dir, {recursive: true, force: true})
})

/** A Codex freeform call's raw input and the `{input}` object Claude and Gemini carry it as are the same call. */
function same(m: UniversalMessage): string {
  const use = m.content.tool_use
  if (m.type === 'tool_use' && typeof use?.tool_input === 'string') return gist({...m, content: {tool_use: {...use, tool_input: {input: use.tool_input}}}})
  return gist(m)
}

function viaCodex(messages: readonly UniversalMessage[]): {messages: UniversalMessage[]; text: string; notCarried: string[]} {
  const {text, notCarried} = toCodexRolloutJsonl(ROOT, messages, {sessionId: THREAD, ...clock()})
  // A conversation without a prompt has nothing for the picker's preview, and jarvis invents none.
  const prompted = messages.some((m) => m.role === 'user' && m.type === 'message')
  expect(codexRolloutProblems(text, THREAD)).toEqual(prompted ? [] : ['no user_message event (the resume picker hides the thread)'])
  const back = parseCodexRollout(text, `rollout-x-${THREAD}.jsonl`).transcript
  expect(back.warnings).toEqual([])
  return {messages: back.messages, text, notCarried}
}

function viaClaude(messages: readonly UniversalMessage[]): UniversalMessage[] {
  const sessionId = '99999999-0000-4000-8000-000000000000'
  const {text} = toClaudeSessionJsonl(ROOT, messages, {sessionId, ...clock()})
  expect(claudeSessionProblems(text, sessionId)).toEqual([])
  return parseClaudeTranscript(text, `${sessionId}.jsonl`).transcript.messages
}

function viaGemini(messages: readonly UniversalMessage[]): UniversalMessage[] {
  const name = 'session-2026-09-01T12-00-abcdef12.jsonl'
  const {text} = toGeminiSessionText(ROOT, messages, {sessionId: 'abcdef12-0000-4000-8000-000000000000', format: 'jsonl', ...clock()})
  expect(geminiSessionProblems(text, name)).toEqual([])
  return parseGeminiText(text, name).transcript.messages
}

describe('reading a Codex rollout', () => {
  it('gives the conversation Codex resumes: prompts, calls paired with outputs, reasoning as text; injected context and UI copies left out', async () => {
    const transcript = await readCodexSession(MAIN)
    expect(transcript).toMatchObject({provider: 'codex', sessionId: '0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f', projectRoot: ROOT, title: 'fix sum', warnings: []})
    expect(transcript.messages.map(gist)).toEqual([
      'user text Why does npm test fail? Fix it. Screenshot attached.',
      'assistant use Bash {"command":"npm test 2>&1 | tail -20","workdir":"/home/dev/acme-api"}',
      'user result {"o":"Process exited with code 1\\nOutput:\\nFAIL src/sum.test.ts\\n  Expected: 3\\n  Received: 4"}',
      'assistant use apply_patch "*** Begin Patch\\n*** Update File: src/sum.ts\\n@@\\n-  return a + b + 1\\n+  return a + b\\n*** End Patch\\n"',
      'user result {"o":"Success. Updated the following files:\\nM src/sum.ts\\n"}',
      'assistant text `sum(1, 2)` returned 4 because of an extra `+ 1`; fixed in src/sum.ts.',
      'user text Run the tests again.',
      'assistant use Bash {"command":"npm test"}',
      'assistant use view_image {"path":"coverage.png"}',
      'user result {"o":"Process exited with code 0\\nOutput:\\n3 passed"}',
      'user result {"o":"coverage.png"}',
      'assistant text All 3 tests pass now.',
    ])
    const [prompt, bash, result] = transcript.messages
    expect(prompt.metadata.images).toEqual([expect.objectContaining({mediaType: 'image/png', size: 70})])
    expect(bash.metadata).toMatchObject({toolName: 'exec_command', reasoning: [{text: '**Running tests** to see the failure', signed: true}]})
    expect(bash.content.tool_use?.tool_use_id).toBe(result.content.tool_result?.tool_use_id)
    expect(result.content.tool_result?.tool_name).toBe('Bash')
    expect(transcript.messages[3].metadata.reasoning).toEqual([{text: '', redacted: true}])
    // Nothing read is dropped: every line of the file is in some message's originals.
    const lines = (await readFile(MAIN, 'utf8')).trimEnd().split('\n')
    expect(transcript.messages.flatMap((m) => m.metadata.original ?? []).map((r) => JSON.stringify(r))).toEqual(lines)
  })

  it('resumes from the compaction’s replacement history and leaves out a rolled-back turn', async () => {
    expect((await readCodexSession(COMPACTED)).messages.map(gist)).toEqual([
      'user text old question before compaction',
      'assistant text Summary of the earlier work: sum fixed.',
      'user text kept question',
      'assistant text kept answer',
      'user text new question',
      'assistant text new answer',
    ])
  })

  it('skips a line that does not parse with a warning naming the file and line; refuses a file that is no rollout', async () => {
    const transcript = await readCodexSession(BROKEN)
    expect(transcript.messages.map(gist)).toEqual(['user text first question', 'assistant text first answer'])
    expect(transcript.warnings).toEqual([expect.stringMatching(new RegExp(`${basename(BROKEN)}:3: not JSON`)), expect.stringMatching(new RegExp(`${basename(BROKEN)}:5: truncated last line`))])
    await expect(readCodexSession(join(FIXTURES, 'claude', 'not-a-transcript.jsonl'))).rejects.toMatchObject({exit: 2, message: expect.stringMatching(/not-a-transcript\.jsonl is not a Codex CLI rollout/)})
    await expect(readCodexSession(join(dir, 'missing.jsonl'))).rejects.toMatchObject({exit: 2, message: expect.stringMatching(/no such transcript file/)})
  })
})

describe('writing a Codex rollout', () => {
  it('a thread Codex lists and resumes: session_meta first, each message with its UI copy, calls answered, reasoning as marked text', () => {
    const source = viaClaude(parseCodexRollout(readFileSyncText(MAIN), MAIN).transcript.messages)
    const {text, notCarried} = toCodexRolloutJsonl(ROOT, source, {sessionId: THREAD, ...clock()})
    const lines = text.trimEnd().split('\n').map((l) => JSON.parse(l) as {type: string; payload: Record<string, unknown>})
    expect(lines[0]).toMatchObject({type: 'session_meta', payload: {id: THREAD, cwd: ROOT, source: 'cli', originator: 'jarvis'}})
    expect(lines.filter((l) => l.payload.type === 'user_message').map((l) => l.payload.message)).toEqual(['Why does npm test fail? Fix it. Screenshot attached.', 'Run the tests again.'])
    expect(lines.filter((l) => l.payload.type === 'function_call').map((l) => [l.payload.name, JSON.parse(String(l.payload.arguments))])).toEqual([
      ['exec_command', {cmd: 'npm test 2>&1 | tail -20', workdir: ROOT}],
      ['apply_patch', {input: expect.stringContaining('*** Begin Patch')}],
      ['exec_command', {cmd: 'npm test'}],
      ['view_image', {path: 'coverage.png'}],
    ])
    const reasoning = lines.filter((l) => l.payload.type === 'message' && JSON.stringify(l.payload.content).includes('[reasoning carried over by jarvis]'))
    expect(reasoning).toHaveLength(1)
    expect(JSON.stringify(reasoning[0].payload.content)).toContain('Running tests')
    expect(text).not.toContain('gAAAAABo') // encrypted reasoning never leaves Codex
    // The image of the prompt and the image of the tool output travel as data URLs.
    expect(text.match(/data:image\/png;base64,/g)).toHaveLength(2)
    expect(notCarried.join('\n')).not.toMatch(/image/)
    expect(codexRolloutProblems(text, THREAD)).toEqual([])
  })

  it('names what it cannot carry, and answers a call that has no result as interrupted', () => {
    const at = '2026-09-01T10:00:00.000Z'
    const messages: UniversalMessage[] = [
      {id: 'u', parentId: null, sessionId: 's', timestamp: at, role: 'user', type: 'message', content: {text: 'go'}, metadata: {}},
      {id: 'a', parentId: 'u', sessionId: 's', timestamp: at, role: 'assistant', type: 'message', content: {text: 'ok'}, metadata: {provider: 'claude', reasoning: [{text: 'thinking', signed: true}, {text: '', redacted: true}]}},
      {id: 'c', parentId: 'a', sessionId: 's', timestamp: at, role: 'assistant', type: 'tool_use', content: {tool_use: {tool_name: 'Bash', tool_input: {command: 'ls'}, tool_use_id: 'toolu_1'}}, metadata: {}},
      {id: 'e', parentId: 'c', sessionId: 's', timestamp: at, role: 'assistant', type: 'tool_use', content: {tool_use: {tool_name: 'Read', tool_input: {file_path: 'a'}, tool_use_id: 'toolu_2'}}, metadata: {}},
      {id: 'r', parentId: 'e', sessionId: 's', timestamp: at, role: 'user', type: 'tool_result', content: {tool_result: {error: 'no such file', tool_use_id: 'toolu_2'}}, metadata: {}},
    ]
    const {messages: back, text, notCarried} = viaCodex(messages)
    expect(notCarried).toEqual([
      '1 reasoning signature(s) dropped (the reasoning is carried as text)',
      '1 reasoning block(s) carried as text',
      '1 redacted or encrypted reasoning dropped',
      '1 tool call(s) without a result answered as interrupted',
      '1 tool error flag(s) dropped (Codex records an output only; the error text is carried)',
    ])
    expect(back.map(gist)).toEqual(['user text go', 'assistant text ok', 'assistant use Bash {"command":"ls"}', 'assistant use Read {"file_path":"a"}', 'user result {"o":"no such file"}', 'user result {"o":"[Request interrupted by user for tool use]"}'])
    expect(back[1].metadata.reasoning).toEqual([{text: 'thinking'}])
    expect(text).toContain(`${JSON.stringify(REASONING_PREFIX).slice(1, -1)}thinking`)
  })

  it('appends after the last line, keeps every byte before it, and refuses nothing Codex wrote', async () => {
    const env = {CODEX_HOME: join(dir, 'home-append')}
    const at = (s: number) => new Date(Date.parse('2026-09-01T12:00:00Z') + s * 1000).toISOString()
    const say = (id: string, role: 'user' | 'assistant', text: string, s: number): UniversalMessage => ({id, parentId: null, sessionId: 's', timestamp: at(s), role, type: 'message', content: {text}, metadata: {}})
    const {path, sessionId} = await writeCodexSession(ROOT, [say('1', 'user', 'first', 1), say('2', 'assistant', 'one', 2)], {env, now: () => new Date('2026-09-01T12:00:00Z')})
    expect(codexRolloutId(basename(path))).toBe(sessionId)
    expect(path).toContain(join(env.CODEX_HOME, 'sessions', '2026', '09'))
    const before = await readFile(path, 'utf8')
    // An earlier clock than the file's last line: the appended lines still come after it.
    await appendCodexSession(path, [say('3', 'user', 'second', 0), say('4', 'assistant', 'two', 0)], {now: () => new Date('2020-01-01T00:00:00Z')})
    const after = await readFile(path, 'utf8')
    expect(after.startsWith(before)).toBe(true)
    expect(codexRolloutProblems(after, sessionId)).toEqual([])
    expect((await readCodexSession(path)).messages.map(gist)).toEqual(['user text first', 'assistant text one', 'user text second', 'assistant text two'])
  })

  it('lists only the threads started in the project, newest first', async () => {
    const env = {CODEX_HOME: join(dir, 'home-list')}
    const day = join(env.CODEX_HOME, 'sessions', '2026', '08', '20')
    await mkdir(day, {recursive: true})
    await writeFile(join(day, basename(MAIN)), await readFile(MAIN))
    await writeFile(join(day, basename(COMPACTED)), await readFile(COMPACTED))
    await writeFile(join(day, 'rollout-2026-08-20T11-00-00-0198c1d5-0000-7000-8000-000000000001.jsonl'), (await readFile(MAIN, 'utf8')).replaceAll(ROOT, '/elsewhere'))
    await writeFile(join(day, 'notes.txt'), 'not a rollout')
    const listed = await listCodexSessions(ROOT, env)
    expect(listed.map((s) => [s.sessionId, s.messageCount, s.title])).toEqual([
      ['0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f', 12, 'fix sum'],
      ['0198c1d3-0000-7000-8000-00000000c0a1', 6, undefined],
    ])
    expect(await listCodexSessions(ROOT, {CODEX_HOME: join(dir, 'no-such-home')})).toEqual([])
  })
})

const readFileSyncText = (path: string) => readFileSync(path, 'utf8')

describe('round trips', () => {
  it('Codex → Claude → Codex and Codex → Gemini → Codex keep every text, call and result', () => {
    const source = parseCodexRollout(readFileSyncText(MAIN), MAIN).transcript.messages
    for (const other of [viaClaude(source), viaGemini(source)]) {
      expect(other.map(same)).toEqual(source.map(same))
      const back = viaCodex(other).messages
      expect(back.map(same)).toEqual(source.map(same))
      expect(back.map((m) => m.metadata.toolName ?? m.content.tool_use?.tool_name)).toEqual(source.map((m) => m.metadata.toolName ?? m.content.tool_use?.tool_name))
    }
  })

  it('Claude and Gemini recordings → Codex → back keep every text, call and result', async () => {
    for (const path of [join(FIXTURES, 'claude', '6b8f1c2a-0d3e-4f5a-9b7c-1a2b3c4d5e6f.jsonl'), join(FIXTURES, 'claude', '8f0c2b6e-3d1a-4c53-9a51-2f7d9d4c1e10.jsonl')]) {
      const source = (await readClaudeSession(path)).messages
      const codex = viaCodex(source).messages
      // A tool error reaches Codex as its text (Codex has no error flag): compare the words, not the flag.
      const words = (m: UniversalMessage) => gist(m).replace('{"e":', '{"o":')
      expect(codex.map(words)).toEqual(source.map(words))
      expect(viaClaude(codex).map(words)).toEqual(source.map(words))
    }
  })

  const text = fc.stringMatching(/^[A-Za-z][A-Za-z0-9 .,!]{0,24}$/)
  // Universal names only: a call spelled with Codex's own name (exec_command) is read back as Bash, by design.
  const toolName = fc.constantFrom('Bash', 'Read', 'Grep', 'mcp__github__create_issue', 'update_plan')
  const toolInput = fc.dictionary(fc.constantFrom('command', 'cmd', 'path', 'file_path', 'plan', 'q'), fc.oneof(text, fc.boolean(), fc.integer()), {maxKeys: 4})
  const call = fc.record({name: toolName, input: toolInput, output: text})
  const turn = fc.oneof(
    fc.record({kind: fc.constant('user' as const), text}),
    fc.record({kind: fc.constant('assistant' as const), text: fc.option(text, {nil: undefined}), thought: fc.option(text, {nil: undefined}), calls: fc.array(call, {maxLength: 3})}),
  )
  type Spec = {kind: 'user'; text: string} | {kind: 'assistant'; text?: string; thought?: string; calls: Array<{name: string; input: Record<string, unknown>; output: string}>}

  function build(turns: Spec[]): UniversalMessage[] {
    const messages: UniversalMessage[] = []
    let i = 0
    const base = () => ({id: `m${++i}`, parentId: null, sessionId: 's', timestamp: '2026-01-01T00:00:00.000Z'})
    for (const t of turns) {
      if (t.kind === 'user') {
        messages.push({...base(), role: 'user', type: 'message', content: {text: t.text}, metadata: {}})
        continue
      }
      const reasoning = t.thought === undefined ? {} : {reasoning: [{text: t.thought}]}
      // Reasoning rides on the block after it (a reasoning-only block joins the next one, as it does in Claude Code).
      if (t.text !== undefined) messages.push({...base(), role: 'assistant', type: 'message', content: {text: t.text ?? ''}, metadata: {...reasoning}})
      const ids = t.calls.map((_, k) => `call_${i}_${k}`)
      t.calls.forEach((c, k) =>
        messages.push({...base(), role: 'assistant', type: 'tool_use', content: {tool_use: {tool_name: c.name, tool_input: c.input, tool_use_id: ids[k]}}, metadata: k === 0 && t.text === undefined ? {...reasoning} : {}}),
      )
      t.calls.forEach((c, k) => messages.push({...base(), role: 'user', type: 'tool_result', content: {tool_result: {output: c.output, tool_use_id: ids[k]}}, metadata: {}}))
    }
    return messages
  }
  const withThoughts = (m: UniversalMessage) => `${gist(m)} ${JSON.stringify((m.metadata.reasoning ?? []).map((r) => r.text))}`

  it('property: any conversation survives Codex → Claude → Codex and Claude → Codex → Gemini → Codex, reasoning included', () => {
    fc.assert(
      fc.property(fc.array(turn, {minLength: 1, maxLength: 6}), (turns) => {
        const source = build(turns)
        fc.pre(source.length > 0)
        const codex = viaCodex(source).messages
        expect(codex.map(withThoughts)).toEqual(source.map(withThoughts))
        expect(viaCodex(viaClaude(codex)).messages.map(withThoughts)).toEqual(source.map(withThoughts))
        const gemini = viaGemini(codex)
        expect(gemini.map(gist)).toEqual(source.map(gist))
        // The sync's content key sees the same conversation on both sides: nothing would be carried twice.
        expect(viaCodex(gemini).messages.map(messageKey)).toEqual(source.map(messageKey))
      }),
      {numRuns: 60},
    )
  })
})
