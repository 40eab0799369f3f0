/**
 * `syncSession` end to end on real files: a jarvis tree, and Claude Code / Gemini CLI homes in temp dirs
 * (CLAUDE_CONFIG_DIR, GEMINI_CLI_HOME), with sessions written the way the tools write them.
 */
import {readFileSync} from 'node:fs'
import {copyFile, mkdir, readFile, rm, stat, utimes, writeFile} from 'node:fs/promises'
import {basename, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {afterAll, describe, expect, it} from 'vitest'

import {syncSettingsSchema, type SyncSettings, type UniversalMessage} from '../../src/schemas/index.js'
import {appendClaudeSession, claudeProjectDir, readClaudeSession, writeClaudeSession} from '../../src/session/claude.js'
import {geminiProjectDirs, readGeminiSession} from '../../src/session/gemini.js'
import {codexRolloutProblems, geminiSessionProblems} from '../../src/session/check.js'
import {readRegistry} from '../../src/session/registry.js'
import {listSessions, type SessionSyncOptions, syncSession} from '../../src/session/sync.js'
import {initTree, readSyncState, withTreeLock} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'

const cleanup: string[] = []
afterAll(async () => removeAll(cleanup))

let n = 0
function say(role: 'user' | 'assistant', text: string): UniversalMessage {
  n++
  return {id: `t${n}`, parentId: null, sessionId: 'test', timestamp: new Date(Date.parse('2026-05-01T09:00:00Z') + n * 1000).toISOString(), role, type: 'message', content: {text}, metadata: {provider: 'claude'}}
}

function toolCall(id: string, command: string, output: string): UniversalMessage[] {
  n++
  const at = new Date(Date.parse('2026-05-01T09:00:00Z') + n * 1000).toISOString()
  return [
    {id: `t${n}a`, parentId: null, sessionId: 'test', timestamp: at, role: 'assistant', type: 'tool_use', content: {tool_use: {tool_name: 'Bash', tool_input: {command}, tool_use_id: id}}, metadata: {provider: 'claude'}},
    {id: `t${n}b`, parentId: null, sessionId: 'test', timestamp: at, role: 'user', type: 'tool_result', content: {tool_result: {output, tool_use_id: id}}, metadata: {provider: 'claude'}},
  ]
}

const settings: SyncSettings = {...syncSettingsSchema.parse({}), retryDelay: 5, lockTimeout: 200}

interface World {
  root: string
  env: NodeJS.ProcessEnv
  sync(options: Partial<SessionSyncOptions> & Pick<SessionSyncOptions, 'ref' | 'to'>): ReturnType<typeof syncSession>
}

async function world(): Promise<World> {
  const dir = await tempDir('jarvis-session-')
  cleanup.push(dir)
  const root = join(dir, 'project')
  await initTree(root, {})
  const env = {...process.env, CLAUDE_CONFIG_DIR: join(dir, 'claude'), GEMINI_CLI_HOME: join(dir, 'gemini-home')}
  return {root, env, sync: (options) => syncSession({root, settings, env, ...options})}
}

/** A world with a Codex home, the recorded rollout, its day folder made, and session sync over them. */
async function codexWorld() {
  const w = await world()
  const env = {...w.env, CODEX_HOME: join(w.env.CLAUDE_CONFIG_DIR!, '..', 'codex-home')}
  const sync = (options: Pick<SessionSyncOptions, 'ref' | 'to'> & Partial<SessionSyncOptions>) => syncSession({root: w.root, settings, env, ...options})
  const day = join(env.CODEX_HOME, 'sessions', '2026', '08', '20')
  await mkdir(day, {recursive: true})
  const rollout = readFileSync(join(fixtures, 'codex', 'rollout-2026-08-20T09-30-00-0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f.jsonl'), 'utf8')
  return {w, env, sync, day, rollout}
}

/** Claude Code closed a while ago: the file is not in use. */
async function idle(path: string): Promise<void> {
  const past = new Date(Date.now() - 60_000)
  await utimes(path, past, past)
}

/** What Gemini CLI does on `/chat save <tag>` after the conversation went on: the checkpoint rewritten with more turns. */
async function continueInGemini(path: string, ...turns: Array<[role: 'user' | 'model', text: string]>): Promise<void> {
  const checkpoint = JSON.parse(await readFile(path, 'utf8')) as {history: Array<{role: string; parts: unknown[]}>}
  for (const [role, text] of turns) checkpoint.history.push({role, parts: [{text}]})
  await writeFile(path, JSON.stringify(checkpoint, null, 2))
}

const fixtures = fileURLToPath(new URL('../../fixtures/transcripts/', import.meta.url))

/** Copies recorded sessions (fixtures/transcripts) into the temp homes, where the tools would have written them. */
async function install(w: World, claude: string[], gemini: string[]): Promise<void> {
  const claudeDir = claudeProjectDir(w.root, w.env)
  await mkdir(claudeDir, {recursive: true})
  for (const name of claude) {
    await copyFile(join(fixtures, 'claude', name), join(claudeDir, name))
    await idle(join(claudeDir, name))
  }
  const [geminiDir] = await geminiProjectDirs(w.root, w.env)
  await mkdir(join(geminiDir, 'chats'), {recursive: true})
  for (const name of gemini) await copyFile(join(fixtures, 'gemini', name), join(geminiDir, name.startsWith('session-') ? 'chats' : '', name))
}

const texts = (messages: UniversalMessage[]) => messages.map((m) => m.content.text ?? m.content.tool_use?.tool_name ?? m.content.tool_result?.output)

describe('jarvis session sync (in-process)', () => {
  it('Claude → Gemini creates the checkpoint and the backup; a second run adds and writes nothing', async () => {
    const w = await world()
    const messages = [say('user', 'Find the failing test'), ...toolCall('toolu_1', 'npm test', '1 failed'), say('assistant', 'The parser test fails.')]
    const {sessionId, path} = await writeClaudeSession(w.root, messages, {env: w.env, title: 'parser'})
    await idle(path)

    const first = await w.sync({ref: sessionId.slice(0, 8), to: 'gemini'})
    expect(first).toMatchObject({tag: `claude-${sessionId.slice(0, 8)}`, mode: 'full', added: 4, written: true, to: {provider: 'gemini', created: true, messageCount: 4}})
    expect(first.checkpoint).toMatchObject({tag: first.tag, created: true, added: 4, messageCount: 4})
    expect(first.resume).toEqual([`cd ${w.root} && gemini --resume ${first.to.sessionId}`, `/chat resume ${first.tag}`])
    expect(first.to.path).toMatch(new RegExp(`/chats/session-[0-9T-]+-${first.to.sessionId.slice(0, 8)}\\.jsonl$`))
    expect(first.checkpoint!.path).toMatch(new RegExp(`checkpoint-${first.tag}\\.json$`))
    const checkpoint = await readFile(first.checkpoint!.path, 'utf8')
    expect(JSON.parse(checkpoint)).toHaveProperty('history')
    expect(await readFile(join(w.root, '.nexus', 'gemini-backup', `${first.tag}.json`), 'utf8')).toBe(checkpoint)
    expect(texts((await readGeminiSession(first.to.path)).messages)).toEqual(texts(messages))
    expect(texts((await readGeminiSession(first.checkpoint!.path)).messages)).toEqual(texts(messages))
    expect(geminiSessionProblems(await readFile(first.to.path, 'utf8'), basename(first.to.path))).toEqual([])

    const registry = await readRegistry(w.root)
    expect(registry.sessions).toHaveLength(1)
    expect(registry.sessions[0]).toMatchObject({sessionTag: first.tag, projectPath: w.root})
    expect(registry.sessions[0].providers.map((p) => [p.provider, p.sessionId, p.messageCount])).toEqual([
      ['claude', sessionId, 4],
      ['gemini', first.to.sessionId, 4],
      ['gemini', first.tag, 4],
    ])

    const files = [first.to.path, first.checkpoint!.path, join(w.root, '.nexus', 'sessions.json'), join(w.root, '.nexus', 'sync-state.json')]
    const before = await Promise.all(files.map(async (f) => [(await stat(f)).mtimeMs, await readFile(f, 'utf8')]))
    const second = await w.sync({ref: sessionId, to: 'gemini'})
    expect(second).toMatchObject({mode: 'incremental', added: 0, duplicates: 0, written: false, to: {created: false, messageCount: 4}})
    expect(await Promise.all(files.map(async (f) => [(await stat(f)).mtimeMs, await readFile(f, 'utf8')]))).toEqual(before)
  })

  it('both ways: messages added on one side, then the other, each arrive exactly once', async () => {
    const w = await world()
    const {sessionId, path: claudePath} = await writeClaudeSession(w.root, [say('user', 'c1 question'), say('assistant', 'c1 answer')], {env: w.env})
    await idle(claudePath)
    const toGemini = await w.sync({ref: sessionId, to: 'gemini', tag: 'handoff'})
    expect(toGemini).toMatchObject({tag: 'handoff', added: 2})

    await continueInGemini(toGemini.checkpoint!.path, ['user', 'g1 question'], ['model', 'g1 answer'])
    const back = await w.sync({ref: 'handoff', to: 'claude'})
    expect(back).toMatchObject({mode: 'incremental', added: 2, duplicates: 0, to: {provider: 'claude', sessionId, created: false}})
    expect(back.resume).toEqual([`cd ${w.root} && claude --resume ${sessionId}`])
    // jarvis' own append does not count as "in use": a second run right away is a quiet no-op.
    expect(await w.sync({ref: 'handoff', to: 'claude'})).toMatchObject({added: 0, written: false})

    await appendClaudeSession(claudePath, [say('user', 'c2 question'), ...toolCall('toolu_2', 'ls', 'a b'), say('assistant', 'c2 answer')])
    await idle(claudePath)
    const again = await w.sync({ref: sessionId, to: 'gemini'})
    // The chat session gets the turn that came back from the checkpoint too; the checkpoint only Claude's new one.
    expect(again).toMatchObject({tag: 'handoff', mode: 'incremental', added: 6, duplicates: 0, to: {sessionId: toGemini.to.sessionId, created: false}, checkpoint: {added: 4}})
    expect(await w.sync({ref: 'handoff', to: 'claude'})).toMatchObject({added: 0})
    expect(await w.sync({ref: 'handoff', to: 'gemini'})).toMatchObject({added: 0})

    const expected = ['c1 question', 'c1 answer', 'g1 question', 'g1 answer', 'c2 question', 'Bash', 'a b', 'c2 answer']
    expect(texts((await readClaudeSession(claudePath)).messages)).toEqual(expected)
    expect(texts((await readGeminiSession(again.to.path)).messages)).toEqual(expected)
    expect(texts((await readGeminiSession(again.checkpoint!.path)).messages)).toEqual(expected)
    const state = await readSyncState(w.root)
    const chat = toGemini.to.sessionId
    expect(Object.keys(state.sessions ?? {}).sort()).toEqual(
      [`claude:${sessionId} -> gemini:${chat}`, `claude:${sessionId} -> gemini:handoff`, `gemini:${chat} -> claude:${sessionId}`, `gemini:handoff -> claude:${sessionId}`].sort(),
    )
  })

  it('Gemini → Claude creates a Claude session the first time and records its id', async () => {
    const w = await world()
    const {sessionId, path} = await writeClaudeSession(w.root, [say('user', 'seed'), say('assistant', 'seeded')], {env: w.env})
    await idle(path)
    const seeded = await w.sync({ref: sessionId, to: 'gemini', tag: 'from-gemini'})
    // A second conversation that started in Gemini: a checkpoint saved there under another tag.
    const other = join(seeded.checkpoint!.path, '..', 'checkpoint-gem-only.json')
    await writeFile(other, JSON.stringify({history: [{role: 'user', parts: [{text: 'hello from gemini'}]}, {role: 'model', parts: [{text: 'hi'}]}]}, null, 2))
    const created = await w.sync({ref: 'gem-only', to: 'claude'})
    expect(created).toMatchObject({tag: 'gem-only', added: 2, to: {provider: 'claude', created: true}})
    expect(texts((await readClaudeSession(created.to.path)).messages)).toEqual(['hello from gemini', 'hi'])
    const entry = (await readRegistry(w.root)).sessions.find((e) => e.sessionTag === 'gem-only')
    expect(entry?.providers.map((p) => [p.provider, p.sessionId])).toEqual([
      ['gemini', 'gem-only'],
      ['claude', created.to.sessionId],
    ])
    await idle(created.to.path)
    await continueInGemini(other, ['user', 'more'], ['model', 'sure'])
    expect(await w.sync({ref: 'gem-only', to: 'claude'})).toMatchObject({added: 2, to: {sessionId: created.to.sessionId, created: false}})
  })

  it('refuses to append to a Claude session changed in the last seconds, unless forced', async () => {
    const w = await world()
    const {sessionId, path} = await writeClaudeSession(w.root, [say('user', 'q'), say('assistant', 'a')], {env: w.env})
    await idle(path)
    const out = await w.sync({ref: sessionId, to: 'gemini', tag: 'busy'})
    await continueInGemini(out.checkpoint!.path, ['user', 'new in gemini'], ['model', 'ok'])
    const now = new Date()
    await utimes(path, now, now) // Claude Code just wrote to it
    const before = await readFile(path, 'utf8')
    await expect(w.sync({ref: 'busy', to: 'claude'})).rejects.toMatchObject({code: 'SESSION_IN_USE', exit: 4, message: expect.stringMatching(/--force/)})
    expect(await readFile(path, 'utf8')).toBe(before)
    expect(await w.sync({ref: 'busy', to: 'claude', force: true})).toMatchObject({added: 2})
    // With nothing to append, a session open in Claude Code is only read: no refusal.
    const later = new Date()
    await utimes(path, later, later)
    expect(await w.sync({ref: 'busy', to: 'claude'})).toMatchObject({added: 0, written: false})
  })

  it('Codex both ways: a rollout carried to Claude and Gemini, then back; only new messages travel; the source is never written', async () => {
    const {w, env, sync, day, rollout} = await codexWorld()
    // A thread Codex started in this project (its cwd), and one of another project that must stay out of it.
    const source = join(day, 'rollout-2026-08-20T09-30-00-0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f.jsonl')
    await writeFile(source, rollout.replaceAll('/home/dev/acme-api', w.root))
    await writeFile(join(day, 'rollout-2026-08-20T10-00-00-0198c1d2-0000-7000-8000-000000000002.jsonl'), rollout.replaceAll('0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f', '0198c1d2-0000-7000-8000-000000000002'))
    const original = await readFile(source, 'utf8')
    await idle(source) // Codex finished with it a while ago

    const toClaude = await sync({ref: '0198c1d2-7a3b', to: 'claude'})
    expect(toClaude).toMatchObject({tag: 'codex-0198c1d2', added: 12, from: {provider: 'codex', messageCount: 12}, to: {provider: 'claude', created: true}})
    expect(toClaude.notCarried.join('\n')).toMatch(/redacted or encrypted reasoning|redacted thinking/)
    const toGemini = await sync({ref: 'codex-0198c1d2', to: 'gemini'})
    expect(toGemini).toMatchObject({added: 12, to: {provider: 'gemini', created: true}, checkpoint: {created: true}})
    expect(await readFile(source, 'utf8')).toBe(original)

    // The conversation goes on in Claude Code; carried back, only that turn is appended to the Codex thread.
    await appendClaudeSession(toClaude.to.path, [say('user', 'claude follow-up'), say('assistant', 'claude answer')])
    await idle(toClaude.to.path)
    const now = new Date()
    await utimes(source, now, now) // Codex CLI just wrote to it: it may be open
    await expect(sync({ref: toClaude.to.sessionId, to: 'codex'})).rejects.toMatchObject({code: 'SESSION_IN_USE', exit: 4, message: expect.stringMatching(/Codex CLI.*--force/)})
    expect(await readFile(source, 'utf8')).toBe(original)
    await idle(source)
    const back = await sync({ref: toClaude.to.sessionId, to: 'codex'})
    expect(back).toMatchObject({from: {provider: 'claude'}, to: {provider: 'codex', sessionId: '0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f', created: false}, added: 2})
    const thread = await readFile(source, 'utf8')
    expect(thread.startsWith(original)).toBe(true)
    expect(codexRolloutProblems(thread, '0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f')).toEqual([])
    expect(await sync({ref: toClaude.to.sessionId, to: 'codex'})).toMatchObject({added: 0, written: false})
    expect(await sync({ref: '0198c1d2-7a3b', to: 'claude'})).toMatchObject({added: 0})

    const list = await listSessions({root: w.root, settings, env})
    expect(list.codexHome).toBe(env.CODEX_HOME)
    expect(list.sessions.filter((s) => s.provider === 'codex').map((s) => [s.sessionId, s.messageCount, s.tag])).toEqual([['0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f', 14, 'codex-0198c1d2']])
    const entry = (await readRegistry(w.root)).sessions.find((e) => e.sessionTag === 'codex-0198c1d2')
    expect(entry?.providers.map((p) => p.provider).sort()).toEqual(['claude', 'codex', 'gemini', 'gemini'])
  })

  it('two Codex threads started the same minute (UUIDv7 ids with the same first 8 characters) stay two conversations', async () => {
    const {w, sync, day, rollout} = await codexWorld()
    const recorded = rollout.replaceAll('/home/dev/acme-api', w.root)
    const tests = '01a25257-09c5-7c4d-8e5f-6a7b8c9d0e1f'
    const build = '01a25257-589b-7a10-9b2c-3d4e5f607182'
    const thread = async (id: string, question: string) => {
      const path = join(day, `rollout-2026-08-20T09-30-00-${id}.jsonl`)
      await writeFile(path, recorded.replaceAll('0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f', id).replaceAll('Why does npm test fail? Fix it.', question))
      await idle(path)
    }
    await thread(tests, 'Why does npm test fail? Fix it.')
    await thread(build, 'Why does the build fail? Fix it.')

    const first = await sync({ref: tests, to: 'claude'})
    expect(first).toMatchObject({tag: 'codex-01a25257', from: {sessionId: tests}, to: {created: true}})
    const second = await sync({ref: build, to: 'gemini'})
    expect(second).toMatchObject({tag: 'codex-01a25257-589b', from: {sessionId: build}, to: {provider: 'gemini', created: true}})
    const carried = texts((await readGeminiSession(second.to.path)).messages).join('\n')
    expect(carried).toContain('Why does the build fail?')
    expect(carried).not.toContain('Why does npm test fail?')

    const registry = await readRegistry(w.root)
    const threads = (tag: string) => registry.sessions.find((e) => e.sessionTag === tag)?.providers.filter((p) => p.provider === 'codex').map((p) => p.sessionId)
    expect(threads('codex-01a25257')).toEqual([tests])
    expect(threads('codex-01a25257-589b')).toEqual([build])
    // The conversation tagged before keeps its tag: carried by it, it is still the first thread.
    const again = await sync({ref: 'codex-01a25257', to: 'gemini'})
    expect(again).toMatchObject({tag: 'codex-01a25257', to: {created: true}})
    const tagged = texts((await readGeminiSession(again.to.path)).messages).join('\n')
    expect(tagged).toContain('Why does npm test fail?')
    expect(tagged).not.toContain('Why does the build fail?')
  })

  it('an unknown name is exit 2; a held tree lock is exit 6 after sync.lockTimeout', async () => {
    const w = await world()
    await expect(w.sync({ref: 'nothing-here', to: 'gemini'})).rejects.toMatchObject({code: 'SESSION_NOT_FOUND', exit: 2})
    const {sessionId} = await writeClaudeSession(w.root, [say('user', 'q')], {env: w.env})
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let locked!: () => void
    const taken = new Promise<void>((resolve) => (locked = resolve))
    const holder = withTreeLock(w.root, {}, async () => {
      locked()
      await held
    })
    await taken
    try {
      await expect(w.sync({ref: sessionId, to: 'gemini'})).rejects.toMatchObject({code: 'LOCKED', exit: 6})
    } finally {
      release()
      await holder
    }
  })

  it('list: both tools with counts, tags and sync status', async () => {
    const w = await world()
    const {sessionId, path} = await writeClaudeSession(w.root, [say('user', 'q'), say('assistant', 'a')], {env: w.env})
    const {sessionId: lonely} = await writeClaudeSession(w.root, [say('user', 'alone')], {env: w.env})
    await idle(path)
    const out = await w.sync({ref: sessionId, to: 'gemini', tag: 'listed'})
    await appendClaudeSession(path, [say('user', 'one more')])
    const list = await listSessions({root: w.root, settings, env: w.env})
    // By id first: the Gemini chat session carries the tag of the /chat checkpoint whose id is that tag.
    const find = (provider: string, id: string) => list.sessions.find((s) => s.provider === provider && s.sessionId === id) ?? list.sessions.find((s) => s.provider === provider && s.tag === id)
    expect(find('claude', sessionId)).toMatchObject({
      tag: 'listed',
      messageCount: 3,
      sync: {status: 'new-messages', newMessages: 1, linked: [{provider: 'gemini', sessionId: out.to.sessionId}, {provider: 'gemini', sessionId: 'listed'}]},
    })
    expect(find('gemini', 'listed')).toMatchObject({tag: 'listed', messageCount: 2, path: out.checkpoint!.path, sync: {status: 'in-sync'}})
    expect(find('gemini', out.to.sessionId)).toMatchObject({tag: 'listed', messageCount: 2, path: out.to.path, sync: {status: 'in-sync'}})
    expect(find('claude', lonely)).toMatchObject({messageCount: 1, sync: {status: 'not-synced'}})
    expect(list.claudeHome).toBe(w.env.CLAUDE_CONFIG_DIR)
  })

  it('recorded sessions of both tools: carried once, reported what could not be carried, stable on the way back', async () => {
    const w = await world()
    await install(w, ['6b8f1c2a-0d3e-4f5a-9b7c-1a2b3c4d5e6f.jsonl', '3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f.jsonl'], ['session-2026-08-20T09-20-7c2d9e1f.jsonl', 'checkpoint-fix%20tests.json'])

    const thinking = await w.sync({ref: '6b8f1c2a', to: 'gemini'})
    expect(thinking).toMatchObject({tag: 'claude-6b8f1c2a', mode: 'full', added: 11})
    expect(thinking.notCarried.join('\n')).toMatch(/signature/)
    const broken = await w.sync({ref: '3c4d5e6f', to: 'gemini'})
    expect(broken.warnings).toEqual([expect.stringMatching(/3c4d5e6f.*\.jsonl:2: not JSON/), expect.stringMatching(/\.jsonl:5: truncated last line/)])
    const chat = await w.sync({ref: '7c2d9e1f', to: 'claude'})
    expect(chat).toMatchObject({tag: 'gemini-7c2d9e1f', added: 9, to: {created: true}})
    const tagged = await w.sync({ref: 'fix tests', to: 'claude'})
    expect(tagged).toMatchObject({tag: 'fix tests', added: 7, to: {created: true}})
    expect(tagged.resume).toEqual([`cd ${w.root} && claude --resume ${tagged.to.sessionId}`])
    // Back into Gemini: a chat session `gemini --resume` opens; the checkpoint it came from already holds everything.
    expect(await w.sync({ref: 'fix tests', to: 'gemini'})).toMatchObject({added: 7, to: {created: true}, checkpoint: {added: 0, created: false}})

    // Nothing new anywhere: every direction adds nothing, and no message comes back as a copy.
    for (const [ref, to] of [
      ['6b8f1c2a', 'gemini'],
      ['claude-6b8f1c2a', 'claude'],
      ['3c4d5e6f', 'gemini'],
      ['claude-3c4d5e6f', 'claude'],
      ['7c2d9e1f', 'claude'],
      ['fix tests', 'claude'],
      ['fix tests', 'gemini'],
    ] as const) {
      expect(await w.sync({ref, to, force: true}), `${ref} --to ${to}`).toMatchObject({added: 0, written: false})
    }
    const list = await listSessions({root: w.root, settings, env: w.env})
    expect(list.sessions.every((s) => s.sync.status === 'in-sync')).toBe(true)
  })

  it('a session with nothing to carry is exit 2; a linked Claude session that was deleted is created again', async () => {
    const w = await world()
    await install(w, ['44444444-4444-4444-8444-444444444444.jsonl'], [])
    await expect(w.sync({ref: '44444444', to: 'gemini'})).rejects.toMatchObject({exit: 2, message: expect.stringMatching(/no message to carry/)})

    const {sessionId, path} = await writeClaudeSession(w.root, [say('user', 'q'), say('assistant', 'a')], {env: w.env})
    await idle(path)
    await w.sync({ref: sessionId, to: 'gemini', tag: 'gone'})
    await rm(path)
    const again = await w.sync({ref: 'gone', to: 'claude'})
    expect(again).toMatchObject({added: 2, to: {created: true}})
    expect(again.to.sessionId).not.toBe(sessionId)
    const entry = (await readRegistry(w.root)).sessions.find((e) => e.sessionTag === 'gone')
    expect(entry?.providers.map((p) => p.provider).sort()).toEqual(['claude', 'gemini', 'gemini'])
    expect(entry?.providers.map((p) => p.sessionId)).toEqual(expect.arrayContaining(['gone', again.to.sessionId]))
    expect(Object.keys((await readSyncState(w.root)).sessions ?? {}).some((key) => key.includes(sessionId))).toBe(false)
  })

  it('a carried Gemini chat session that Gemini CLI deleted is created again at the next carry, with the whole conversation', async () => {
    const w = await world()
    const {sessionId, path} = await writeClaudeSession(w.root, [say('user', 'q'), say('assistant', 'a')], {env: w.env})
    await idle(path)
    const first = await w.sync({ref: sessionId, to: 'gemini'})
    await rm(first.to.path)
    await appendClaudeSession(path, [say('user', 'one more')])
    const again = await w.sync({ref: sessionId, to: 'gemini'})
    expect(again.to).toMatchObject({provider: 'gemini', created: true})
    expect(texts((await readGeminiSession(again.to.path)).messages)).toEqual(texts((await readClaudeSession(path)).messages))
    expect(again.checkpoint).toMatchObject({added: 1, created: false})
  })

  it('a malformed registry is named with its line (exit 2) and left as it is', async () => {
    const w = await world()
    await mkdir(join(w.root, '.nexus'), {recursive: true})
    await writeFile(join(w.root, '.nexus', 'sessions.json'), '{\n  "sessions": [,]\n}\n')
    await expect(w.sync({ref: 'x', to: 'gemini'})).rejects.toMatchObject({exit: 2, message: expect.stringMatching(/sessions\.json.*line 2/)})
    expect(await readFile(join(w.root, '.nexus', 'sessions.json'), 'utf8')).toBe('{\n  "sessions": [,]\n}\n')
  })
})
