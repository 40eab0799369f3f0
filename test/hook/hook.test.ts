/**
 * `jarvis hook` end to end: the built binary spawned with each agent's real hook input on stdin, against a real
 * `jarvis serve` on 127.0.0.1, on real trees and real transcript files.
 */
import {existsSync} from 'node:fs'
import {chmod, mkdir, readFile, stat, writeFile} from 'node:fs/promises'
import {type AddressInfo, connect, createServer, type Socket} from 'node:net'
import {dirname, join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {pendingBackgroundSyncs} from '../../src/hook/background-sync.js'
import {digestOf, recordEpisode} from '../../src/hook/episode.js'
import {MemoryClient} from '../../src/protocol/client.js'
import {withTreeLock} from '../../src/store/index.js'
import {closedPort, fakeGithubToken} from '../cli/memory-helpers.js'
import {removeAll, startTestServer, tempDir, type TestServer, TOKENS} from '../helpers/world.js'
import {
  appendEvent,
  assertBuilt,
  claudeTranscript,
  codexRollout,
  geminiTranscript,
  hookEnv,
  hooksLog,
  makeProject,
  type Project,
  runHook,
  runJarvisBuilt,
  waitForBackgroundSyncs,
  writeMemory,
} from './helpers.js'

const dirs: string[] = []
let server: TestServer
let home: string

const PGBOUNCER = `---
title: Pgbouncer pooling mode
tags: [database]
---
# Pgbouncer pooling mode

Run pgbouncer in transaction pooling mode: session pooling exhausted the 100 connection limit during deploys.
`
const RUNNER = `---
title: Runner SSH certificates
tags: [infra]
---
# Runner SSH certificates

The CI runner logs in with short-lived SSH certificates signed by the internal CA.
`

beforeAll(async () => {
  assertBuilt()
  server = await startTestServer()
  home = await tempDir('jarvis-hook-home-')
  dirs.push(home, server.dataDir)
  await appendEvent(server.url, 'claude', {kind: 'decision', key: 'db-engine', content: 'Postgres 16 is the only database; no MySQL anywhere.', scope: 'global'})
})

afterAll(async () => {
  await server?.close()
  await removeAll(dirs)
})

async function project(settings: Parameters<typeof makeProject>[1] = {}, url = server.url): Promise<Project> {
  const p = await makeProject(url, settings)
  dirs.push(p.root)
  await writeMemory(p, 'decisions/postgres/pgbouncer-pooling.md', PGBOUNCER)
  await writeMemory(p, 'decisions/ssh/runner-certificates.md', RUNNER)
  await writeMemory(p, 'PROJECT_MEMORY.md', '# Demo shop\n\nThe demo shop: a Postgres-backed API and a web dashboard.\n')
  return p
}

/** What each agent sends, built from the field lists of its documentation and its own schemas. */
const inputs = {
  claude: (cwd: string, event: string, extra: Record<string, unknown> = {}) => ({
    session_id: 'c1a2b3c4-0000-4000-8000-000000000001',
    transcript_path: join(home, '.claude', 'projects', 'x', 'c1a2b3c4-0000-4000-8000-000000000001.jsonl'),
    cwd,
    permission_mode: 'default',
    hook_event_name: event,
    ...extra,
  }),
  gemini: (cwd: string, event: string, extra: Record<string, unknown> = {}) => ({
    session_id: '7c2d9e1f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
    transcript_path: join(home, '.gemini', 'tmp', 'x', 'chats', 'session-2026-09-01T09-00-7c2d9e1f.jsonl'),
    cwd,
    hook_event_name: event,
    timestamp: new Date().toISOString(),
    ...extra,
  }),
  codex: (cwd: string, event: string, extra: Record<string, unknown> = {}) => ({
    session_id: '0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f',
    transcript_path: null,
    cwd,
    hook_event_name: event,
    model: 'gpt-5.5',
    permission_mode: 'default',
    ...extra,
  }),
  openclaw: (cwd: string, _event: string, extra: Record<string, unknown> = {}) => ({sessionKey: 'agent:main:main', workspaceDir: cwd, ...extra}),
}

/** The context an answer carries, checked to be in that agent's own format. */
function contextOf(agent: string, stdout: string, eventName: string): string {
  const answer = JSON.parse(stdout) as {hookSpecificOutput?: {hookEventName: string; additionalContext: string}; prependContext?: string}
  if (agent === 'openclaw') {
    expect(Object.keys(answer)).toEqual(['prependContext'])
    return answer.prependContext!
  }
  expect(Object.keys(answer)).toEqual(['hookSpecificOutput'])
  expect(answer.hookSpecificOutput!.hookEventName).toBe(eventName)
  return answer.hookSpecificOutput!.additionalContext
}

const START = {claude: 'SessionStart', gemini: 'SessionStart', codex: 'SessionStart', openclaw: 'session_start'}
const PROMPT = {claude: 'UserPromptSubmit', gemini: 'BeforeAgent', codex: 'UserPromptSubmit', openclaw: 'before_prompt_build'}
const AGENT_ID = {claude: 'claude', gemini: 'gemini', codex: 'chatgpt', openclaw: 'openclaw'} as const

describe.each(['claude', 'gemini', 'codex', 'openclaw'] as const)('jarvis hook --agent %s', (agent) => {
  it('session start: the pinned memory and the project files, in the agent format, within the budget', async () => {
    const p = await project()
    const env = hookEnv(home, AGENT_ID[agent])
    const run = await runHook('session-start', agent, inputs[agent](p.root, START[agent], {source: 'startup'}), {cwd: p.root, env})
    expect(run.code).toBe(0)
    expect(run.stderr).toBe('')
    const context = contextOf(agent, run.stdout, START[agent])
    expect(context).toContain('[decision] db-engine: Postgres 16 is the only database; no MySQL anywhere.')
    expect(context).toContain(`agent:${AGENT_ID[agent]}`)
    expect(context).toContain('- PROJECT_MEMORY.md — The demo shop: a Postgres-backed API and a web dashboard.')
    expect(context.indexOf('db-engine')).toBeLessThan(context.indexOf('PROJECT_MEMORY.md'))
    expect(context.length / 4).toBeLessThanOrEqual(2000)
    // Gemini CLI escapes angle brackets before its model sees them: jarvis's own words have none.
    expect(context).not.toMatch(/[<>]/)
    expect(await hooksLog(p.root)).toBe('')
  })

  it('prompt: the recall for a prompt about a memory file; nothing at all for an unrelated prompt', async () => {
    const p = await project()
    const env = hookEnv(home, AGENT_ID[agent])
    const about = await runHook('prompt', agent, inputs[agent](p.root, PROMPT[agent], {prompt: 'Which pgbouncer pooling mode do we run?'}), {cwd: p.root, env})
    expect(about.code).toBe(0)
    expect(about.stderr).toBe('')
    const context = contextOf(agent, about.stdout, PROMPT[agent])
    expect(context.split('\n')[0]).toBe('[MEMORY CONTEXT]')
    expect(context).toContain('- decisions/postgres/pgbouncer-pooling.md')
    expect(context).not.toContain('runner-certificates')

    const unrelated = await runHook('prompt', agent, inputs[agent](p.root, PROMPT[agent], {prompt: 'Write a haiku about autumn leaves falling in Kyoto'}), {cwd: p.root, env})
    expect(unrelated).toMatchObject({code: 0, stdout: '', stderr: ''})
    expect(await hooksLog(p.root)).toBe('')
  })
})

describe('jarvis hook: recording the session', () => {
  const SECRET_PROMPT = () => `From now on use the token ${fakeGithubToken()} to push the release.`
  const turns = [
    {prompt: 'Fix the flaky checkout test in the e2e suite', tools: [['Read', {file_path: 'FILE:src/checkout.test.ts'}], ['Edit', {file_path: 'FILE:src/checkout.test.ts', old_string: 'sleep(500)', new_string: 'await idle()'}]] as Array<[string, Record<string, unknown>]>, answer: 'We decided to wait for the network idle instead of a fixed sleep. The test passes now.'},
    {prompt: 'Add a changelog entry', tools: [['Write', {file_path: 'FILE:CHANGELOG.md', content: '- fixed'}]] as Array<[string, Record<string, unknown>]>, answer: 'Added the entry to CHANGELOG.md.'},
  ]
  const withRoot = (root: string, list: typeof turns) => list.map((t) => ({...t, tools: t.tools.map(([n, i]) => [n, {...i, file_path: String(i.file_path).replace('FILE:', `${root}/`)}] as [string, Record<string, unknown>])}))

  it('claude: stop records an episode from the transcript; the next `jarvis sync` pushes it to the server', async () => {
    const p = await project({autoSync: false})
    const env = hookEnv(home, 'claude')
    const session = 'c1a2b3c4-0000-4000-8000-00000000aaaa'
    const transcript = join(home, '.claude', 'projects', 'p1', `${session}.jsonl`)
    await mkdir(join(transcript, '..'), {recursive: true})
    await writeFile(transcript, claudeTranscript(session, p.root, withRoot(p.root, turns)))
    const input = {...inputs.claude(p.root, 'Stop', {stop_hook_active: false, last_assistant_message: 'Added the entry to CHANGELOG.md.'}), session_id: session, transcript_path: transcript}
    const stop = await runHook('stop', 'claude', input, {cwd: p.root, env})
    expect(stop).toMatchObject({code: 0, stdout: '', stderr: ''})
    const path = `episodes/2026-09-01/claude-${session}.md`
    const text = await readFile(join(p.memory, path), 'utf8')
    expect(text).not.toContain('Fix the flaky checkout test') // what was done is recorded, not the prompts
    expect(text).toContain('## Decided\n- We decided to wait for the network idle instead of a fixed sleep.')
    expect(text).toContain('## Files touched\n- `src/checkout.test.ts` (edited, read)\n- `CHANGELOG.md` (written)\n')
    expect(text).toMatch(/^kind: episode$/m)

    // The same session again, and its end: the same file, nothing twice.
    const again = await runHook('stop', 'claude', input, {cwd: p.root, env})
    const end = await runHook('session-end', 'claude', {...input, hook_event_name: 'SessionEnd', reason: 'exit'}, {cwd: p.root, env})
    expect([again.code, end.code]).toEqual([0, 0])
    expect(await readFile(join(p.memory, path), 'utf8')).toBe(text)

    const client = new MemoryClient({server: server.url, token: TOKENS.claude})
    expect((await client.status()).files[path]).toBeUndefined()
    const sync = await runJarvisBuilt(['sync'], {cwd: p.root, env})
    expect(sync.code, sync.stderr).toBe(0)
    expect((await client.pull([path])).files[path].content).toBe(text)
  })

  it('gemini: after-agent and session end update one episode from the JSONL transcript; a later turn extends it', async () => {
    const p = await project({autoSync: false})
    const env = hookEnv(home, 'gemini', {GEMINI_PROJECT_DIR: p.root, GEMINI_SESSION_ID: '7c2d9e1f-4a5b-4c6d-8e7f-9a0b1c2d3e4f'})
    const transcript = join(home, '.gemini', 'tmp', 'p2', 'chats', 'session-2026-09-01T09-00-7c2d9e1f.jsonl')
    await mkdir(join(transcript, '..'), {recursive: true})
    const list = withRoot(p.root, turns)
    await writeFile(transcript, geminiTranscript('7c2d9e1f-4a5b-4c6d-8e7f-9a0b1c2d3e4f', list.slice(0, 1)))
    const input = inputs.gemini(p.root, 'AfterAgent', {transcript_path: transcript, prompt: list[0].prompt, prompt_response: list[0].answer, stop_hook_active: false})
    expect(await runHook('stop', 'gemini', input, {cwd: p.root, env})).toMatchObject({code: 0, stdout: '', stderr: ''})
    const path = 'episodes/2026-09-01/gemini-7c2d9e1f-4a5b-4c6d-8e7f-9a0b1c2d3e4f.md'
    const first = await readFile(join(p.memory, path), 'utf8')
    expect(first).toContain('- `src/checkout.test.ts` (edited, read)')
    expect(first).not.toContain('CHANGELOG.md')

    await writeFile(transcript, geminiTranscript('7c2d9e1f-4a5b-4c6d-8e7f-9a0b1c2d3e4f', list))
    const end = await runHook('session-end', 'gemini', inputs.gemini(p.root, 'SessionEnd', {transcript_path: transcript, reason: 'exit'}), {cwd: p.root, env})
    expect(end.code).toBe(0)
    const second = await readFile(join(p.memory, path), 'utf8')
    expect(second.match(/^- We decided to wait for the network idle/gm)).toHaveLength(1) // listed once under Decided
    expect(second).toContain('- `src/checkout.test.ts` (edited, read)')
    expect(second).toContain('- `CHANGELOG.md` (written)')
  })

  it('codex: reads its rollout; without one, records the last assistant message', async () => {
    const p = await project({autoSync: false})
    const env = hookEnv(home, 'chatgpt')
    const rollout = join(home, '.codex', 'sessions', '2026', '09', '01', 'rollout-2026-09-01T09-00-00-0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f.jsonl')
    await mkdir(join(rollout, '..'), {recursive: true})
    await writeFile(rollout, codexRollout('0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f', p.root, withRoot(p.root, turns)))
    const stop = await runHook('stop', 'codex', inputs.codex(p.root, 'Stop', {transcript_path: rollout, stop_hook_active: false, last_assistant_message: 'Added the entry to CHANGELOG.md.', turn_id: 't1'}), {cwd: p.root, env})
    expect(stop).toMatchObject({code: 0, stdout: '', stderr: ''})
    const text = await readFile(join(p.memory, 'episodes/2026-09-01/chatgpt-0198c1d2-7a3b-7c4d-8e5f-6a7b8c9d0e1f.md'), 'utf8')
    expect(text).toContain('## Decided\n- We decided to wait for the network idle instead of a fixed sleep.')
    expect(text).not.toContain('environment_context')
    expect(text).toContain('- `src/checkout.test.ts` (edited)\n- `CHANGELOG.md` (created)')

    // Without a transcript only what the hook input says: an answer that decides something is recorded, one that does not is not.
    const today = new Date().toISOString().slice(0, 10)
    const told = await runHook('stop', 'codex', {...inputs.codex(p.root, 'Stop', {stop_hook_active: false, last_assistant_message: 'The flag is --max-tokens.', turn_id: 't2'}), session_id: 'told-session'}, {cwd: p.root, env})
    expect(told.code).toBe(0)
    await expect(readFile(join(p.memory, `episodes/${today}/chatgpt-told-session.md`), 'utf8')).rejects.toThrow(/ENOENT/)
    const bare = await runHook('stop', 'codex', {...inputs.codex(p.root, 'Stop', {stop_hook_active: false, last_assistant_message: 'We switched to the --max-tokens flag.', turn_id: 't2'}), session_id: 'other-session'}, {cwd: p.root, env})
    expect(bare.code).toBe(0)
    expect(await readFile(join(p.memory, `episodes/${today}/chatgpt-other-session.md`), 'utf8')).toContain('## Learned\nWe switched to the --max-tokens flag.')
  })

  it('session start lists the newest episodes, the sessions that stopped last: not the alphabetically last of the day', async () => {
    const p = await project({autoSync: false})
    const env = hookEnv(home, 'claude')
    for (const session of ['zz-first', 'yy-second', 'xx-third', 'ww-fourth']) {
      const input = {...inputs.claude(p.root, 'Stop', {stop_hook_active: false, last_assistant_message: `We decided to use approach ${session} for the cache layer.`}), session_id: session, transcript_path: undefined}
      expect(await runHook('stop', 'claude', input, {cwd: p.root, env})).toMatchObject({code: 0, stdout: '', stderr: ''})
    }
    const start = await runHook('session-start', 'claude', {...inputs.claude(p.root, 'SessionStart', {source: 'startup'}), session_id: 'n1'}, {cwd: p.root, env})
    const listed = [...contextOf('claude', start.stdout, 'SessionStart').matchAll(/^- episodes\/\S+\/claude-([a-z-]+)\.md/gm)].map((m) => m[1])
    expect(listed).toEqual(['ww-fourth', 'xx-third', 'yy-second'])
  })

  it('a session told the answer by the pinned memory writes no episode restating it; one that changes it does', async () => {
    const p = await project({autoSync: false, project: 'shop'})
    await appendEvent(server.url, 'claude', {kind: 'decision', key: 'shop-database', content: 'We use PostgreSQL 16 for the shop database', scope: 'project:shop'})
    const env = hookEnv(home, 'claude')
    const stop = (session: string, answer: string) => runHook('stop', 'claude', {...inputs.claude(p.root, 'Stop', {stop_hook_active: false, last_assistant_message: answer}), session_id: session, transcript_path: undefined}, {cwd: p.root, env})
    const today = new Date().toISOString().slice(0, 10)
    const episode = (session: string) => readFile(join(p.memory, `episodes/${today}/claude-${session}.md`), 'utf8')

    // Told at its start, the session answers from the pinned memory: nothing new, nothing recorded.
    const start = await runHook('session-start', 'claude', {...inputs.claude(p.root, 'SessionStart', {source: 'startup'}), session_id: 'told-1'}, {cwd: p.root, env})
    expect(contextOf('claude', start.stdout, 'SessionStart')).toContain('[decision] shop-database: We use PostgreSQL 16 for the shop database')
    expect(await stop('told-1', 'We decided to use PostgreSQL 16 for the shop database, as pinned in the memory.')).toMatchObject({code: 0, stdout: '', stderr: ''})
    await expect(episode('told-1')).rejects.toThrow(/ENOENT/)
    expect(JSON.parse(await readFile(join(p.root, '.nexus', 'hook-sessions', 'claude-told-1.json'), 'utf8')).events).toContain('We use PostgreSQL 16 for the shop database')
    // A session whose start noted nothing (begun before this version) is weighed against the last snapshot of the tree.
    await stop('told-2', 'We decided to use PostgreSQL 16 for the shop database, as pinned in the memory.')
    await expect(episode('told-2')).rejects.toThrow(/ENOENT/)

    // A new version or a reversal is news: recorded.
    await runHook('session-start', 'claude', {...inputs.claude(p.root, 'SessionStart', {source: 'startup'}), session_id: 'changed-1'}, {cwd: p.root, env})
    await stop('changed-1', 'We decided to use PostgreSQL 17 for the shop database from now on.')
    expect(await episode('changed-1')).toContain('## Decided\n- We decided to use PostgreSQL 17 for the shop database from now on.')
    await stop('changed-2', 'We decided not to use PostgreSQL 16 for the shop database.')
    expect(await episode('changed-2')).toContain('## Decided\n- We decided not to use PostgreSQL 16 for the shop database.')
    expect(await hooksLog(p.root)).toBe('')
  })

  it('a session shown a decision in an episode its start listed does not record it again: one copy, not one per session', async () => {
    const p = await project({autoSync: false, project: 'shop'})
    const env = hookEnv(home, 'claude')
    const decision = 'We decided to log every failed delivery to Sentry.'
    const hook = (event: string, session: string, name: string) =>
      runHook(event, 'claude', {...inputs.claude(p.root, name, {source: 'startup', last_assistant_message: decision}), session_id: session, transcript_path: undefined}, {cwd: p.root, env})
    await hook('stop', 'echo-1', 'Stop')
    for (const session of ['echo-2', 'echo-3']) {
      const start = await hook('session-start', session, 'SessionStart')
      expect(contextOf('claude', start.stdout, 'SessionStart')).toMatch(/^- episodes\/\S+\/claude-echo-1\.md — .*We decided to log every failed delivery to Sentry\./m)
      expect(await hook('stop', session, 'Stop')).toMatchObject({code: 0, stdout: '', stderr: ''})
    }
    const today = new Date().toISOString().slice(0, 10)
    expect(await readFile(join(p.memory, `episodes/${today}/claude-echo-1.md`), 'utf8')).toContain(`## Decided\n- ${decision}`)
    for (const session of ['echo-2', 'echo-3']) expect(existsSync(join(p.memory, `episodes/${today}/claude-${session}.md`))).toBe(false)
    // Noted as listed, not as given: an episode of the session would not name it under ## Memory used.
    expect(JSON.parse(await readFile(join(p.root, '.nexus', 'hook-sessions', 'claude-echo-2.json'), 'utf8'))).toMatchObject({files: [], listed: expect.arrayContaining([`episodes/${today}/claude-echo-1.md`])})
    expect(await hooksLog(p.root)).toBe('')
  })

  it('a line holding a secret is left out of the episode and hooks.log says so', async () => {
    const p = await project({autoSync: false})
    const env = hookEnv(home, 'claude')
    const session = 'c1a2b3c4-0000-4000-8000-00000000bbbb'
    const transcript = join(home, '.claude', 'projects', 'p3', `${session}.jsonl`)
    await mkdir(join(transcript, '..'), {recursive: true})
    const secret = SECRET_PROMPT()
    const notes = [{prompt: 'Prepare the release notes', tools: [['Write', {file_path: `${p.root}/RELEASE.md`, content: '- fixed'}]] as Array<[string, Record<string, unknown>]>, answer: 'Release notes are ready.'}]
    await writeFile(transcript, claudeTranscript(session, p.root, [...notes, {prompt: secret, answer: 'Pushed.'}]))
    const run = await runHook('pre-compact', 'claude', {...inputs.claude(p.root, 'PreCompact', {trigger: 'auto', custom_instructions: ''}), session_id: session, transcript_path: transcript}, {cwd: p.root, env})
    expect(run).toMatchObject({code: 0, stdout: '', stderr: ''})
    const text = await readFile(join(p.memory, `episodes/2026-09-01/claude-${session}.md`), 'utf8')
    expect(text).toContain('- `RELEASE.md` (written)')
    expect(text).not.toContain('ghp_')
    expect(await hooksLog(p.root)).toMatch(/claude pre-compact episodes\/2026-09-01\/claude-c1a2b3c4-0000-4000-8000-00000000bbbb\.md: left out 1 line of the episode holding a GitHub/)
  })

  it('with autoSync on, the episode reaches the server through the background sync; the hook does not wait for it', async () => {
    // The way to the server holds every connection until released: a hook that waited for its sync would not be back.
    const way = await heldWay(new URL(server.url))
    try {
      const p = await project({autoSync: true}, way.url)
      const env = hookEnv(home, 'claude')
      const session = 'c1a2b3c4-0000-4000-8000-00000000cccc'
      const transcript = join(home, '.claude', 'projects', 'p4', `${session}.jsonl`)
      await mkdir(join(transcript, '..'), {recursive: true})
      await writeFile(transcript, claudeTranscript(session, p.root, withRoot(p.root, turns)))
      const end = await runHook('session-end', 'claude', {...inputs.claude(p.root, 'SessionEnd', {reason: 'exit'}), session_id: session, transcript_path: transcript}, {cwd: p.root, env})
      expect(end).toMatchObject({code: 0, stdout: '', stderr: ''})
      expect(await pendingBackgroundSyncs(p.root)).toHaveLength(1)
      way.release()
      await waitForBackgroundSyncs(p.root)
      const path = `episodes/2026-09-01/claude-${session}.md`
      const client = new MemoryClient({server: server.url, token: TOKENS.claude})
      expect((await client.pull([path])).files[path].content).toBe(await readFile(join(p.memory, path), 'utf8'))
      expect(await hooksLog(p.root)).toBe('')
    } finally {
      await way.close()
    }
  })
})

describe('jarvis hook: a resumed session', () => {
  /** The transcript of a conversation that was given `context` at its start, as each agent records it (fixtures/hook-context/). */
  async function transcriptHolding(agent: 'claude' | 'codex' | 'gemini', root: string, context: string, after: unknown[] = []): Promise<string> {
    const turn = [{prompt: 'Which Postgres do we run?', answer: 'Postgres 16, as pinned.'}]
    const base = agent === 'claude' ? claudeTranscript('r1', root, turn) : agent === 'codex' ? codexRollout('r1', root, turn) : geminiTranscript('r1', turn)
    const given =
      agent === 'claude'
        ? {type: 'attachment', attachment: {type: 'hook_additional_context', content: [context], hookName: 'SessionStart', hookEvent: 'SessionStart'}, uuid: 'a1', parentUuid: null, sessionId: 'r1'}
        : agent === 'codex'
          ? {timestamp: '2026-09-01T09:00:00.500Z', type: 'response_item', payload: {type: 'message', role: 'developer', content: [{type: 'input_text', text: context}]}}
          : {id: 'g0', timestamp: '2026-09-01T09:00:00.500Z', type: 'user', content: [{text: `<hook_context>${context}</hook_context>\n\nWhich Postgres do we run?`}]}
    const [first, ...rest] = base.trimEnd().split('\n')
    const path = join(root, '..', `${agent}-${Math.random().toString(36).slice(2)}.jsonl`)
    dirs.push(path)
    await writeFile(path, [first, JSON.stringify(given), ...rest, ...after.map((line) => JSON.stringify(line))].join('\n') + '\n')
    return path
  }

  it.each(['claude', 'codex'] as const)('%s: one line when the memory is as the context the conversation holds; the whole context, saying it replaces the earlier ones, once it changed', async (agent) => {
    const p = await project({autoSync: false, project: `resume-${agent}`})
    const env = hookEnv(home, AGENT_ID[agent])
    const start = (source: string, transcript?: string) =>
      runHook('session-start', agent, {...inputs[agent](p.root, 'SessionStart', {source}), session_id: 'r1', transcript_path: transcript ?? null}, {cwd: p.root, env})
    const first = contextOf(agent, (await start('startup')).stdout, 'SessionStart')
    const state = /memory state ([0-9a-f]{12})\)/.exec(first)?.[1]
    expect(state).toMatch(/^[0-9a-f]{12}$/)
    expect(first).not.toContain('It replaces the earlier')

    // The session went on and recorded its episode: not listed to it, it is what the conversation says.
    const stop = await runHook('stop', agent, {...inputs[agent](p.root, 'Stop', {last_assistant_message: 'We decided to keep Postgres 16 for the reports.'}), session_id: 'r1', transcript_path: null}, {cwd: p.root, env})
    expect(stop).toMatchObject({code: 0, stdout: ''})
    const transcript = await transcriptHolding(agent, p.root, first)
    const resumed = contextOf(agent, (await start('resume', transcript)).stdout, 'SessionStart')
    expect(resumed.split('\n')).toHaveLength(1)
    expect(resumed).toMatch(new RegExp(`^\\[JARVIS SHARED MEMORY\\] Read again for ${AGENT_ID[agent]} at .*: unchanged since the \\[JARVIS SHARED MEMORY\\] block of this conversation with memory state ${state}, which is still current`))

    // The pinned memory changed since: the whole context, saying it replaces the earlier blocks.
    await appendEvent(server.url, 'claude', {kind: 'decision', key: 'db-version', content: `Postgres 17 from now on (${agent}).`, scope: `project:resume-${agent}`})
    const changed = contextOf(agent, (await start('resume', transcript)).stdout, 'SessionStart')
    expect(changed).toContain(`db-version: Postgres 17 from now on (${agent}).`)
    expect(changed.split('\n')[1]).toBe('It replaces the earlier [JARVIS SHARED MEMORY] blocks of this conversation: where they differ, this one is current.')
    expect(changed).not.toContain(`memory state ${state}`)
    expect(await hooksLog(p.root)).toBe('')
  })

  it('a compaction since the context, or Gemini CLI (which drops its hook context on resume): the whole context again', async () => {
    const p = await project({autoSync: false, project: 'resume-other'})
    const start = async (agent: 'claude' | 'gemini', source: string, transcript?: string) =>
      contextOf(agent, (await runHook('session-start', agent, {...inputs[agent](p.root, 'SessionStart', {source}), session_id: 'r2', transcript_path: transcript}, {cwd: p.root, env: hookEnv(home, agent)})).stdout, 'SessionStart')
    const claude = await start('claude', 'startup')
    const compacted = await transcriptHolding('claude', p.root, claude, [{type: 'system', subtype: 'compact_boundary', parentUuid: null, content: 'Conversation compacted'}])
    for (const source of ['resume', 'compact']) expect((await start('claude', source, compacted)).split('\n')[1]).toMatch(/^It replaces the earlier \[JARVIS SHARED MEMORY\] blocks/)
    const gemini = await start('gemini', 'startup')
    const resumed = await start('gemini', 'resume', await transcriptHolding('gemini', p.root, gemini))
    expect(resumed.split('\n')[1]).toMatch(/^It replaces the earlier \[JARVIS SHARED MEMORY\] blocks/)
    expect(resumed).toContain('# Pinned memory')
  })
})

