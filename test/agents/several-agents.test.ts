/**
 * Several agents on one machine, as a person sets them up: one `jarvis serve`, one exported JARVIS_TOKEN (claude's),
 * Claude Code and Gemini CLI wired in one project with `jarvis agents install`. Gemini's hooks and MCP server are
 * run exactly as Gemini starts them (the command it finds in .gemini/settings.json, its own hook JSON on stdin, the
 * MCP SDK's client listing the tools first). Without a token of its own, gemini is told in one sentence what to set;
 * once `jarvis auth login --agent gemini --with-token` stored it, gemini reads and writes as itself while claude
 * keeps JARVIS_TOKEN.
 */
import {readdir, readFile, stat} from 'node:fs/promises'
import {join} from 'node:path'

import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import type {CallToolResult} from '@modelcontextprotocol/sdk/types.js'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {EventsClient} from '../../src/protocol/events.js'
import {cleanEnv} from '../cli/memory-helpers.js'
import {removeAll, startTestServer, tempDir, type TestServer, TOKENS} from '../helpers/world.js'
import {appendEvent, assertBuilt, hooksLog, makeProject, runHook, runJarvisBuilt} from '../hook/helpers.js'
import {TOOL_NAMES} from '../mcp/helpers.js'

const dirs: string[] = []
let server: TestServer

const PINNED = 'Deploys go out only on Tuesdays, after the canary has run for an hour.'
const LOGIN = 'jarvis auth login --agent gemini --with-token'
/** The one sentence gemini gets while it runs on claude's exported token. */
const WHAT_TO_SET = "gemini runs with JARVIS_TOKEN, which holds claude's token: store gemini's own with `jarvis auth login --agent gemini --with-token` (token on stdin, kept in ~/.config/jarvis/config.json)"

beforeAll(async () => {
  assertBuilt()
  server = await startTestServer()
  dirs.push(server.dataDir)
  await appendEvent(server.url, 'claude', {kind: 'decision', key: 'deploy-day', content: PINNED, scope: 'global'})
})

afterAll(async () => {
  await server?.close()
  await removeAll(dirs)
})

interface Person {
  root: string
  home: string
  env: NodeJS.ProcessEnv
}

/** A jarvis project synced with the server as claude, a HOME of their own, and claude's token exported. */
async function person(): Promise<Person> {
  const project = await makeProject(server.url, {agent: 'claude'})
  const home = await tempDir('jarvis-two-agents-home-')
  dirs.push(project.root, home)
  const env = {...cleanEnv(home, {JARVIS_TOKEN: TOKENS.claude, XDG_CONFIG_HOME: ''}), HOME: home, NO_COLOR: '1', DEBUG: ''}
  return {root: project.root, home, env}
}

async function jarvis(who: Person, args: string[], input?: string) {
  const ran = await runJarvisBuilt(args, {cwd: who.root, env: who.env, input})
  return {...ran, said: `exit ${ran.code}\n--- stdout\n${ran.stdout}\n--- stderr\n${ran.stderr}`}
}

async function jsonOf<T>(who: Person, args: string[], input?: string): Promise<T> {
  const ran = await jarvis(who, [...args, '--json'], input)
  expect(ran.code, ran.said).toBe(0)
  return (JSON.parse(ran.stdout) as {result: T}).result
}

interface TokenState {
  own: boolean
  source: string
  sharedWith?: string[]
  fix?: string
}

async function wireBoth(who: Person): Promise<{gemini: {token?: TokenState; notes: string[]}}> {
  await jsonOf(who, ['agents', 'install', '--agent', 'claude'])
  const installed = await jsonOf<{agents: Array<{agent: string; token?: TokenState; notes: string[]}>}>(who, ['agents', 'install', '--agent', 'gemini'])
  return {gemini: installed.agents.find((a) => a.agent === 'gemini')!}
}

async function tokensInStatus(who: Person): Promise<Record<string, TokenState | undefined>> {
  const status = await jsonOf<{agents: Array<{agent: string; token?: TokenState}>}>(who, ['agents', 'status', '--no-probe'])
  return Object.fromEntries(status.agents.map((a) => [a.agent, a.token]))
}

/** Gemini CLI's SessionStart hook input (its documented fields). */
const geminiStart = (cwd: string) => ({session_id: '7c2d9e1f-4a5b-4c6d-8e7f-9a0b1c2d3e4f', transcript_path: join(cwd, 'no-transcript.jsonl'), cwd, hook_event_name: 'SessionStart', timestamp: new Date().toISOString(), source: 'startup'})
const claudeStart = (cwd: string) => ({session_id: 'c1a2b3c4-0000-4000-8000-000000000001', transcript_path: join(cwd, 'no-transcript.jsonl'), cwd, permission_mode: 'default', hook_event_name: 'SessionStart', source: 'startup'})

