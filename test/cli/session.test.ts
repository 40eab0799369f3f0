/** `jarvis session list` and `jarvis session sync` as a user runs them: the real binary, temp tool homes. */
import {mkdir, readFile, utimes, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'

import type {UniversalMessage} from '../../src/schemas/index.js'
import {writeClaudeSession} from '../../src/session/claude.js'
import {claudeProjectDir} from '../../src/session/claude-paths.js'
import type {SessionListResult, SessionSyncResult} from '../../src/session/sync.js'
import {initTree, withTreeLock} from '../../src/store/index.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {removeAll, tempDir} from '../helpers/world.js'

const cleanup: string[] = []
afterAll(async () => removeAll(cleanup))

let n = 0
function say(role: 'user' | 'assistant', text: string): UniversalMessage {
  n++
  return {id: `c${n}`, parentId: null, sessionId: 'cli', timestamp: new Date(Date.parse('2026-05-02T09:00:00Z') + n * 1000).toISOString(), role, type: 'message', content: {text}, metadata: {provider: 'claude'}}
}

async function project(): Promise<{root: string; env: NodeJS.ProcessEnv; claude: {sessionId: string; path: string}}> {
  const dir = await tempDir('jarvis-cli-session-')
  cleanup.push(dir)
  const root = join(dir, 'project')
  await initTree(root, {})
  // A short lock wait, so the "lock held" case ends quickly.
  const configPath = join(root, '.nexus', 'config.json')
  const config = JSON.parse(await readFile(configPath, 'utf8'))
  await writeFile(configPath, JSON.stringify({...config, sync: {...config.sync, lockTimeout: 300, retryDelay: 10}}, null, 2))
  const env = {CLAUDE_CONFIG_DIR: join(dir, 'claude'), GEMINI_CLI_HOME: join(dir, 'gemini-home')}
  const claude = await writeClaudeSession(root, [say('user', 'Why does the build fail?'), say('assistant', 'A missing import in cli.ts.')], {env: {...process.env, ...env}})
  const past = new Date(Date.now() - 60_000)
  await utimes(claude.path, past, past)
  return {root, env, claude}
}

describe('jarvis session', () => {
  it('sync --to gemini prints how to resume; --json gives the envelope; list shows both sessions', async () => {
    const {root, env, claude} = await project()
    const human = await runJarvis(['session', 'sync', claude.sessionId.slice(0, 8), '--to', 'gemini', '--tag', 'build'], {cwd: root, env})
    expect(human.stderr).toBe('')
    expect(human.code).toBe(0)
    expect(human.stdout).toMatch(/created Gemini CLI session [0-9a-f-]{36}: 2 messages carried/)
    expect(human.stdout).toMatch(/checkpoint build: created \(.*checkpoint-build\.json\)/)
    expect(human.stdout).toMatch(/backup: \.nexus\/gemini-backup\/build\.json/)
    const gemini = /created Gemini CLI session ([0-9a-f-]{36})/.exec(human.stdout)![1]
    expect(human.stdout).toContain(`resume: cd ${root} && gemini --resume ${gemini}\n    or, inside Gemini CLI: /chat resume build`)

    const again = await runJarvis(['session', 'sync', 'build', '--to', 'gemini', '--json'], {cwd: root, env})
    expect(again.code).toBe(0)
    const result = envelope<SessionSyncResult>(again)
    expect(result).toMatchObject({status: 0, warnings: [], result: {tag: 'build', added: 0, written: false, mode: 'incremental', to: {provider: 'gemini', messageCount: 2}}})

    const list = await runJarvis(['session', 'list', '--json'], {cwd: root, env})
    expect(list.code).toBe(0)
    const sessions = envelope<SessionListResult>(list).result!.sessions
    expect(sessions.map((s) => [s.provider, s.tag, s.messageCount, s.sync.status]).sort()).toEqual([
      ['claude', 'build', 2, 'in-sync'],
      ['gemini', 'build', 2, 'in-sync'],
      ['gemini', 'build', 2, 'in-sync'],
    ])
    const table = await runJarvis(['session', 'list'], {cwd: root, env})
    expect(table.stdout).toMatch(/^TOOL\s+SESSION\s+MESSAGES\s+LAST ACTIVITY\s+TAG\s+SYNC/)
    expect(table.stdout).toContain(claude.sessionId)
    expect(table.stdout).toMatch(/build \(checkpoint\)\s+2/)
    // The chat session the checkpoint came with is named by its id, not as a second checkpoint.
    expect(table.stdout.match(/\(checkpoint\)/g)).toHaveLength(1)
    expect(table.stdout).toContain(gemini)
  })

  it('a conversation carried Claude → Gemini → Codex → Claude adds nothing to where it came from, however often', async () => {
    const {root, env} = await project()
    const codexEnv = {...env, CODEX_HOME: join(root, '..', 'codex-home')}
    // A real Claude Code session with a failed tool call: Codex keeps no error flag, only the error's text.
    const id = '6b8f1c2a-0d3e-4f5a-9b7c-1a2b3c4d5e6f'
    const original = (await readFile(new URL(`../../fixtures/transcripts/claude/${id}.jsonl`, import.meta.url), 'utf8')).replaceAll('/home/dev/acme-api', root)
    const path = join(claudeProjectDir(root, {...process.env, ...env}), `${id}.jsonl`)
    await mkdir(dirname(path), {recursive: true})
    await writeFile(path, original)
    const past = new Date(Date.now() - 60_000)
    await utimes(path, past, past)
    expect((await runJarvis(['session', 'sync', id, '--to', 'gemini', '--tag', 'trip'], {cwd: root, env: codexEnv})).code).toBe(0)
    expect((await runJarvis(['session', 'sync', 'trip', '--to', 'codex'], {cwd: root, env: codexEnv})).code).toBe(0)
    for (const round of [1, 2]) {
      const back = await runJarvis(['session', 'sync', 'trip', '--to', 'claude', '--json'], {cwd: root, env: codexEnv})
      expect(envelope<SessionSyncResult>(back).result, `round ${round}`).toMatchObject({added: 0, written: false, to: {provider: 'claude', sessionId: id}})
    }
    expect(await readFile(path, 'utf8')).toBe(original)
  })

  it('sync --to claude creates a session and tells how to resume it', async () => {
    const {root, env, claude} = await project()
    await runJarvis(['session', 'sync', claude.sessionId, '--to', 'gemini', '--tag', 'there'], {cwd: root, env})
    const run = await runJarvis(['session', 'sync', 'there', '--to', 'claude', '--json'], {cwd: root, env})
    // The Claude session already holds everything: nothing to append, and the linked session is the target.
    expect(envelope<SessionSyncResult>(run).result).toMatchObject({added: 0, to: {provider: 'claude', sessionId: claude.sessionId, created: false}, resume: [`cd ${root} && claude --resume ${claude.sessionId}`]})
  })

  it('an unknown tag: exit 2, one line, no stack; the JSON envelope names the code', async () => {
    const {root, env} = await project()
    const human = await runJarvis(['session', 'sync', 'no-such-tag', '--to', 'gemini'], {cwd: root, env})
    expect(human.code).toBe(2)
    expect(human.stderr).toMatch(/no session "no-such-tag" in this project/)
    expect(human.stderr).not.toMatch(/\n\s+at /)
    const json = await runJarvis(['session', 'sync', 'no-such-tag', '--to', 'gemini', '--json'], {cwd: root, env})
    expect(json.code).toBe(2)
    expect(envelope(json)).toMatchObject({status: 2, error: {code: 'SESSION_NOT_FOUND'}})
    expect((await runJarvis(['session', 'sync', 'x'], {cwd: root, env})).code).toBe(2) // --to is required
    expect((await runJarvis(['session', 'sync', 'x', '--to', 'openclaw'], {cwd: root, env})).code).toBe(2)
  })

  it('a Claude session changed seconds ago: exit 4 unless --force', async () => {
    const {root, env, claude} = await project()
    const out = envelope<SessionSyncResult>(await runJarvis(['session', 'sync', claude.sessionId, '--to', 'gemini', '--tag', 'live', '--json'], {cwd: root, env})).result!
    const checkpoint = JSON.parse(await readFile(out.checkpoint!.path, 'utf8'))
    checkpoint.history.push({role: 'user', parts: [{text: 'added in gemini'}]}, {role: 'model', parts: [{text: 'noted'}]})
    await writeFile(out.checkpoint!.path, JSON.stringify(checkpoint, null, 2))
    const now = new Date()
    await utimes(claude.path, now, now)
    const refused = await runJarvis(['session', 'sync', 'live', '--to', 'claude', '--json'], {cwd: root, env})
    expect(refused.code).toBe(4)
    expect(envelope(refused)).toMatchObject({status: 4, error: {code: 'SESSION_IN_USE'}})
    const forced = await runJarvis(['session', 'sync', 'live', '--to', 'claude', '--force', '--json'], {cwd: root, env})
    expect(envelope<SessionSyncResult>(forced).result).toMatchObject({added: 2})
  })

  it('the tree lock held by another process: exit 6', async () => {
    const {root, env, claude} = await project()
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let locked!: () => void
    const taken = new Promise<void>((resolve) => (locked = resolve))
    const holder = withTreeLock(root, {}, async () => {
      locked()
      await held
    })
    await taken
    try {
      const run = await runJarvis(['session', 'sync', claude.sessionId, '--to', 'gemini', '--json'], {cwd: root, env})
      expect(run.code).toBe(6)
      expect(envelope(run)).toMatchObject({status: 6, error: {code: 'LOCKED'}})
    } finally {
      release()
      await holder
    }
  })
})