describe('jarvis hook: the prompt hook', () => {
  it('a question typed after a pasted log gets its memory file, as one typed before the log does', async () => {
    const p = await project()
    const env = hookEnv(home, 'claude')
    const log = Array.from({length: 40}, (_, i) => `GET /api/cart${i + 1} 200 12ms req-${i + 1}`).join(' ')
    for (const typed of [`${log} Which pgbouncer pooling mode do we run?`, `Which pgbouncer pooling mode do we run? ${log}`]) {
      const run = await runHook('prompt', 'claude', inputs.claude(p.root, 'UserPromptSubmit', {prompt: typed}), {cwd: p.root, env})
      expect(contextOf('claude', run.stdout, 'UserPromptSubmit')).toContain('- decisions/postgres/pgbouncer-pooling.md')
    }
  })
})

describe('jarvis hook: a workspace of several projects', () => {
  it("a blog session is shown the workspace's files and its own, never shop's: not at its start, not at a prompt", async () => {
    const p = await project({autoSync: false, project: 'blog'})
    const env = hookEnv(home, 'claude')
    const session = (sessionId: string, project: string, text: string) =>
      recordEpisode(p.root, {agent: 'claude', agentId: 'claude', sessionId, adds: true, digest: digestOf([{kind: 'answer', text}]), now: new Date(), lockTimeoutMs: 1000, project})
    // What every tree of the workspace syncs: shop's session and notes (one matching the name "blog"), blog's session.
    await session('shop-1', 'shop', 'We decided to log every failed delivery to Sentry.')
    await session('blog-1', 'blog', 'We decided to build the blog with Astro.')
    await writeMemory(p, 'notes/deliveries.md', '---\ntitle: Failed deliveries\nproject: shop\n---\nEvery failed delivery is logged to Sentry with the order id.\n')
    await writeMemory(p, 'notes/shop-blog-links.md', '---\ntitle: Shop links to the blog\nproject: shop\n---\nEvery order page of the shop links to the blog.\n')

    const start = await runHook('session-start', 'claude', {...inputs.claude(p.root, 'SessionStart', {source: 'startup'}), session_id: 'b1'}, {cwd: p.root, env})
    const context = contextOf('claude', start.stdout, 'SessionStart')
    expect(context).toContain('## Memory files of the workspace and of project blog (')
    expect(context).toContain('- PROJECT_MEMORY.md — The demo shop')
    expect(context).toMatch(/^- episodes\/\S+\/claude-blog-1\.md — /m)
    expect(context).not.toContain('shop-1')
    expect(context).not.toContain('shop-blog-links')
    expect(context).not.toContain('Sentry')

    const prompt = await runHook('prompt', 'claude', {...inputs.claude(p.root, 'UserPromptSubmit', {prompt: 'Where is a failed delivery logged, Sentry?'}), session_id: 'b1'}, {cwd: p.root, env})
    expect(prompt).toMatchObject({code: 0, stdout: '', stderr: ''})
    expect(await hooksLog(p.root)).toBe('')
  })
})

