import {createHash} from 'node:crypto'
import {copyFile, mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {basename, join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {BadInputError} from '../../src/errors.js'
import {universalMessageSchema} from '../../src/schemas/index.js'
import {
  appendGeminiSession,
  geminiCheckpointProblems,
  geminiHome,
  geminiProjectDirs,
  geminiSessionProblems,
  listGeminiSessions,
  NO_REPLY_TEXT,
  readClaudeSession,
  readGeminiSession,
  toGeminiCheckpointJson,
  type UniversalMessage,
  writeGeminiCheckpoint,
  writeGeminiSession,
} from '../../src/session/index.js'
import {clock, gist} from './helpers.js'

const FIXTURES = new URL('../../fixtures/transcripts/', import.meta.url).pathname
const LEGACY = 'session-2025-10-01T10-00-3b9e6f4a.json'
const JSONL = 'session-2026-08-20T09-20-7c2d9e1f.jsonl'
const BROKEN = 'session-2026-08-21T08-00-9e8d7c6b.jsonl'
const CHECKPOINT = 'checkpoint-fix%20tests.json'
const BARE = 'checkpoint-legacy.json'
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
const ROOT = '/home/dev/acme-api'
const sha = (s: string) => createHash('sha256').update(s).digest('hex')

const gfix = (name: string) => join(FIXTURES, 'gemini', name)



let dir: string
let env: NodeJS.ProcessEnv

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jarvis-gemini-'))
  env = {GEMINI_CLI_HOME: dir, HOME: join(dir, 'home')}
})
afterEach(async () => {
  await rm(dir, {recursive: true, force: true})
})

async function register(projectRoot: string, short: string): Promise<void> {
  await mkdir(join(dir, '.gemini'), {recursive: true})
  await writeFile(join(dir, '.gemini', 'projects.json'), JSON.stringify({projects: {[projectRoot]: short}}))
}

describe('gemini paths', () => {
  it('uses $GEMINI_CLI_HOME/.gemini, else ~/.gemini', () => {
    expect(geminiHome({GEMINI_CLI_HOME: '/g', HOME: '/h'})).toBe('/g/.gemini')
    expect(geminiHome({HOME: '/h'})).toBe('/h/.gemini')
  })

  it('names the project directory by sha256 of the root, and by its projects.json short name first when registered', async () => {
    expect(await geminiProjectDirs(ROOT, env)).toEqual([join(dir, '.gemini', 'tmp', sha(ROOT))])
    await register(ROOT, 'acme-api')
    expect(await geminiProjectDirs(ROOT, env)).toEqual([join(dir, '.gemini', 'tmp', 'acme-api'), join(dir, '.gemini', 'tmp', sha(ROOT))])
  })
})