/** The session-start context an agent gets, from its hook answer. */
async function sessionStart(who: Person, agent: 'claude' | 'gemini'): Promise<string> {
  const run = await runHook('session-start', agent, agent === 'gemini' ? geminiStart(who.root) : claudeStart(who.root), {cwd: who.root, env: who.env})
  expect(run.code, run.stderr).toBe(0)
  return (JSON.parse(run.stdout) as {hookSpecificOutput: {additionalContext: string}}).hookSpecificOutput.additionalContext
}

/** Gemini's MCP server, started as Gemini starts it: the command and arguments install registered, in the project. */
async function geminiMcp(who: Person): Promise<{call: (name: string, args: Record<string, unknown>) => Promise<CallToolResult>; close: () => Promise<void>}> {
  const settings = JSON.parse(await readFile(join(who.root, '.gemini', 'settings.json'), 'utf8')) as {mcpServers: {jarvis: {command: string; args: string[]}}}
  const {command, args} = settings.mcpServers.jarvis
  expect(args.slice(-4, -2)).toEqual(['--agent', 'gemini'])
  const transport = new StdioClientTransport({command, args, cwd: who.root, env: who.env as Record<string, string>, stderr: 'pipe'})
  const client = new Client({name: 'gemini-cli-stand-in', version: '1.0.0'})
  await client.connect(transport)
  // Every agent lists the tools first; the SDK's client then checks each result against its tool's output schema.
  const {tools} = await client.listTools()
  expect(tools.map((t) => t.name).sort()).toEqual([...TOOL_NAMES].sort())
  return {call: async (name, args) => (await client.callTool({name, arguments: args})) as CallToolResult, close: () => client.close()}
}

const textOf = (result: CallToolResult) => result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n')

/** Every file of the tree whose text holds `needle`. */
async function filesHolding(dir: string, needle: string): Promise<string[]> {
  const found: string[] = []
  for (const entry of await readdir(dir, {withFileTypes: true, recursive: true})) {
    if (!entry.isFile()) continue
    const path = join(entry.parentPath, entry.name)
    if ((await readFile(path, 'utf8').catch(() => '')).includes(needle)) found.push(path)
  }
  return found
}

describe('two agents on one machine, one exported token', () => {
  it("without gemini's own token: install, status, gemini's session start and its MCP tools all say, in one sentence, what to set", async () => {
    const who = await person()
    const {gemini} = await wireBoth(who)
    // Install says it as it wires gemini.
    expect(gemini.token).toMatchObject({own: false, source: 'env', sharedWith: ['claude']})
    expect(gemini.token?.fix).toContain(LOGIN)
    expect(gemini.notes).toContain(gemini.token?.fix)
    // Status says it for each wired agent that shares the one token.
    const tokens = await tokensInStatus(who)
    expect(tokens.gemini).toMatchObject({own: false, source: 'env'})
    expect(tokens.gemini?.fix).toMatch(/^gemini has no token of its own for http:\/\/127\.0\.0\.1:\d+: it shares JARVIS_TOKEN with Claude Code, and a token is one agent's; store gemini's own with `jarvis auth login --agent gemini --with-token`/)
    expect(tokens.codex).toBeUndefined() // not wired: nothing to say
    const human = await jarvis(who, ['agents', 'status', '--no-probe'])
    expect(human.stdout).toContain(`  token       ${tokens.gemini?.fix}`)

    // Gemini's session starts with one line that names what to set, not a server error to decode.
    expect(await sessionStart(who, 'gemini')).toBe(`jarvis: the shared memory could not be read (${WHAT_TO_SET}); tell the user and do not go on from a guess about what it holds.`)
    expect((await hooksLog(who.root)).trim().split('\n')).toEqual([expect.stringContaining(`gemini session-start the shared memory could not be read: ${WHAT_TO_SET}`)])
    // Claude, whose token it is, reads the memory.
    expect(await sessionStart(who, 'claude')).toContain(PINNED)

    const mcp = await geminiMcp(who)
    try {
      const appended = await mcp.call('memory_append', {kind: 'decision', key: 'release-train', content: 'Releases leave every second Wednesday.', scope: 'global'})
      expect(appended.isError, textOf(appended)).toBe(true)
      expect(textOf(appended)).toContain(WHAT_TO_SET)
      expect(appended.structuredContent).toMatchObject({error: {exit: 3}})
      const snapshot = await mcp.call('memory_snapshot', {})
      expect(snapshot.isError).toBe(true)
      expect(textOf(snapshot)).toContain(WHAT_TO_SET)
      // Nor does it search or sync as claude: claude's private notes are not shown to gemini, no edit goes out under claude.
      for (const [name, args] of [['memory_search', {query: 'anything'}], ['sync', {}]] as const) {
        const refused = await mcp.call(name, args)
        expect(refused.isError, `${name}: ${textOf(refused)}`).toBe(true)
        expect(textOf(refused)).toContain(WHAT_TO_SET)
      }
    } finally {
      await mcp.close()
    }
  }, 120_000)

  it("with gemini's token stored by `jarvis auth login`: gemini reads and writes as itself, claude keeps JARVIS_TOKEN, no token in the tree", async () => {
    const who = await person()
    await wireBoth(who)
    const login = await jsonOf<{agent: string; server: string; verified: boolean; file: string}>(who, ['auth', 'login', '--agent', 'gemini', '--with-token'], `${TOKENS.gemini}\n`)
    expect(login).toMatchObject({agent: 'gemini', server: server.url, verified: true, file: join(who.home, '.config', 'jarvis', 'config.json')})
    expect((await stat(login.file)).mode & 0o777).toBe(0o600)
    expect(await filesHolding(who.root, TOKENS.gemini), 'no token is written into the tree').toEqual([])

    const tokens = await tokensInStatus(who)
    expect(tokens.gemini).toMatchObject({own: true, source: 'agent'})
    expect(tokens.claude).toMatchObject({own: true, source: 'env'})

    const context = await sessionStart(who, 'gemini')
    expect(context).toContain('read for gemini')
    expect(context).toContain(PINNED)
    expect(await sessionStart(who, 'claude')).toContain(PINNED)
    expect(await hooksLog(who.root)).toBe('')

    const mcp = await geminiMcp(who)
    try {
      const appended = await mcp.call('memory_append', {kind: 'decision', key: 'release-train', content: 'Releases leave every second Wednesday.', scope: 'global'})
      expect(appended.isError, textOf(appended)).toBeFalsy()
      const snapshot = await mcp.call('memory_snapshot', {})
      expect(snapshot.isError, textOf(snapshot)).toBeFalsy()
      expect(snapshot.structuredContent).toMatchObject({agent_id: 'gemini'})
    } finally {
      await mcp.close()
    }
    // The server filed the event under gemini: the token was gemini's.
    const events = await new EventsClient({server: server.url, token: TOKENS.claude}).events({dedupe_key: 'release-train'})
    expect(events.events.map((e) => e.agent_id)).toEqual(['gemini'])
  }, 120_000)
})

