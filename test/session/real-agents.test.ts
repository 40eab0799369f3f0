/**
 * Session hand-off proven by the agents themselves: Claude Code, Gemini CLI and Codex CLI, installed from npm, each
 * start a real session in one project (temp HOME, a stand-in model on 127.0.0.1 that records every request). Each
 * session is carried to the two other tools with `jarvis session sync`, and resumed there headless
 * (`claude -p --resume`, `gemini --resume … -p`, `codex exec resume`): the request that tool sends its model must hold
 * the earlier conversation. The carried sessions must show in the tools' own lists (`gemini --list-sessions`, Codex's
 * thread list), the source files must not change, and carrying again after the source went on adds only the new turn.
 */
import {execFile} from 'node:child_process'
import {createHash} from 'node:crypto'
import {mkdir, readFile, readdir, realpath, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {SessionListResult, SessionSyncResult} from '../../src/session/sync.js'
import {initTree} from '../../src/store/index.js'
import {installAgentCli} from '../helpers/agent-clis.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {startAppServer} from '../helpers/codex-app-server.js'
import {codexStandInConfig, type ModelStandIn, standInEnv, startModelStandIn} from '../helpers/model-stand-in.js'
import {removeAll, tempDir} from '../helpers/world.js'

type Tool = 'claude' | 'gemini' | 'codex'
const TOOLS: Tool[] = ['claude', 'gemini', 'codex']

const dirs: string[] = []
let model: ModelStandIn
const bin: Partial<Record<Tool, string>> = {}
let root: string
let home: string
let agentEnv: NodeJS.ProcessEnv
let jarvisEnv: NodeJS.ProcessEnv

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, {cwd: root, env, timeout: 180_000, maxBuffer: 32 * 1024 * 1024}, (error, stdout, stderr) => {
      if (error && typeof error.code === 'string') return reject(error)
      resolve({code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr})
    })
    // Codex reads a piped stdin to its end before it starts: give it an empty one.
    child.stdin?.end()
  })
}

const said = (ran: Ran) => `exit ${ran.code}\n--- stdout\n${ran.stdout}\n--- stderr\n${ran.stderr}`

/** What each tool sends its model: the requests to its own API endpoint (Gemini's router classification left out). */
const ENDPOINT: Record<Tool, (url: string, body: string) => boolean> = {
  claude: (url) => /\/v1\/messages$/.test(url.split('?')[0]),
  gemini: (url, body) => /:(stream)?[gG]enerateContent$/.test(url.split('?')[0]) && !/complexity_score/.test(body),
  codex: (url) => /\/v1\/responses$/.test(url.split('?')[0]),
}

/** Runs one turn of `tool` (a new session, or `resume` one) and returns what it sent its model during that turn. */
async function turn(tool: Tool, prompt: string, resume?: string): Promise<{ran: Ran; sent: string}> {
  const before = model.requests.length
  const args: Record<Tool, string[]> = {
    claude: ['-p', ...(resume ? ['--resume', resume] : []), prompt, '--output-format', 'json', '--max-turns', '1'],
    gemini: [...(resume ? ['--resume', resume] : []), '-p', prompt],
    codex: ['exec', '--skip-git-repo-check', ...(resume ? ['resume', resume] : []), prompt],
  }
  const ran = await run(bin[tool]!, args[tool], agentEnv)
  const sent = model.requests
    .slice(before)
    .filter((r) => ENDPOINT[tool](r.url, r.body))
    .map((r) => r.body)
    .join('\n')
  expect(sent, `${tool} sent nothing to its model:\n${said(ran)}`).not.toBe('')
  return {ran, sent}
}

async function jarvis<T>(args: string[]): Promise<T> {
  const ran = await runJarvis([...args, '--json'], {cwd: root, env: jarvisEnv})
  expect(ran.code, said(ran)).toBe(0)
  return envelope<T>(ran).result!
}

/** Gemini's session files under the temp HOME, each with its size and first line: what a failed list check needs to be understood. */
async function geminiFiles(): Promise<string> {
  const lines: string[] = []
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, {withFileTypes: true}).catch(() => [])) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) await walk(path)
      else lines.push(`${path} (${(await stat(path)).size} bytes) ${(await readFile(path, 'utf8')).split('\n')[0].slice(0, 300)}`)
    }
  }
  await walk(join(home, '.gemini', 'tmp'))
  return lines.join('\n')
}

