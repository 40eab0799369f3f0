import {createHash} from 'node:crypto'
import {copyFile, mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {BadInputError} from '../../src/errors.js'
import {universalMessageSchema} from '../../src/schemas/index.js'
import {
  appendClaudeSession,
  claudeHome,
  claudeProjectSlug,
  claudeSessionProblems,
  listClaudeSessions,
  readClaudeSession,
  readGeminiSession,
  REASONING_PREFIX,
  type UniversalMessage,
  writeClaudeSession,
} from '../../src/session/index.js'
import {clock, gist} from './helpers.js'

const FIXTURES = new URL('../../fixtures/transcripts/', import.meta.url).pathname
const V1 = '6b8f1c2a-0d3e-4f5a-9b7c-1a2b3c4d5e6f'
const V2 = '8f0c2b6e-3d1a-4c53-9a51-2f7d9d4c1e10'
const BROKEN = '3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f'
const EMPTY = '44444444-4444-4444-8444-444444444444'
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
const ROOT = '/home/dev/acme-api'

const fixture = (name: string) => join(FIXTURES, name)
const claudeFixture = (id: string) => fixture(`claude/${id}.jsonl`)



let dir: string
let env: NodeJS.ProcessEnv

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jarvis-claude-'))
  env = {CLAUDE_CONFIG_DIR: join(dir, 'claude'), HOME: dir}
})
afterEach(async () => {
  await rm(dir, {recursive: true, force: true})
})

async function install(id: string, projectRoot = ROOT): Promise<string> {
  const target = join(dir, 'claude', 'projects', claudeProjectSlug(projectRoot), `${id}.jsonl`)
  await mkdir(join(target, '..'), {recursive: true})
  await copyFile(claudeFixture(id), target)
  return target
}

describe('claude paths', () => {
  it('uses $CLAUDE_CONFIG_DIR, else ~/.claude', () => {
    expect(claudeHome({CLAUDE_CONFIG_DIR: '/cfg', HOME: '/h'})).toBe('/cfg')
    expect(claudeHome({HOME: '/h'})).toBe('/h/.claude')
  })

  it('turns every character outside [A-Za-z0-9] into "-"', () => {
    expect(claudeProjectSlug('/Users/me/my_app.v2')).toBe('-Users-me-my-app-v2')
    expect(claudeProjectSlug('C:\\git\\cc-plus')).toBe('C--git-cc-plus')
    expect(claudeProjectSlug('/home/ä b/😀')).toBe('-home---b---')
  })

  it('cuts a slug over 200 characters and adds the base-36 Java hash of the raw path', () => {
    const long = `/home/dev/${'very-long_directory.name/'.repeat(12)}project`
    let h = 0
    for (const unit of long) for (let i = 0; i < unit.length; i++) h = (Math.imul(h, 31) + unit.charCodeAt(i)) | 0
    const slug = claudeProjectSlug(long)
    expect(slug).toBe(`${long.replace(/[^a-zA-Z0-9]/g, '-').slice(0, 200)}-${Math.abs(h).toString(36)}`)
    expect(claudeProjectSlug('/short')).toBe('-short')
  })
})