describe('jarvis auth', () => {
  it("login refuses another agent's token with nothing stored; logout gives gemini back to JARVIS_TOKEN", async () => {
    const who = await person()
    const wrong = await jarvis(who, ['auth', 'login', '--agent', 'gemini', '--with-token'], TOKENS.claude)
    expect(wrong.code, wrong.said).toBe(2)
    expect(wrong.stderr.trim()).toBe(`jarvis: the server at ${server.url} says this token is claude's, not gemini's: nothing was stored; give gemini's own token`)
    await expect(stat(join(who.home, '.config', 'jarvis', 'config.json'))).rejects.toThrow()

    // A server that cannot be asked: nothing stored unless the person says so.
    const away = 'http://127.0.0.1:9'
    const unasked = await jarvis(who, ['auth', 'login', '--agent', 'gemini', '--with-token', '--server', away], TOKENS.gemini)
    expect(unasked.code, unasked.said).toBe(3)
    expect(unasked.stderr).toContain(`could not check the token with the server at ${away}`)
    expect(unasked.stderr).toContain('`--no-verify` stores it without asking the server')
    await expect(stat(join(who.home, '.config', 'jarvis', 'config.json'))).rejects.toThrow()
    expect(await jsonOf(who, ['auth', 'login', '--agent', 'codex', '--with-token', '--server', away, '--no-verify'], TOKENS.chatgpt)).toMatchObject({agent: 'chatgpt', server: away, verified: false})
    expect(await jsonOf(who, ['auth', 'logout', '--server', away, '--all'])).toMatchObject({removed: true})

    const empty = await jarvis(who, ['auth', 'login', '--agent', 'gemini', '--with-token'], '\n')
    expect(empty.code, empty.said).toBe(2)
    expect(empty.stderr).toContain('no token on stdin')

    await jsonOf(who, ['auth', 'login', '--agent', 'gemini', '--with-token'], TOKENS.gemini)
    const status = await jsonOf<{agents: Array<{agent: string; source: string}>}>(who, ['auth', 'status'])
    expect(Object.fromEntries(status.agents.map((a) => [a.agent, a.source]))).toEqual({chatgpt: 'env', claude: 'env', gemini: 'agent', openclaw: 'env'})
    expect(JSON.stringify(status)).not.toContain(TOKENS.gemini)

    expect(await jsonOf(who, ['auth', 'logout', '--agent', 'gemini'])).toMatchObject({agent: 'gemini', removed: true})
    expect(await jsonOf(who, ['auth', 'logout', '--agent', 'gemini'])).toMatchObject({removed: false})
    expect(JSON.parse(await readFile(join(who.home, '.config', 'jarvis', 'config.json'), 'utf8'))).toEqual({})
  }, 60_000)
})