const sessionsOf = async () => (await jarvis<SessionListResult>(['session', 'list'])).sessions
const sha = async (path: string) => createHash('sha256').update(await readFile(path)).digest('hex')

/** Where the tool itself writes: Codex's and Gemini's own config, a trusted folder everywhere a tool asks. */
async function setUpUser(): Promise<void> {
  home = await realpath(await tempDir('jarvis-handoff-home-'))
  root = await realpath(await tempDir('jarvis-handoff-project-'))
  dirs.push(home, root)
  await initTree(root, {})
  const codexHome = join(home, '.codex')
  await mkdir(codexHome, {recursive: true})
  await writeFile(join(codexHome, 'config.toml'), codexStandInConfig(model, root))
  await mkdir(join(home, '.gemini'), {recursive: true})
  // Session clean-up off: Gemini CLI 0.61 resumed headless in a later minute than the session began writes a second
  // file for it holding no message, and its next start deletes every file of that session as unreadable — its own
  // sessions as much as carried ones (docs/session.md). Left on, this test would fail whenever a minute turned.
  const general = {enableAutoUpdate: false, sessionRetention: {enabled: false}}
  await writeFile(join(home, '.gemini', 'settings.json'), JSON.stringify({security: {auth: {selectedType: 'gemini-api-key'}}, general, privacy: {usageStatisticsEnabled: false}}))
  await writeFile(join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({[root]: 'TRUST_FOLDER'}))
  const keep = ['PATH', 'LANG', 'TMPDIR']
  const base: NodeJS.ProcessEnv = Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]))
  const homes = {HOME: home, CODEX_HOME: codexHome}
  agentEnv = {
    ...base,
    ...homes,
    NO_COLOR: '1',
    CI: '1',
    ...standInEnv(model),
  }
  jarvisEnv = {...homes, CLAUDE_CONFIG_DIR: join(home, '.claude'), GEMINI_CLI_HOME: home}
}

beforeAll(async () => {
  // Numbered answers: two replies of one conversation differ, as a real model's do (identical ones would merge as one).
  model = await startModelStandIn({reply: (n) => `Stand-in model reply ${n}.`})
  for (const tool of TOOLS) bin[tool] = await installAgentCli(tool)
  await setUpUser()
}, 900_000)

afterAll(async () => {
  await model?.close()
  await removeAll(dirs)
})

/** A word only one prompt holds, so finding it in a request proves where that request's history came from. */
const codeword = (tool: Tool, what: string) => `${what}-${tool}-${createHash('sha256').update(`${tool}${what}${root}`).digest('hex').slice(0, 10)}`