describe('readGeminiSession', () => {
  it('reads a legacy .json session: tools renamed to the universal names, errors, an unknown tool as is, notices and slash commands left out', async () => {
    const t = await readGeminiSession(gfix(LEGACY))
    expect(t).toMatchObject({provider: 'gemini', sessionId: '3b9e6f4a-8c21-4d7e-b5f0-9a1c2d3e4f50', title: 'Fix failing sum test', warnings: []})
    expect(t.messages.map(gist)).toEqual([
      'user text Why does npm test fail? See the screenshot.',
      'assistant text Let me run the test suite first.',
      'assistant use Bash {"command":"npm test","description":"Run the test suite","dir_path":"."}',
      'assistant use Read {"absolute_path":"/home/dev/acme-api/src/summ.ts"}',
      `user result ${JSON.stringify({o: 'Output: FAIL src/sum.test.ts\nExit Code: 1'})}`,
      `user result ${JSON.stringify({e: 'File not found: /home/dev/acme-api/src/summ.ts'})}`,
      'assistant use save_memory {"fact":"The tests use vitest."}',
      `user result ${JSON.stringify({o: 'Okay, I have remembered that.'})}`,
      'assistant text `sum(1, 2)` returns 4 because `src/sum.ts` adds an extra `+ 1`.',
      'user text Thanks!',
      'assistant text You are welcome.',
    ])
    const [prompt, text, bash] = t.messages
    expect(prompt.metadata.images).toMatchObject([{mediaType: 'image/png', at: '/0/content/1', size: Buffer.from(PNG, 'base64').length}])
    expect(text.metadata).toMatchObject({model: 'gemini-2.5-pro', reasoning: [{subject: 'Running the tests', text: 'I will run the suite to see which assertion fails.'}]})
    expect(bash.metadata.toolName).toBe('run_shell_command')
    expect(t.messages[4].content.tool_result).toMatchObject({tool_use_id: 'run_shell_command_1759312819455_0', tool_name: 'Bash'})
    // the info notice and the /stats command ride along in the originals of the next message
    const thanks = t.messages.find((m) => m.content.text === 'Thanks!')!
    expect((thanks.metadata.original as Array<{type: string}>).map((r) => r.type)).toEqual(['info', 'user', 'user'])
    for (const m of t.messages) universalMessageSchema.parse(m)
  })

  it('replays a .jsonl session: upserts keep the last version at the first place, $rewindTo drops, $set titles, duplicate responses read once', async () => {
    const t = await readGeminiSession(gfix(JSONL))
    expect(t).toMatchObject({sessionId: '7c2d9e1f-4a5b-4c6d-8e7f-9a0b1c2d3e4f', title: 'Lint and list build', lastUpdated: '2026-08-20T09:22:05.001Z', warnings: []})
    expect(t.messages.map(gist)).toEqual([
      'user text Run the linter.',
      'assistant text Running the linter.',
      'assistant use Bash {"command":"npm run lint","run_in_background":false}',
      `user result ${JSON.stringify({o: 'Output: no problems\nExit Code: 0'})}`,
      'assistant text Lint passes.',
      'user text Instead, list the build folder.',
      'assistant use LS {"path":"build"}',
      `user result ${JSON.stringify({o: 'index.js\nindex.d.ts\nindex.js.map'})}`,
      'assistant text The build folder has 3 files.',
    ])
    // the kept record is the last upsert, verbatim
    const lines = (await readFile(gfix(JSONL), 'utf8')).split('\n')
    expect(JSON.stringify(t.messages[1].metadata.original?.[0])).toBe(lines[4])
  })

  it('reads a checkpoint {history, authType}: tag from the file name, context turn left out, thought signature noted', async () => {
    const t = await readGeminiSession(gfix(CHECKPOINT))
    expect(t).toMatchObject({sessionId: 'fix tests', tag: 'fix tests', warnings: []})
    expect(t.messages.map(gist)).toEqual([
      'user text Why does npm test fail? Fix it.',
      'assistant text Let me run the test suite first.',
      'assistant use Bash {"command":"npm test 2>&1 | tail -20","description":"Run the test suite"}',
      `user result ${JSON.stringify({o: 'Output: FAIL src/sum.test.ts\nExit Code: 1'})}`,
      'assistant use Edit {"file_path":"/home/dev/acme-api/src/sum.ts","old_string":"a + b + 1","new_string":"a + b","instruction":"Remove the extra + 1"}',
      `user result ${JSON.stringify({e: 'Failed to edit, could not find the string to replace.'})}`,
      'assistant text `sum(1, 2)` returns 4 because of an extra `+ 1`; the edit failed, the file differs from what I expected.',
    ])
    expect(t.messages[1].metadata.reasoning).toEqual([{text: '**Running the tests** I will look at the failure first.'}, {text: '', signed: true}])
  })

  it('reads the older bare-array checkpoint with its two context turns, pairing calls that have no id', async () => {
    const t = await readGeminiSession(gfix(BARE))
    expect(t.messages.map(gist)).toEqual([
      'user text What is in the src folder?',
      'assistant use list_directory {"path":"/Users/me/acme/src"}',
      `user result ${JSON.stringify({o: 'Directory listing for /Users/me/acme/src:\nindex.ts\nsum.ts'})}`,
      'assistant text It holds index.ts and sum.ts.',
    ])
  })

  it('skips a malformed line and a truncated last line with a warning naming file and line', async () => {
    const t = await readGeminiSession(gfix(BROKEN))
    expect(t.messages.map(gist)).toEqual(['user text Hello', 'assistant text Hi.'])
    expect(t.warnings.map((w) => w.replace(gfix(BROKEN), 'F').split(': ')[0])).toEqual(['F:3', 'F:5'])
    expect(t.warnings[1]).toContain('truncated last line')
  })

  it('refuses a file that is not a transcript with exit 2 naming it', async () => {
    const error = await readGeminiSession(gfix('not-a-transcript.json')).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BadInputError)
    expect((error as BadInputError).exit).toBe(2)
    expect((error as Error).message).toContain('not-a-transcript.json')
    await expect(readGeminiSession(join(FIXTURES, 'claude', 'not-a-transcript.jsonl'))).rejects.toBeInstanceOf(BadInputError)
    await expect(readGeminiSession(join(dir, 'missing.json'))).rejects.toBeInstanceOf(BadInputError)
  })

  it('finds the project root from the .project_root marker', async () => {
    const chats = join(dir, '.gemini', 'tmp', 'acme-api', 'chats')
    await mkdir(chats, {recursive: true})
    await writeFile(join(dir, '.gemini', 'tmp', 'acme-api', '.project_root'), `${ROOT}\n`)
    await copyFile(gfix(JSONL), join(chats, JSONL))
    expect((await readGeminiSession(join(chats, JSONL))).projectRoot).toBe(ROOT)
  })
})