/** A way to the server at `target` that holds each connection, unanswered, until `release()`: a slow network. */
async function heldWay(target: URL) {
  const held: Socket[] = []
  const piped = new Set<Socket>()
  let holding = true
  const pipe = (socket: Socket) => {
    const onward = connect(Number(target.port), target.hostname)
    for (const end of [socket, onward]) {
      piped.add(end)
      end.on('error', () => {
        socket.destroy()
        onward.destroy()
      })
    }
    socket.pipe(onward).pipe(socket)
  }
  const gate = createServer((socket) => (holding ? held.push(socket) : pipe(socket)))
  await new Promise<void>((resolve) => gate.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(gate.address() as AddressInfo).port}`,
    release() {
      holding = false
      for (const socket of held.splice(0)) pipe(socket)
    },
    async close() {
      for (const socket of [...held, ...piped]) socket.destroy()
      await new Promise((resolve) => gate.close(resolve))
    },
  }
}

describe('jarvis hook never breaks the agent', () => {
  const everyHook = (root: string, transcript: string) =>
    [
      ['session-start', inputs.claude(root, 'SessionStart', {source: 'startup'})],
      ['prompt', inputs.claude(root, 'UserPromptSubmit', {prompt: 'Which pgbouncer pooling mode do we run?'})],
      ['pre-compact', {...inputs.claude(root, 'PreCompact', {trigger: 'manual'}), transcript_path: transcript}],
      ['stop', {...inputs.claude(root, 'Stop', {stop_hook_active: false, last_assistant_message: 'Done.'}), transcript_path: transcript}],
      ['session-end', {...inputs.claude(root, 'SessionEnd', {reason: 'exit'}), transcript_path: transcript}],
    ] as const

  async function transcriptFor(root: string): Promise<string> {
    const path = join(root, '..', `${Math.random().toString(36).slice(2)}.jsonl`)
    await writeFile(path, claudeTranscript('c1a2b3c4-0000-4000-8000-000000000001', root, [{prompt: 'Tune pgbouncer', answer: 'We chose transaction pooling.'}]))
    dirs.push(path)
    return path
  }

  it('server down: every hook exits 0; session start answers with the one-line notice; hooks.log says why', async () => {
    const port = await closedPort()
    const p = await makeProject(`http://127.0.0.1:${port}`, {autoSync: true})
    dirs.push(p.root)
    await writeMemory(p, 'decisions/postgres/pgbouncer-pooling.md', PGBOUNCER)
    const env = hookEnv(home, 'claude')
    const transcript = await transcriptFor(p.root)
    const runs = []
    for (const [event, input] of everyHook(p.root, transcript)) runs.push([event, await runHook(event, 'claude', input, {cwd: p.root, env})] as const)
    for (const [, run] of runs) expect(run).toMatchObject({code: 0, stderr: ''})
    const start = runs[0][1]
    const notice = contextOf('claude', start.stdout, 'SessionStart')
    expect(notice.split('\n')).toHaveLength(1)
    expect(notice).toMatch(new RegExp(`^jarvis: the shared memory could not be read \\(.*127\\.0\\.0\\.1:${port}.*\\); tell the user and do not go on from a guess`))
    expect(notice).not.toContain('Postgres 16')
    // The prompt hook reads only local memory files: it still answers.
    expect(contextOf('claude', runs[1][1].stdout, 'UserPromptSubmit')).toContain('pgbouncer-pooling.md')
    for (const [, run] of runs.slice(2)) expect(run.stdout).toBe('')
    await waitForBackgroundSyncs(p.root)
    const log = await hooksLog(p.root)
    expect(log).toMatch(/^\S+ claude session-start the shared memory could not be read: .*127\.0\.0\.1/m)
    expect(log).toMatch(/^\S+ claude sync the episode was recorded but not synced \(.*\); it stays in \.memory\/ and the next `jarvis sync` sends it$/m)
    // The episode is there for the next sync.
    expect(await readFile(join(p.memory, 'episodes/2026-09-01/claude-c1a2b3c4-0000-4000-8000-000000000001.md'), 'utf8')).toContain('## Decided\n- We chose transaction pooling.')
  })

  it('a token the server refuses: the notice names it and keeps what to do whole', async () => {
    const p = await project()
    const run = await runHook('session-start', 'gemini', inputs.gemini(p.root, 'SessionStart', {source: 'startup'}), {cwd: p.root, env: hookEnv(home, 'gemini', {JARVIS_TOKEN: 'not-a-token-of-this-server'})})
    const notice = contextOf('gemini', run.stdout, 'SessionStart')
    expect(notice.split('\n')).toHaveLength(1)
    expect(notice).toMatch(/^jarvis: the shared memory could not be read \(the jarvis server at .* refused JARVIS_TOKEN \(HTTP 401/)
    expect(notice).toMatch(/: set JARVIS_TOKEN to gemini's token, or store gemini's own with `jarvis auth login --agent gemini --with-token` \(token on stdin, kept in [^…]*\)\); tell the user and do not go on from a guess about what it holds\.$/)
  })

  it('a server that accepts but never answers: session start gives up after its deadline and the hook exits at once', async () => {
    const sockets: Socket[] = []
    const hung = createServer((socket) => void sockets.push(socket))
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve))
    try {
      const p = await makeProject(`http://127.0.0.1:${(hung.address() as AddressInfo).port}`)
      dirs.push(p.root)
      const run = await runHook('session-start', 'gemini', inputs.gemini(p.root, 'SessionStart', {source: 'startup'}), {cwd: p.root, env: hookEnv(home, 'gemini')})
      expect(run).toMatchObject({code: 0, stderr: ''})
      // Its own deadline, said: not the agent's hook timeout, which would have dropped the context.
      expect(contextOf('gemini', run.stdout, 'SessionStart')).toMatch(/^jarvis: the shared memory could not be read \(the server did not answer within 8 s\)/)
    } finally {
      for (const socket of sockets) socket.destroy()
      hung.close()
    }
  }, 30_000)

  it('tree locked: every hook exits 0 and logs why; session start answers with the one-line notice; a prompt is still answered; the episode is written once the tree is free', async () => {
    const p = await project({lockTimeout: 300})
    const env = hookEnv(home, 'claude')
    const transcript = await transcriptFor(p.root)
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let locked!: () => void
    const taken = new Promise<void>((resolve) => (locked = resolve))
    const holder = withTreeLock(p.root, {command: 'test holder'}, async () => {
      locked()
      await held
    })
    await taken
    const runs = []
    try {
      for (const [event, input] of everyHook(p.root, transcript)) runs.push([event, await runHook(event, 'claude', input, {cwd: p.root, env})] as const)
    } finally {
      release()
      await holder
    }
    for (const [, run] of runs) expect(run).toMatchObject({code: 0, stderr: ''})
    const notice = contextOf('claude', runs[0][1].stdout, 'SessionStart')
    expect(notice).toMatch(new RegExp(`^jarvis: the shared memory could not be read \\(the jarvis tree at .* is locked by process ${process.pid}.*\\); tell the user`))
    // The prompt's recall reads without the lock (a sync can hold it for seconds): the agent still gets its memory.
    const [, promptRun] = runs[1]
    expect(contextOf('claude', promptRun.stdout, 'UserPromptSubmit')).toContain('pgbouncer')
    for (const [, run] of runs.slice(2)) expect(run.stdout).toBe('')
    const log = await hooksLog(p.root)
    for (const [event] of runs.filter(([event]) => event !== 'prompt')) expect(log).toMatch(new RegExp(`^\\S+ claude ${event} .*is locked by process ${process.pid}`, 'm'))
    expect(log).not.toMatch(/ claude prompt .*is locked/)
    // What the session decided waited in .nexus/ while the tree was locked; the hooks' background sync wrote it after.
    expect(log).toMatch(/ claude stop .*: the episode waits in \.nexus\/pending-episodes\//)
    await waitForBackgroundSyncs(p.root)
    const episode = await readFile(join(p.memory, 'episodes', '2026-09-01', 'claude-c1a2b3c4-0000-4000-8000-000000000001.md'), 'utf8')
    expect(episode).toContain('- We chose transaction pooling.')
    expect(existsSync(join(p.root, '.nexus', 'pending-episodes'))).toBe(false)
  })

  // Only root can run a hook as another user, the one who cannot write the tree.
  it.runIf(process.getuid?.() === 0)('a tree the user cannot write (a shared checkout): session start still reads the memory', async () => {
    const p = await project()
    const nobodyHome = await tempDir('jarvis-hook-nobody-')
    dirs.push(nobodyHome)
    await chmod(nobodyHome, 0o777)
    for (let dir = p.root; dir !== dirname(dir); dir = dirname(dir)) await chmod(dir, (await stat(dir)).mode | 0o555)
    const run = await runHook('session-start', 'claude', inputs.claude(p.root, 'SessionStart', {source: 'startup'}), {cwd: p.root, env: hookEnv(nobodyHome, 'claude'), uid: 65534, gid: 65534})
    expect(run).toMatchObject({code: 0, stderr: ''})
    const context = contextOf('claude', run.stdout, 'SessionStart')
    expect(context).toContain('Postgres 16 is the only database')
    expect(context).toContain('PROJECT_MEMORY.md')
    expect(existsSync(join(p.root, '.nexus', 'lock'))).toBe(false)
  })

  it('malformed stdin, unknown event or agent, bad flags: exit 0, nothing on stderr, a line in hooks.log', async () => {
    const p = await project()
    const env = hookEnv(home, 'claude')
    const bad = await runHook('prompt', 'claude', '{"prompt": "pgbouncer', {cwd: p.root, env})
    expect(bad).toMatchObject({code: 0, stdout: '', stderr: ''})
    const unknownEvent = await runHook('teardown', 'claude', {}, {cwd: p.root, env})
    const unknownAgent = await runHook('prompt', 'cursor', {prompt: 'pgbouncer'}, {cwd: p.root, env})
    const badFlag = await runHook('session-start', 'claude', {}, {cwd: p.root, env, extra: ['--max-tokens', 'lots']})
    for (const run of [unknownEvent, unknownAgent, badFlag]) expect(run).toMatchObject({code: 0, stdout: '', stderr: ''})
    const log = await hooksLog(p.root)
    expect(log).toMatch(/^\S+ claude prompt the hook input on stdin is not JSON/m)
    // Its cause alone: input that is not JSON gives no session id, which is no second failure.
    expect(await runHook('stop', 'claude', 'not json', {cwd: p.root, env})).toMatchObject({code: 0, stdout: '', stderr: ''})
    expect((await hooksLog(p.root)).split('\n').filter((line) => / claude stop /.test(line))).toEqual([expect.stringMatching(/^\S+ claude stop the hook input on stdin is not JSON \(/)])
    expect(log).toMatch(/^\S+ claude teardown unknown hook event "teardown"/m)
    expect(log).toMatch(/^\S+ cursor prompt unknown agent "cursor"/m)
    expect(log).toMatch(/^\S+ - - jarvis hook session-start --agent claude --max-tokens lots: .*max-tokens/m)
  })

  it('a session that ended before writing its transcript (`claude mcp list` starts and ends one): no failure logged', async () => {
    const p = await project()
    const env = hookEnv(home, 'claude')
    const never = join(p.root, '..', 'never-written.jsonl')
    const end = await runHook('session-end', 'claude', {...inputs.claude(p.root, 'SessionEnd', {reason: 'other'}), transcript_path: never}, {cwd: p.root, env})
    expect(end).toMatchObject({code: 0, stdout: '', stderr: ''})
    expect(await hooksLog(p.root)).toBe('')
    // A transcript there but unreadable still is one.
    const folder = join(p.root, '..', 'a-folder.jsonl')
    await mkdir(folder, {recursive: true})
    dirs.push(folder)
    await runHook('session-end', 'claude', {...inputs.claude(p.root, 'SessionEnd', {reason: 'exit'}), transcript_path: folder}, {cwd: p.root, env})
    expect(await hooksLog(p.root)).toMatch(/session-end the transcript could not be read/)
  })

  it('outside any jarvis tree: exit 0, nothing printed, nothing created', async () => {
    const plain = await tempDir('jarvis-hook-plain-')
    dirs.push(plain)
    const env = hookEnv(home, 'claude')
    for (const event of ['session-start', 'prompt', 'stop']) {
      const run = await runHook(event, 'claude', inputs.claude(plain, 'SessionStart', {prompt: 'pgbouncer'}), {cwd: plain, env})
      expect(run).toMatchObject({code: 0, stdout: '', stderr: ''})
    }
    await expect(readFile(join(plain, '.nexus', 'hooks.log'), 'utf8')).rejects.toThrow()
  })

  it('finds the tree from the hook input cwd (a subdirectory), not only from where it runs', async () => {
    const p = await project()
    const sub = join(p.root, 'packages', 'api')
    await mkdir(sub, {recursive: true})
    const elsewhere = await tempDir('jarvis-hook-cwd-')
    dirs.push(elsewhere)
    const run = await runHook('prompt', 'claude', inputs.claude(sub, 'UserPromptSubmit', {prompt: 'ssh certificates for the CI runner'}), {cwd: elsewhere, env: hookEnv(home, 'claude')})
    expect(contextOf('claude', run.stdout, 'UserPromptSubmit')).toContain('decisions/ssh/runner-certificates.md')
  })

  it('--max-tokens cuts the session-start context at line boundaries, pinned memory first', async () => {
    const p = await project()
    for (let i = 0; i < 30; i++) await appendEvent(server.url, 'claude', {kind: 'fact', key: `budget-fact-${i}`, content: `Budget fact number ${i}: ${'x'.repeat(80)}`, scope: 'project:demo'})
    const run = await runHook('session-start', 'claude', inputs.claude(p.root, 'SessionStart', {source: 'startup'}), {cwd: p.root, env: hookEnv(home, 'claude'), extra: ['--max-tokens', '300']})
    const context = contextOf('claude', run.stdout, 'SessionStart')
    expect(Math.ceil(context.length / 4)).toBeLessThanOrEqual(300)
    expect(context).toContain('[decision] db-engine')
    expect(context).toMatch(/\n… \d+ more lines? left out to stay within 300 tokens/)
    for (const line of context.split('\n')) if (line.includes('budget-fact-')) expect(line).toMatch(/x{10,}.* \(claude, \d{4}-\d{2}-\d{2}\)$/)
  })
})