describe('a conversation continues in any agent (real Claude Code, Gemini CLI and Codex CLI)', () => {
  it('each tool’s session, carried to each other tool, is resumed there with the earlier conversation; carrying again adds only the new turn', async () => {
    // 1. A real session in each tool.
    const origin: Record<Tool, {sessionId: string; path: string; word: string}> = {} as never
    for (const tool of TOOLS) {
      const word = codeword(tool, 'ORIGIN')
      const before = new Set((await sessionsOf()).map((s) => s.sessionId))
      const {ran} = await turn(tool, `Remember the codeword ${word} for later.`)
      const started = (await sessionsOf()).filter((s) => s.provider === tool && !s.tag && !before.has(s.sessionId))
      expect(started, `${tool} started no session jarvis can see:\n${said(ran)}`).toHaveLength(1)
      origin[tool] = {sessionId: started[0].sessionId, path: started[0].path, word}
    }

    // 2. Each carried to each other tool, and resumed there headless.
    const carried = new Map<string, SessionSyncResult>()
    for (const from of TOOLS) {
      for (const to of TOOLS.filter((t) => t !== from)) {
        const before = await sha(origin[from].path)
        const result = await jarvis<SessionSyncResult>(['session', 'sync', origin[from].sessionId, '--to', to])
        expect(result).toMatchObject({from: {provider: from, sessionId: origin[from].sessionId}, to: {provider: to, created: true}, added: 2})
        expect(await sha(origin[from].path), `carrying ${from} → ${to} left the source as it was`).toBe(before)
        carried.set(`${from}->${to}`, result)
        const {sent, ran} = await turn(to, `What was the codeword? (${from} → ${to})`, result.to.sessionId)
        expect(sent, `${to} resumed the ${from} conversation without it:\n${said(ran)}`).toContain(origin[from].word)
      }
    }

    // 3. The tools' own lists show the carried conversations.
    const listed = await run(bin.gemini!, ['--list-sessions'], agentEnv)
    for (const from of ['claude', 'codex'] as const) {
      expect(listed.stdout + listed.stderr, `${said(listed)}\n--- Gemini's files\n${await geminiFiles()}`).toContain(carried.get(`${from}->gemini`)!.to.sessionId)
    }
    const app = await startAppServer(bin.codex!, root, agentEnv)
    try {
      const threads = (await app.request('thread/list', {})).data as Array<{id: string; cwd: string}>
      for (const from of ['claude', 'gemini'] as const) {
        expect(threads.map((t) => t.id), JSON.stringify(threads).slice(0, 2000)).toContain(carried.get(`${from}->codex`)!.to.sessionId)
      }
    } finally {
      await app.close()
    }

    // 4. The source goes on; carrying again adds only its new turn (the target's own resumed turn stays).
    for (const from of TOOLS) {
      const word = codeword(from, 'LATER')
      await turn(from, `A second codeword: ${word}.`, origin[from].sessionId)
      for (const to of TOOLS.filter((t) => t !== from)) {
        const target = carried.get(`${from}->${to}`)!.to
        const count = async () => (await sessionsOf()).find((s) => s.provider === to && s.sessionId === target.sessionId)?.messageCount
        const before = await count()
        // The target was resumed in its tool moments ago: --force says that tool has finished with it.
        const again = await jarvis<SessionSyncResult>(['session', 'sync', origin[from].sessionId, '--to', to, '--force'])
        expect(again).toMatchObject({to: {provider: to, sessionId: target.sessionId, created: false}, added: 2})
        expect(await count()).toBe(before! + 2)
        const {sent} = await turn(to, `And the second codeword? (${from} → ${to})`, target.sessionId)
        expect(sent).toContain(word)
      }
    }

    // 5. The registry knows every session of each conversation.
    const registry = JSON.parse(await readFile(join(root, '.nexus', 'sessions.json'), 'utf8')) as {sessions: Array<{providers: Array<{provider: string}>}>}
    expect(registry.sessions).toHaveLength(3)
    for (const entry of registry.sessions) expect(new Set(entry.providers.map((p) => p.provider))).toEqual(new Set(TOOLS))
  }, 1_800_000)

  it('into a project Gemini CLI has never run in: its session list shows the carried conversation and --resume continues it', async () => {
    // A second project of the same user, trusted for Gemini, where only Claude Code has run so far.
    const other = await realpath(await tempDir('jarvis-handoff-fresh-'))
    dirs.push(other)
    await initTree(other, {})
    await writeFile(join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({[root]: 'TRUST_FOLDER', [other]: 'TRUST_FOLDER'}))
    root = other
    const word = codeword('claude', 'FRESH')
    await turn('claude', `Remember the codeword ${word} for later.`)
    const [started] = (await sessionsOf()).filter((s) => s.provider === 'claude')
    const carried = await jarvis<SessionSyncResult>(['session', 'sync', started.sessionId, '--to', 'gemini'])
    const listed = await run(bin.gemini!, ['--list-sessions'], agentEnv)
    expect(listed.stdout + listed.stderr, `${said(listed)}\n--- Gemini's files\n${await geminiFiles()}`).toContain(carried.to.sessionId)
    const {sent} = await turn('gemini', 'What was the codeword?', carried.to.sessionId)
    expect(sent).toContain(word)
    // Gemini CLI moved the session into the project's own directory; jarvis follows it there.
    expect(await jarvis<SessionSyncResult>(['session', 'sync', started.sessionId, '--to', 'gemini'])).toMatchObject({to: {sessionId: carried.to.sessionId, created: false}, added: 0})
  }, 600_000)
})