describe('listGeminiSessions', () => {
  it('is empty when Gemini CLI has no directory for the project', async () => {
    expect(await listGeminiSessions('/nowhere', env)).toEqual([])
  })

  it('lists sessions and checkpoints of both directories, one per session id, no subagents', async () => {
    await register(ROOT, 'acme-api')
    const short = join(dir, '.gemini', 'tmp', 'acme-api')
    const hashed = join(dir, '.gemini', 'tmp', sha(ROOT))
    await mkdir(join(short, 'chats'), {recursive: true})
    await mkdir(join(hashed, 'chats'), {recursive: true})
    await copyFile(gfix(JSONL), join(short, 'chats', JSONL))
    await copyFile(gfix(LEGACY), join(hashed, 'chats', LEGACY))
    await copyFile(gfix(CHECKPOINT), join(short, CHECKPOINT))
    // a migrated pair: the .json and its newer .jsonl copy
    const migrated = JSON.parse(await readFile(gfix(LEGACY), 'utf8')) as Record<string, unknown>
    await writeFile(join(short, 'chats', LEGACY.replace('.json', '.jsonl')), `${JSON.stringify({...migrated, lastUpdated: '2025-10-02T00:00:00.000Z'})}\n`)
    await writeFile(join(short, 'chats', 'session-2026-01-01T00-00-subagent.json'), JSON.stringify({...migrated, sessionId: 'subagent-1', kind: 'subagent'}))
    await copyFile(gfix('not-a-transcript.json'), join(short, 'chats', 'session-2026-01-01T00-00-garbage1.json'))
    const list = await listGeminiSessions(ROOT, env)
    const byId = Object.fromEntries(list.map((s) => [s.sessionId, s]))
    expect(Object.keys(byId).sort()).toEqual(['3b9e6f4a-8c21-4d7e-b5f0-9a1c2d3e4f50', '7c2d9e1f-4a5b-4c6d-8e7f-9a0b1c2d3e4f', 'fix tests'])
    expect(byId['3b9e6f4a-8c21-4d7e-b5f0-9a1c2d3e4f50']).toMatchObject({path: join(short, 'chats', LEGACY.replace('.json', '.jsonl')), messageCount: 11})
    expect(byId['fix tests']).toMatchObject({tag: 'fix tests', messageCount: 7})
    expect(byId['7c2d9e1f-4a5b-4c6d-8e7f-9a0b1c2d3e4f']).toMatchObject({title: 'Lint and list build', lastActivity: '2026-08-20T09:22:05.001Z'})
  })
})