describe('readClaudeSession', () => {
  it('rebuilds a 1.x linear session: blocks joined by response, sidechain left out, image by reference, thinking as reasoning', async () => {
    const t = await readClaudeSession(claudeFixture(V1))
    expect(t).toMatchObject({provider: 'claude', sessionId: V1, projectRoot: ROOT, title: 'Fix failing sum test', warnings: [], notCarried: []})
    expect(t.messages.map(gist)).toEqual([
      'user text Why does `npm test` fail? Screenshot: [Image #1]',
      'assistant text Let me run the tests and read the file.',
      'assistant use Bash {"command":"npm test","description":"Run the test suite"}',
      'assistant use Read {"file_path":"/home/dev/acme-api/src/summ.ts"}',
      `user result ${JSON.stringify({o: 'FAIL src/sum.test.ts\n  Expected: 3\n  Received: 4'})}`,
      `user result ${JSON.stringify({e: 'File does not exist.'})}`,
      'assistant use Task {"subagent_type":"general-purpose","description":"Find sum.ts","prompt":"Find the file that defines sum."}',
      `user result ${JSON.stringify({o: 'It is src/lib/sum.ts.'})}`,
      'assistant use Edit {"file_path":"/home/dev/acme-api/src/lib/sum.ts","old_string":"a + b + 1","new_string":"a + b"}',
      `user result ${JSON.stringify({o: 'The file /home/dev/acme-api/src/lib/sum.ts has been updated.'})}`,
      'assistant text `sum(1, 2)` returned 4 because of an extra `+ 1` in src/lib/sum.ts. I removed it; the test passes now.',
    ])
    const [prompt, text, bash, read] = t.messages
    const bytes = Buffer.from(PNG, 'base64')
    expect(prompt.metadata.images).toEqual([{mediaType: 'image/png', size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), at: '/0/message/content/1'}])
    expect(JSON.stringify(prompt.content)).not.toContain(PNG)
    expect(text.metadata.reasoning).toEqual([{text: 'Run the suite first, and read the source.', signed: true}])
    expect(new Set([text, bash, read].map((m) => m.metadata.responseId))).toEqual(new Set(['msg_01A']))
    expect(bash.content.tool_use?.tool_use_id).toBe('toolu_01A')
    expect(t.messages[4].content.tool_result?.tool_use_id).toBe('toolu_01A')
    // the sidechain of the Task call is not part of the conversation
    expect(t.messages.some((m) => m.content.text === 'Find the file that defines sum.')).toBe(false)
  })

  it('keeps every chain entry verbatim in metadata.original and links messages linearly', async () => {
    const t = await readClaudeSession(claudeFixture(V1))
    const lines = (await readFile(claudeFixture(V1), 'utf8')).trimEnd().split('\n')
    const kept = t.messages.flatMap((m) => m.metadata.original ?? []).map((r) => JSON.stringify(r))
    const chainLines = lines.filter((l) => !l.includes('"isSidechain":true') && !l.startsWith('{"type":"summary"'))
    expect(kept).toEqual(chainLines)
    t.messages.forEach((m, i) => {
      expect(universalMessageSchema.parse(m)).toBeTruthy()
      expect(m.parentId).toBe(i === 0 ? null : t.messages[i - 1].id)
      expect(m.sessionId).toBe(V1)
    })
  })

  it('resumes a 2.x session from the compaction and the last-prompt leaf, leaving the rewound branch out', async () => {
    const t = await readClaudeSession(claudeFixture(V2))
    expect(t.title).toBe('Fix sum test')
    expect(t.messages.map(gist)).toEqual([
      'user text This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\nLint passes; src/sum.test.ts fails.',
      'user text Now fix the failing test.',
      'assistant use Edit {"file_path":"/home/dev/acme-api/src/sum.ts","old_string":"a + b + 1","new_string":"a + b","replace_all":false}',
      `user result ${JSON.stringify({o: 'The file /home/dev/acme-api/src/sum.ts has been updated.'})}`,
      'assistant text Fixed: removed the extra `+ 1`.',
      'user text Instead, update the changelog.',
      'assistant text CHANGELOG.md now lists the fix.',
    ])
    expect(t.messages[0].metadata.kind).toBe('compact-summary')
    // the compact boundary rides along with the summary it introduces
    expect((t.messages[0].metadata.original as Array<{subtype?: string}>)[0].subtype).toBe('compact_boundary')
  })

  it('reads through the compaction with history "full", putting back parallel results threaded to their own tool_use', async () => {
    const t = await readClaudeSession(claudeFixture(V2), {history: 'full'})
    const gists = t.messages.map(gist)
    expect(gists.slice(0, 6)).toEqual([
      'user text Run the linter and the tests.',
      'assistant use Bash {"command":"npm run lint","description":"Lint"}',
      'assistant use Bash {"command":"npm test","description":"Test","run_in_background":false}',
      `user result ${JSON.stringify({o: 'No lint errors.'})}`,
      `user result ${JSON.stringify({e: 'Exit code 1\nFAIL src/sum.test.ts'})}`,
      'assistant text Lint passes; one test fails in src/sum.test.ts.',
    ])
    expect(t.messages[1].metadata.reasoning).toEqual([{text: 'Both commands are independent; run them in parallel.', signed: true}])
    expect(gists).toContain('user text Now fix the failing test.')
    expect(gists).not.toContain('user text Also bump the version.')
  })

  it('takes the newest entry when there is no leaf pointer, and follows a stale pointer to its newest descendant', async () => {
    const lines = (await readFile(claudeFixture(V2), 'utf8')).trimEnd().split('\n')
    const noPointer = join(dir, 'no-pointer.jsonl')
    await writeFile(noPointer, `${lines.filter((l) => !l.startsWith('{"type":"last-prompt"')).join('\n')}\n`)
    expect((await readClaudeSession(noPointer)).messages.at(-1)?.content.text).toBe('CHANGELOG.md now lists the fix.')
    const stale = join(dir, 'stale.jsonl')
    const pointer = lines.findIndex((l) => l.includes('"leafUuid":"22222222-2222-4222-8222-000000000020"'))
    const v17 = lines.findIndex((l) => l.includes('"uuid":"22222222-2222-4222-8222-000000000017"'))
    // A pointer at the user prompt of the abandoned branch, whose answer was written after it.
    const rewritten = lines.filter((_, i) => i !== pointer)
    rewritten.splice(v17 + 1, 0, JSON.stringify({type: 'last-prompt', leafUuid: '22222222-2222-4222-8222-000000000017', sessionId: V2}))
    await writeFile(stale, `${rewritten.join('\n')}\n`)
    expect((await readClaudeSession(stale)).messages.at(-1)?.content.text).toBe('Bumped to 1.0.1.')
  })

  it('skips a malformed line and a truncated last line with a warning naming file and line', async () => {
    const path = claudeFixture(BROKEN)
    const t = await readClaudeSession(path)
    expect(t.messages.map(gist)).toEqual(['user text Hello', 'assistant text Hi! What shall we do?', 'user text List the files.'])
    expect(t.warnings).toHaveLength(2)
    expect(t.warnings[0]).toMatch(new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2: not JSON`))
    expect(t.warnings[1]).toMatch(/:5: truncated last line/)
  })

  it('reads a metadata-only or empty file as an empty session', async () => {
    const t = await readClaudeSession(claudeFixture(EMPTY))
    expect(t).toMatchObject({messages: [], title: 'Nothing yet', warnings: []})
    const empty = join(dir, 'empty.jsonl')
    await writeFile(empty, '')
    expect((await readClaudeSession(empty)).messages).toEqual([])
  })

  it('refuses a file that is not a transcript, and a missing file, with exit 2 naming it', async () => {
    const path = fixture('claude/not-a-transcript.jsonl')
    const error = await readClaudeSession(path).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BadInputError)
    expect((error as BadInputError).exit).toBe(2)
    expect((error as Error).message).toContain(path)
    await expect(readClaudeSession(fixture('gemini/session-2025-10-01T10-00-3b9e6f4a.json'))).rejects.toBeInstanceOf(BadInputError)
    await expect(readClaudeSession(join(dir, 'nope.jsonl'))).rejects.toThrow(/nope\.jsonl/)
  })
})

describe('listClaudeSessions', () => {
  it('is empty when Claude Code has no directory for the project', async () => {
    expect(await listClaudeSessions('/nowhere', env)).toEqual([])
    expect(await listClaudeSessions('/nowhere', {CLAUDE_CONFIG_DIR: join(dir, 'missing')})).toEqual([])
  })

  it('lists the sessions of the project newest first, skipping files that are not transcripts', async () => {
    await install(V1)
    await install(V2)
    await install(EMPTY)
    const slugDir = join(dir, 'claude', 'projects', claudeProjectSlug(ROOT))
    await copyFile(fixture('claude/not-a-transcript.jsonl'), join(slugDir, 'not-a-transcript.jsonl'))
    const list = await listClaudeSessions(ROOT, env)
    // a session without any timestamp is as recent as its file
    expect(list.map((s) => [s.sessionId, s.messageCount, s.title])).toEqual([
      [EMPTY, 0, 'Nothing yet'],
      [V2, 7, 'Fix sum test'],
      [V1, 11, 'Fix failing sum test'],
    ])
    expect(list[1]).toMatchObject({provider: 'claude', lastActivity: '2026-08-20T10:02:04.000Z', path: join(slugDir, `${V2}.jsonl`)})
  })

  it('finds a long project path under any hash suffix', async () => {
    const long = `/srv/${'x'.repeat(240)}`
    const other = join(dir, 'claude', 'projects', `${claudeProjectSlug(long).slice(0, 200)}-oldhash`)
    await mkdir(other, {recursive: true})
    await copyFile(claudeFixture(V1), join(other, `${V1}.jsonl`))
    expect((await listClaudeSessions(long, env)).map((s) => s.sessionId)).toEqual([V1])
  })
})

describe('writeClaudeSession', () => {
  it('writes a Gemini conversation as a resumable Claude session: linear, paired, increasing, entrypoint cli, closing last-prompt', async () => {
    const gemini = await readGeminiSession(fixture('gemini/session-2025-10-01T10-00-3b9e6f4a.json'))
    const result = await writeClaudeSession(ROOT, gemini.messages, {env, title: 'From Gemini', ...clock()})
    expect(result.path).toBe(join(dir, 'claude', 'projects', '-home-dev-acme-api', `${result.sessionId}.jsonl`))
    const text = await readFile(result.path, 'utf8')
    expect(claudeSessionProblems(text, result.sessionId)).toEqual([])
    const lines = text.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    const entries = lines.filter((l) => l.uuid !== undefined)
    expect(entries.every((e) => e.entrypoint === 'cli' && e.cwd === ROOT && e.userType === 'external')).toBe(true)
    expect(lines.at(-1)).toEqual({type: 'last-prompt', lastPrompt: 'Thanks!', leafUuid: entries.at(-1)!.uuid, sessionId: result.sessionId})
    expect(lines.at(-2)).toEqual({type: 'custom-title', customTitle: 'From Gemini', sessionId: result.sessionId})
    // never a thinking block: Gemini's thoughts arrive as marked text
    expect(text).not.toContain('"type":"thinking"')
    expect(text).toContain(JSON.stringify(`${REASONING_PREFIX}**Running the tests** I will run the suite to see which assertion fails.`).slice(1, -1))
    expect(result.notCarried).toContain('1 reasoning block(s) carried as text')
    // one message.id per response: the text and both calls of the first Gemini turn
    const firstResponse = entries.filter((e) => e.type === 'assistant').slice(0, 4).map((e) => (e.message as {id: string}).id)
    expect(new Set(firstResponse).size).toBe(1)
    // read back: the reader's own schema, no warnings, same conversation
    const back = await readClaudeSession(result.path)
    expect(back.warnings).toEqual([])
    for (const m of back.messages) universalMessageSchema.parse(m)
    expect(back.messages.map(gist)).toEqual(gemini.messages.map(gist))
    expect(back.messages[0].metadata.images?.[0]).toMatchObject({mediaType: 'image/png'})
  })

  it('is byte-for-byte deterministic with an injected clock and id generator, and refuses to overwrite', async () => {
    const gemini = await readGeminiSession(fixture('gemini/session-2026-08-20T09-20-7c2d9e1f.jsonl'))
    const a = await writeClaudeSession(ROOT, gemini.messages, {env, sessionId: 'aaaaaaaa-0000-4000-8000-000000000001', ...clock()})
    const first = await readFile(a.path, 'utf8')
    await expect(writeClaudeSession(ROOT, gemini.messages, {env, sessionId: a.sessionId, ...clock()})).rejects.toBeInstanceOf(BadInputError)
    await writeClaudeSession(ROOT, gemini.messages, {env, sessionId: a.sessionId, overwrite: true, ...clock()})
    expect(await readFile(a.path, 'utf8')).toBe(first)
    await expect(writeClaudeSession(ROOT, [], {env, ...clock()})).rejects.toBeInstanceOf(BadInputError)
  })

  it('answers a tool call that has no result, carries an unknown tool as is, and turns an orphan result into text', async () => {
    const base = {sessionId: 's', parentId: null, metadata: {provider: 'gemini'}}
    const messages: UniversalMessage[] = [
      {...base, id: '1', timestamp: '2026-01-01T00:00:00Z', role: 'user', type: 'message', content: {text: 'Go'}},
      {...base, id: '2', timestamp: '2026-01-01T00:00:00Z', role: 'assistant', type: 'tool_use', content: {tool_use: {tool_name: 'save_memory', tool_input: {fact: 'x'}, tool_use_id: 'c1'}}},
      {...base, id: '3', timestamp: '2026-01-01T00:00:00Z', role: 'user', type: 'tool_result', content: {tool_result: {output: 'lost', tool_use_id: 'zz'}}},
      {...base, id: '4', timestamp: '2026-01-01T00:00:00Z', role: 'assistant', type: 'message', content: {text: 'Done'}},
    ]
    const result = await writeClaudeSession(ROOT, messages, {env, ...clock()})
    const text = await readFile(result.path, 'utf8')
    expect(claudeSessionProblems(text, result.sessionId)).toEqual([])
    const back = await readClaudeSession(result.path)
    expect(back.messages.map(gist)).toEqual([
      'user text Go',
      'assistant use save_memory {"fact":"x"}',
      `user result ${JSON.stringify({e: '[Request interrupted by user for tool use]'})}`,
      'user text [tool result zz] lost',
      'assistant text Done',
    ])
    expect(result.notCarried).toEqual(['1 tool call(s) without a result answered as interrupted', 'a tool result without its call (zz) was carried as user text'])
  })
})

describe('appendClaudeSession', () => {
  it('chains new entries to the current leaf, after every timestamp in the file, keeping the old bytes', async () => {
    const path = await install(V2)
    const before = await readFile(path, 'utf8')
    const gemini = await readGeminiSession(fixture('gemini/session-2026-08-20T09-20-7c2d9e1f.jsonl'))
    const {notCarried} = await appendClaudeSession(path, gemini.messages.slice(0, 5), clock())
    expect(notCarried).toContain('1 reasoning block(s) carried as text')
    const after = await readFile(path, 'utf8')
    expect(after.startsWith(before)).toBe(true)
    const added = after.slice(before.length).trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    const entries = added.filter((l) => l.uuid !== undefined)
    expect(entries[0].parentUuid).toBe('22222222-2222-4222-8222-000000000020')
    expect(entries.every((e) => e.sessionId === V2 && e.cwd === ROOT && e.version === '2.1.240' && e.gitBranch === 'main')).toBe(true)
    expect(Date.parse(entries[0].timestamp as string)).toBeGreaterThan(Date.parse('2026-08-20T10:02:04.000Z'))
    expect(added.at(-1)).toEqual({type: 'last-prompt', lastPrompt: 'Run the linter.', leafUuid: entries.at(-1)!.uuid, sessionId: V2})
    const back = await readClaudeSession(path)
    expect(back.messages.slice(-5).map(gist)).toEqual(gemini.messages.slice(0, 5).map(gist))
    expect(back.messages.slice(0, 7).map(gist)).toEqual((await readClaudeSession(claudeFixture(V2))).messages.map(gist))
  })

  it('terminates an unterminated last line before appending, and does nothing for no messages', async () => {
    const path = join(dir, `${BROKEN}.jsonl`)
    await copyFile(claudeFixture(BROKEN), path)
    const before = await readFile(path, 'utf8')
    expect(await appendClaudeSession(path, [], clock())).toEqual({notCarried: []})
    expect(await readFile(path, 'utf8')).toBe(before)
    const base = {sessionId: 's', parentId: null, metadata: {}}
    await appendClaudeSession(path, [{...base, id: 'x', timestamp: '2026-01-01T00:00:00Z', role: 'assistant', type: 'message', content: {text: 'Here they are.'}}], clock())
    const t = await readClaudeSession(path)
    expect(t.messages.map(gist).at(-1)).toBe('assistant text Here they are.')
    expect(t.messages.at(-2)?.content.text).toBe('List the files.')
    expect(t.warnings).toHaveLength(2)
  })
})