describe('toGeminiCheckpointJson / writeGeminiCheckpoint', () => {
  it('writes a Claude conversation as a checkpoint /chat resume opens: calls then responses, images inline, thinking as thoughts, a model text last', async () => {
    const claude = await readClaudeSession(join(FIXTURES, 'claude', '6b8f1c2a-0d3e-4f5a-9b7c-1a2b3c4d5e6f.jsonl'))
    const {text, notCarried} = toGeminiCheckpointJson(claude.messages, {projectRoot: ROOT, ...clock()})
    expect(geminiCheckpointProblems(text)).toEqual([])
    expect(text).toBe(toGeminiCheckpointJson(claude.messages, {projectRoot: ROOT, ...clock()}).text)
    const {history} = JSON.parse(text) as {history: Array<{role: string; parts: Array<Record<string, unknown>>}>}
    expect(history[0].parts[0].text).toContain('<session_context>')
    expect(history[1]).toEqual({role: 'model', parts: [{text: 'Got it. Thanks for the context!'}]})
    expect(history[2].parts[1]).toEqual({inlineData: {mimeType: 'image/png', data: PNG}})
    expect(history[3].parts.slice(0, 2)).toEqual([{text: 'Run the suite first, and read the source.', thought: true}, {text: 'Let me run the tests and read the file.'}])
    expect(history[3].parts[2]).toEqual({functionCall: {id: 'toolu_01A', name: 'run_shell_command', args: {command: 'npm test', description: 'Run the test suite'}}})
    expect(history[4].parts[1]).toEqual({functionResponse: {id: 'toolu_01B', name: 'read_file', response: {error: 'File does not exist.'}}})
    expect(history.at(-1)).toEqual({role: 'model', parts: [{text: '`sum(1, 2)` returned 4 because of an extra `+ 1` in src/lib/sum.ts. I removed it; the test passes now.'}]})
    expect(notCarried).toEqual(['1 thinking signature(s) dropped (the reasoning is carried as text)'])
    expect(text).not.toContain('signature')
  })

  it('closes with a model reply when the conversation does not end on one, and answers a dangling call', async () => {
    const base = {sessionId: 's', parentId: null, timestamp: '2026-01-01T00:00:00Z', metadata: {provider: 'claude'}}
    const messages: UniversalMessage[] = [
      {...base, id: '1', role: 'user', type: 'message', content: {text: 'Go'}},
      {...base, id: '2', role: 'assistant', type: 'tool_use', content: {tool_use: {tool_name: 'Bash', tool_input: {command: 'ls'}, tool_use_id: 'c1'}}},
    ]
    const {text, notCarried} = toGeminiCheckpointJson(messages, clock())
    expect(geminiCheckpointProblems(text)).toEqual([])
    const {history} = JSON.parse(text) as {history: Array<{role: string; parts: unknown[]}>}
    expect(history.slice(2)).toEqual([
      {role: 'user', parts: [{text: 'Go'}]},
      {role: 'model', parts: [{functionCall: {id: 'c1', name: 'run_shell_command', args: {command: 'ls'}}}]},
      {role: 'user', parts: [{functionResponse: {id: 'c1', name: 'run_shell_command', response: {error: '[Request interrupted by user for tool use]'}}}]},
      {role: 'model', parts: [{text: NO_REPLY_TEXT}]},
    ])
    expect(notCarried).toEqual(['1 tool call(s) without a result answered as interrupted', 'a closing model reply was added (Gemini needs the history to end on one)'])
    // reading it back drops the closing reply again
    const path = join(dir, 'checkpoint-x.json')
    await writeFile(path, text)
    expect((await readGeminiSession(path)).messages.map(gist).at(-1)).toBe(`user result ${JSON.stringify({e: '[Request interrupted by user for tool use]'})}`)
  })

  it('writes checkpoint-<encoded tag>.json into the hash directory, or the short one once registered', async () => {
    const claude = await readClaudeSession(join(FIXTURES, 'claude', '6b8f1c2a-0d3e-4f5a-9b7c-1a2b3c4d5e6f.jsonl'))
    const first = await writeGeminiCheckpoint(ROOT, 'fix tests/1', claude.messages, {env, ...clock()})
    expect(first.path).toBe(join(dir, '.gemini', 'tmp', sha(ROOT), 'checkpoint-fix%20tests%2F1.json'))
    await register(ROOT, 'acme-api')
    const second = await writeGeminiCheckpoint(ROOT, 'fix tests/1', claude.messages, {env, ...clock()})
    expect(second.path).toBe(join(dir, '.gemini', 'tmp', 'acme-api', 'checkpoint-fix%20tests%2F1.json'))
    expect(await readFile(second.path, 'utf8')).toBe(await readFile(first.path, 'utf8'))
    const back = await readGeminiSession(second.path)
    expect(back).toMatchObject({tag: 'fix tests/1', warnings: []})
    for (const m of back.messages) universalMessageSchema.parse(m)
    await expect(writeGeminiCheckpoint(ROOT, ' ', claude.messages, {env})).rejects.toBeInstanceOf(BadInputError)
  })
})

describe('writeGeminiSession', () => {
  it('writes a session gemini --resume opens: tool results on their gemini message, file name from the session id', async () => {
    const claude = await readClaudeSession(join(FIXTURES, 'claude', '6b8f1c2a-0d3e-4f5a-9b7c-1a2b3c4d5e6f.jsonl'))
    for (const format of ['json', 'jsonl'] as const) {
      const result = await writeGeminiSession(ROOT, claude.messages, {env, format, title: 'From Claude', ...clock()})
      expect(result.path).toBe(join(dir, '.gemini', 'tmp', sha(ROOT), 'chats', `session-2026-09-01T12-00-00000000.${format}`))
      const text = await readFile(result.path, 'utf8')
      expect(geminiSessionProblems(text, basename(result.path))).toEqual([])
      const back = await readGeminiSession(result.path)
      expect(back).toMatchObject({sessionId: result.sessionId, title: 'From Claude', startTime: '2026-09-01T12:00:00.000Z', warnings: []})
      expect(back.messages.map(gist)).toEqual(claude.messages.map(gist))
    }
  })

  it('appends to a session as Gemini CLI does: the bytes before stay, new records end on a gemini text', async () => {
    const at = '2026-09-01T12:30:00.000Z'
    const say = (id: string, role: 'user' | 'assistant', text: string): UniversalMessage => ({id, parentId: null, sessionId: 's', timestamp: at, role, type: 'message', content: {text}, metadata: {}})
    const call: UniversalMessage = {id: 'c', parentId: null, sessionId: 's', timestamp: at, role: 'assistant', type: 'tool_use', content: {tool_use: {tool_name: 'Bash', tool_input: {command: 'ls'}, tool_use_id: 'call_1'}}, metadata: {}}
    for (const format of ['json', 'jsonl'] as const) {
      const {path} = await writeGeminiSession(ROOT, [say('1', 'user', 'first'), say('2', 'assistant', 'one')], {env, format, ...clock()})
      const before = await readFile(path, 'utf8')
      // The new part ends on a call without a result: Gemini gets it answered as interrupted and a closing reply.
      const {notCarried} = await appendGeminiSession(path, [say('3', 'user', 'second'), call], clock())
      expect(notCarried).toEqual(['1 tool call(s) without a result answered as interrupted', 'a closing gemini reply was added (Gemini needs the session to end on one)'])
      const after = await readFile(path, 'utf8')
      if (format === 'jsonl') {
        expect(after.startsWith(before)).toBe(true)
        expect(JSON.parse(after.trimEnd().split('\n').at(-1)!)).toEqual({$set: {lastUpdated: '2026-09-01T12:00:00.000Z'}})
      }
      expect(geminiSessionProblems(after, basename(path))).toEqual([])
      expect((await readGeminiSession(path)).messages.map(gist)).toEqual([
        'user text first',
        'assistant text one',
        'user text second',
        'assistant use Bash {"command":"ls"}',
        'user result {"e":"[Request interrupted by user for tool use]"}',
      ])
      await rm(path)
    }
  })
})
