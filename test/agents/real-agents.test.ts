/**
 * `jarvis agents install` proven by the agents themselves: Claude Code, Gemini CLI, Codex CLI and OpenClaw,
 * installed from npm, each asked with its own offline check whether the MCP server `jarvis` connects (agent-wiring
 * research): `claude mcp list`, `gemini mcp list`, Codex's app-server (`mcpServerStatus/list` of a started thread),
 * `openclaw mcp probe jarvis --json`. Each runs as a user who already works in the project with that agent: a
 * temp HOME holding the agent's own settings, the folder already trusted where the agent asks for it, and an MCP
 * server and a hook of the user's own that install and uninstall must leave alone. Install runs twice (the second
 * changes no byte), `agents status` must agree with the agent, and uninstall must give back every file it touched
 * byte for byte.
 */
import {execFile} from 'node:child_process'
import {createHash} from 'node:crypto'
import {existsSync} from 'node:fs'
import {lstat, mkdir, readdir, readFile, readlink, realpath, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {installAgentCli, installOpenClaw} from '../helpers/agent-clis.js'
import {startAppServer} from '../helpers/codex-app-server.js'
import {type ModelStandIn, startModelStandIn} from '../helpers/model-stand-in.js'
import {removeAll, startTestServer, tempDir, type TestServer, TOKENS} from '../helpers/world.js'
import {appendEvent, assertBuilt, makeProject, runJarvisBuilt, runJs} from '../hook/helpers.js'
import {TOOL_NAMES} from '../mcp/helpers.js'

const dirs: string[] = []
let server: TestServer
const PINNED_DEPLOY = 'Deploys go out only on Tuesdays, after the canary has run for an hour.'

beforeAll(async () => {
  assertBuilt()
  server = await startTestServer()
  dirs.push(server.dataDir)
})

afterAll(async () => {
  await server?.close()
  await removeAll(dirs)
})

// ---- the user ------------------------------------------------------------------------------------------------------

type Agent = 'claude' | 'gemini' | 'codex' | 'openclaw'
const AGENT_ID: Record<Agent, string> = {claude: 'claude', gemini: 'gemini', codex: 'chatgpt', openclaw: 'openclaw'}

interface User {
  root: string
  home: string
  env: NodeJS.ProcessEnv
}

/** A jarvis project synced with the test server, and a temp HOME whose user config holds this agent's token. */
async function userOf(agent: Agent, options: {git?: boolean; env?: Record<string, string>} = {}): Promise<User> {
  const project = await makeProject(server.url, {agent: AGENT_ID[agent]})
  const home = await realpath(await tempDir(`jarvis-${agent}-home-`))
  dirs.push(project.root, home)
  const root = await realpath(project.root)
  if (options.git) await run('git', ['init', '-q', root], {cwd: root})
  await mkdir(join(home, '.config', 'jarvis'), {recursive: true})
  await writeFile(join(home, '.config', 'jarvis', 'config.json'), JSON.stringify({token: TOKENS[AGENT_ID[agent]]}), {mode: 0o600})
  const keep = ['PATH', 'LANG', 'TMPDIR']
  const env: NodeJS.ProcessEnv = Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]))
  return {root, home, env: {...env, HOME: home, NO_COLOR: '1', ...options.env}}
}

/** A server of the user's own, registered before jarvis: its program does not exist, so the agent reports it failed. */
const notesServer = (home: string) => ({command: process.execPath, args: [join(home, 'tools', 'notes-mcp.js')]})
const USER_HOOK = 'notify-send "agent finished"'

async function writeText(file: string, text: string): Promise<void> {
  await mkdir(dirname(file), {recursive: true})
  await writeFile(file, text)
}

const json = (value: unknown) => JSON.stringify(value, null, 2) + '\n'
const readJson = async (file: string) => JSON.parse(await readFile(file, 'utf8')) as Record<string, any>

// ---- processes -----------------------------------------------------------------------------------------------------

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a program to its end (the timeout only stops a hung agent; nothing asserts on time). */
function run(file: string, args: string[], options: {cwd: string; env?: NodeJS.ProcessEnv; timeout?: number}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    execFile(file, args, {cwd: options.cwd, env: options.env, timeout: options.timeout ?? 120_000, maxBuffer: 32 * 1024 * 1024}, (error, stdout, stderr) => {
      if (error && typeof error.code === 'string') return reject(error) // it did not start (ENOENT…)
      resolve({code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr})
    })
  })
}

const said = (ran: Ran) => `exit ${ran.code}\n--- stdout\n${ran.stdout}\n--- stderr\n${ran.stderr}`

async function jarvis(user: User, args: string[]): Promise<Ran> {
  const ran = await runJarvisBuilt(args, {cwd: user.root, env: user.env})
  return {code: ran.code, stdout: ran.stdout, stderr: ran.stderr}
}

async function install(user: User, agent: Agent, ...extra: string[]): Promise<Ran> {
  const ran = await jarvis(user, ['agents', 'install', '--agent', agent, ...extra])
  expect(ran.code, said(ran)).toBe(0)
  return ran
}

async function status(user: User, agent: Agent): Promise<{state: string; tools?: number; detail?: string; command?: string}> {
  const ran = await jarvis(user, ['agents', 'status', '--agent', agent, '--json'])
  expect(ran.code, said(ran)).toBe(0)
  const answer = JSON.parse(ran.stdout) as {result: {agents: Array<{agent: string; server: {state: string; tools?: number; detail?: string; command?: string}}>}}
  expect(answer.result.agents.map((a) => a.agent)).toEqual([agent])
  return answer.result.agents[0].server
}

/** The command line the agents show for the registered server: this node, the built bin/run.js, bound to the tree. */
const launch = (agent: Agent, root: string) => `${process.execPath} ${runJs} mcp --agent ${AGENT_ID[agent]} --dir ${root}`

// ---- every byte ----------------------------------------------------------------------------------------------------

type Snapshot = Record<string, string>

/** Every file of the project and of HOME (mode and sha256; a symlink by its target), without any .git and the tree's own .nexus/. */
async function snapshot(user: User): Promise<Snapshot> {
  const out: Snapshot = {}
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, {withFileTypes: true}).catch(() => [])
    for (const entry of entries) {
      const path = join(dir, entry.name)
      // jarvis's own state and its code cache (src/cli/code-cache.ts, safe to delete at any time), not configuration.
      if (entry.name === '.git' || path === join(user.root, '.nexus') || path === join(user.home, '.cache', 'jarvis')) continue
      const stat = await lstat(path).catch(() => undefined)
      if (!stat) continue
      if (stat.isDirectory()) await walk(path)
      else if (stat.isSymbolicLink()) out[path] = `symlink ${await readlink(path)}`
      else if (stat.isFile()) {
        const bytes = await readFile(path).catch(() => undefined)
        if (bytes) out[path] = `${(stat.mode & 0o777).toString(8)} ${createHash('sha256').update(bytes).digest('hex')}`
      }
    }
  }
  await walk(user.root)
  await walk(user.home)
  return out
}

/** The files that differ between two snapshots (added, removed or changed), sorted. */
function changed(a: Snapshot, b: Snapshot): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((path) => a[path] !== b[path]).sort()
}

/** The snapshot without the files `owned` says the agent itself writes. */
function without(snap: Snapshot, owned: (path: string) => boolean): Snapshot {
  return Object.fromEntries(Object.entries(snap).filter(([path]) => !owned(path)))
}

const under = (dir: string) => (path: string) => path === dir || path.startsWith(dir + '/')

/**
 * The common proof: install writes exactly `expectedFiles`, a second install changes no byte, the agent's own
 * check passes (`check`), `agents status` says connected, and uninstall gives back every file as it was, except
 * those the agent itself rewrites when it runs (`agentOwned`, never one jarvis writes).
 */
async function provePerAgent(agent: Agent, user: User, expectedFiles: string[], agentOwned: (path: string) => boolean, check: () => Promise<void>, afterUninstall: () => Promise<void>): Promise<void> {
  const before = await snapshot(user)
  await install(user, agent)
  const installed = await snapshot(user)
  expect(changed(before, installed)).toEqual([...expectedFiles].sort())
  const mode = (entry: string | undefined) => entry?.split(' ')[0]
  for (const file of expectedFiles) if (before[file]) expect(mode(installed[file]), `${file} keeps its mode`).toBe(mode(before[file]))
  // The agent's own files are never jarvis's: else excluding them below would hide what jarvis did.
  expect(expectedFiles.filter(agentOwned)).toEqual([])

  await install(user, agent)
  expect(await snapshot(user), 'a second install changes no byte').toEqual(installed)

  await check()
  const state = await status(user, agent)
  expect(state, JSON.stringify(state)).toMatchObject({state: 'connected', tools: TOOL_NAMES.length, command: launch(agent, user.root)})

  const ran = await jarvis(user, ['agents', 'install', '--agent', agent, '--uninstall'])
  expect(ran.code, said(ran)).toBe(0)
  const after = await snapshot(user)
  expect(changed(without(before, agentOwned), without(after, agentOwned)), 'uninstall leaves every file as it was before install').toEqual([])
  await afterUninstall()
}

// ---- Claude Code ---------------------------------------------------------------------------------------------------

describe('Claude Code: `claude mcp list`', () => {
  let claude: string
  beforeAll(async () => {
    claude = await installAgentCli('claude')
  }, 600_000)

  const claudeEnv = {DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1'}
  const mcpList = (user: User) => run(claude, ['mcp', 'list'], {cwd: user.root, env: user.env})
  /** The line `claude mcp list` prints for a server: `NAME: <command line> - <state>`. */
  const lineOf = (ran: Ran, name: string) => ran.stdout.split('\n').find((line) => line.startsWith(`${name}: `))
  /**
   * Claude Code's own state, rewritten at every start whatever jarvis did: ~/.claude.json (first start time,
   * machine id, migration flags, user id; it also moves legacy per-project approvals out of it), its backups of that
   * file in ~/.claude/backups/, and its MCP logs in ~/.cache/claude-cli-nodejs/.
   */
  const claudeOwned = (user: User) => (path: string) =>
    path === join(user.home, '.claude.json') || under(join(user.home, '.claude', 'backups'))(path) || under(join(user.home, '.cache', 'claude-cli-nodejs'))(path)

  /** A user who has worked here with Claude: accepted its trust dialog (what the dialog writes in ~/.claude.json). */
  async function trustedByClaude(user: User): Promise<void> {
    await writeText(join(user.home, '.claude.json'), json({projects: {[user.root]: {hasTrustDialogAccepted: true}}}))
  }

  it('in a git repository: jarvis says ✔ Connected; the user’s server, approval and hook stay; uninstall gives every file back', async () => {
    const user = await userOf('claude', {git: true, env: claudeEnv})
    await trustedByClaude(user)
    const notes = notesServer(user.home)
    await writeText(join(user.root, '.mcp.json'), json({mcpServers: {notes}}))
    await writeText(join(user.root, '.claude', 'settings.json'), json({permissions: {allow: ['Bash(npm test)']}, hooks: {Stop: [{hooks: [{type: 'command', command: USER_HOOK}]}]}}))
    await writeText(join(user.root, '.claude', 'settings.local.json'), json({enabledMcpjsonServers: ['notes'], permissions: {allow: ['Bash(git status)']}}))
    await writeText(join(user.root, 'CLAUDE.md'), '# Demo\n\nRun `npm test` before committing.\n')
    const owned = claudeOwned(user)

    await provePerAgent(
      'claude',
      user,
      ['.mcp.json', '.claude/settings.json', '.claude/settings.local.json', 'CLAUDE.md'].map((f) => join(user.root, f)),
      owned,
      async () => {
        // What jarvis merged into the user's files, next to what was there.
        const mcp = await readJson(join(user.root, '.mcp.json'))
        expect(mcp.mcpServers.notes).toEqual(notes)
        expect(mcp.mcpServers.jarvis).toEqual({command: process.execPath, args: [runJs, 'mcp', '--agent', 'claude', '--dir', user.root]})
        const settings = await readJson(join(user.root, '.claude', 'settings.json'))
        expect(settings.permissions).toEqual({allow: ['Bash(npm test)']})
        expect(settings.hooks.Stop[0]).toEqual({hooks: [{type: 'command', command: USER_HOOK}]})
        expect(JSON.stringify(settings.hooks.Stop.slice(1))).toContain('hook stop --agent claude')
        expect((await readJson(join(user.root, '.claude', 'settings.local.json'))).enabledMcpjsonServers).toEqual(['notes', 'jarvis'])

        const list = await mcpList(user)
        expect(lineOf(list, 'jarvis'), said(list)).toBe(`jarvis: ${launch('claude', user.root)} - ✔ Connected`)
        expect(lineOf(list, 'notes'), said(list)).toMatch(/ - ✘ Failed to connect$/)
      },
      async () => {
        const list = await mcpList(user)
        expect(lineOf(list, 'jarvis'), said(list)).toBeUndefined()
        expect(lineOf(list, 'notes'), said(list)).toMatch(/ - ✘ Failed to connect$/)
      },
    )
  }, 180_000)

  it('in a git repository, before the approval: Claude says ⏸ Pending approval and `agents status` says not-started', async () => {
    const user = await userOf('claude', {git: true, env: claudeEnv})
    await trustedByClaude(user)
    await install(user, 'claude')
    // The same files without the approval: the project as it is before anyone approved the server in Claude's dialog.
    await writeText(join(user.root, '.claude', 'settings.local.json'), json({}))
    const list = await mcpList(user)
    expect(lineOf(list, 'jarvis'), said(list)).toMatch(/ - ⏸ Pending approval/)
    expect(await status(user, 'claude')).toMatchObject({state: 'not-started'})
  }, 180_000)

  it('in a folder that is not a git repository: jarvis says ✔ Connected, status agrees, uninstall leaves no approval behind', async () => {
    // The approval goes where Claude's own dialog writes it, .claude/settings.local.json, which Claude Code reads
    // outside a git repository for a folder whose trust dialog was accepted (an approval in ~/.claude.json is one
    // Claude itself calls legacy and moves there).
    const user = await userOf('claude', {env: claudeEnv})
    await trustedByClaude(user)
    const before = await snapshot(user)
    await install(user, 'claude')
    const installed = await snapshot(user)
    expect(changed(before, installed)).toEqual(['.claude/settings.json', '.claude/settings.local.json', '.mcp.json', 'CLAUDE.md'].map((f) => join(user.root, f)).sort())
    expect(await readJson(join(user.root, '.claude', 'settings.local.json'))).toEqual({enabledMcpjsonServers: ['jarvis']})
    await install(user, 'claude')
    expect(await snapshot(user), 'a second install changes no byte').toEqual(installed)
    expect(await status(user, 'claude')).toMatchObject({state: 'connected', tools: TOOL_NAMES.length})

    const list = await mcpList(user)
    expect(lineOf(list, 'jarvis'), said(list)).toBe(`jarvis: ${launch('claude', user.root)} - ✔ Connected`)
    expect(await status(user, 'claude'), 'after Claude ran, status agrees with `claude mcp list`').toMatchObject({state: 'connected'})

    const ran = await jarvis(user, ['agents', 'install', '--agent', 'claude', '--uninstall'])
    expect(ran.code, said(ran)).toBe(0)
    expect(existsSync(join(user.root, '.claude', 'settings.local.json'))).toBe(false)
    expect(await readFile(join(user.home, '.claude.json'), 'utf8')).not.toContain('"jarvis"')
    const after = await snapshot(user)
    const owned = claudeOwned(user)
    expect(changed(without(before, owned), without(after, owned)), 'uninstall leaves every other file as it was').toEqual([])
  }, 180_000)
})

// ---- Gemini CLI ----------------------------------------------------------------------------------------------------

describe('Gemini CLI: `gemini mcp list`', () => {
  let gemini: string
  beforeAll(async () => {
    gemini = await installAgentCli('gemini')
  }, 600_000)

  const mcpList = (user: User) => run(gemini, ['mcp', 'list'], {cwd: user.root, env: user.env})
  /** `gemini mcp list` prints `<mark> NAME: <command line> (stdio) - <state>` per server (some of it on stderr). */
  const lineOf = (ran: Ran, name: string) => `${ran.stdout}\n${ran.stderr}`.split('\n').find((line) => line.slice(2).startsWith(`${name}: `))
  /**
   * The user's own Gemini settings: API-key auth chosen, no auto-update, no usage statistics. In Gemini 0.61's own
   * key names: it rewrites a file that still has an older one (general.disableAutoUpdate → general.enableAutoUpdate).
   */
  async function geminiUser(user: User, trusted: boolean): Promise<void> {
    const dir = join(user.home, '.gemini')
    await writeText(join(dir, 'settings.json'), json({security: {auth: {selectedType: 'gemini-api-key'}}, general: {enableAutoUpdate: false}, privacy: {usageStatisticsEnabled: false}}))
    // What Gemini writes when the user trusts the folder at its prompt (or with /permissions).
    if (trusted) await writeText(join(dir, 'trustedFolders.json'), json({[user.root]: 'TRUST_FOLDER'}))
  }
  /**
   * Gemini CLI's own state, written whenever it starts in a folder: ~/.gemini/projects.json (its project registry),
   * ~/.gemini/tmp/<project>/ and ~/.gemini/history/<project>/, and ~/.gemini/trusted_hooks.json (the fingerprints
   * of project hooks it has seen).
   */
  const geminiOwned = (user: User) => {
    const dir = join(user.home, '.gemini')
    return (path: string) => path === join(dir, 'projects.json') || path === join(dir, 'trusted_hooks.json') || under(join(dir, 'tmp'))(path) || under(join(dir, 'history'))(path)
  }

  it('in a trusted folder: ✓ jarvis … Connected; the user’s server and hook stay; uninstall gives every file back', async () => {
    const user = await userOf('gemini')
    await geminiUser(user, true)
    const notes = notesServer(user.home)
    const notify = {type: 'command', name: 'notify', command: USER_HOOK, timeout: 5000}
    await writeText(join(user.root, '.gemini', 'settings.json'), json({mcpServers: {notes}, hooks: {AfterAgent: [{hooks: [notify]}]}}))
    await writeText(join(user.root, 'GEMINI.md'), '# Demo\n\nRun `npm test` before committing.\n')

    await provePerAgent(
      'gemini',
      user,
      ['.gemini/settings.json', 'GEMINI.md'].map((f) => join(user.root, f)),
      geminiOwned(user),
      async () => {
        const settings = await readJson(join(user.root, '.gemini', 'settings.json'))
        expect(settings.mcpServers.notes).toEqual(notes)
        expect(settings.mcpServers.jarvis).toEqual({command: process.execPath, args: [runJs, 'mcp', '--agent', 'gemini', '--dir', user.root]})
        expect(settings.hooks.AfterAgent[0]).toEqual({hooks: [notify]})
        expect(JSON.stringify(settings.hooks.AfterAgent.slice(1))).toContain('hook stop --agent gemini')

        const list = await mcpList(user)
        expect(lineOf(list, 'jarvis'), said(list)).toBe(`✓ jarvis: ${launch('gemini', user.root)} (stdio) - Connected`)
        expect(lineOf(list, 'notes'), said(list)).toMatch(/ - Disconnected$/)
      },
      async () => {
        const list = await mcpList(user)
        expect(lineOf(list, 'jarvis'), said(list)).toBeUndefined()
        expect(lineOf(list, 'notes'), said(list)).toMatch(/ - Disconnected$/)
      },
    )
  }, 180_000)

  it('in a folder the user has not trusted: Gemini shows jarvis Disabled and `agents status` says not-started', async () => {
    const user = await userOf('gemini')
    await geminiUser(user, false)
    await install(user, 'gemini')
    const list = await mcpList(user)
    expect(lineOf(list, 'jarvis'), said(list)).toBe(`○ jarvis: ${launch('gemini', user.root)} (stdio) - Disabled`)
    expect(`${list.stdout}${list.stderr}`).toContain('this folder is untrusted')
    const state = await status(user, 'gemini')
    expect(state).toMatchObject({state: 'not-started'})
    expect(state.detail).toContain('does not trust')
  }, 180_000)
})

// ---- two agents on one machine: Gemini CLI for real -----------------------------------------------------------------

describe('Gemini CLI -p beside Claude Code, with one exported JARVIS_TOKEN (claude’s)', () => {
  let gemini: string
  let model: ModelStandIn
  beforeAll(async () => {
    gemini = await installAgentCli('gemini')
    model = await startModelStandIn({reply: 'Noted.'})
    await appendEvent(server.url, 'claude', {kind: 'decision', key: 'deploy-day', content: PINNED_DEPLOY, scope: 'global'})
  }, 600_000)
  afterAll(async () => {
    await model?.close()
  })

  /** What Gemini sent its model in one `gemini -p` run in the project. */
  async function geminiRun(user: User): Promise<string> {
    const before = model.requests.length
    const ran = await run(gemini, ['-p', 'When do deploys go out?'], {cwd: user.root, env: {...user.env, GOOGLE_GEMINI_BASE_URL: model.url, GEMINI_API_KEY: 'stand-in-key'}})
    const sent = model.requests
      .slice(before)
      .filter((r) => /:(stream)?[gG]enerateContent/.test(r.url) && !/complexity_score/.test(r.body))
      .map((r) => r.body)
      .join('\n')
    expect(sent, said(ran)).not.toBe('')
    return sent
  }

  it('without gemini’s own token the model is told what to set; after `jarvis auth login` it gets the memory', async () => {
    const user = await userOf('gemini', {env: {JARVIS_TOKEN: TOKENS.claude}})
    // Only the exported token: the user config of userOf holds none here.
    await writeText(join(user.home, '.config', 'jarvis', 'config.json'), json({}))
    const dir = join(user.home, '.gemini')
    await writeText(join(dir, 'settings.json'), json({security: {auth: {selectedType: 'gemini-api-key'}}, general: {enableAutoUpdate: false}, privacy: {usageStatisticsEnabled: false}}))
    await writeText(join(dir, 'trustedFolders.json'), json({[user.root]: 'TRUST_FOLDER'}))
    await install(user, 'claude')
    await install(user, 'gemini')

    const told = await geminiRun(user)
    expect(told).toContain("gemini runs with JARVIS_TOKEN, which holds claude's token: store gemini's own with `jarvis auth login --agent gemini --with-token`")
    expect(told).not.toContain(PINNED_DEPLOY)

    const login = await runJarvisBuilt(['auth', 'login', '--agent', 'gemini', '--with-token'], {cwd: user.root, env: user.env, input: TOKENS.gemini})
    expect(login.code, login.stderr).toBe(0)
    const read = await geminiRun(user)
    expect(read).toContain(PINNED_DEPLOY)
    expect(read).toContain('read for gemini')
  }, 300_000)
})

// ---- Codex CLI -----------------------------------------------------------------------------------------------------

describe('Codex CLI: `codex app-server` mcpServerStatus/list', () => {
  let codex: string
  beforeAll(async () => {
    codex = await installAgentCli('codex')
  }, 600_000)

  type CodexServer = {name: string; runtimeStatus: string | null; tools: Record<string, unknown>}

  /**
   * What Codex itself reports for the project's MCP servers: `initialize`, the `initialized` notification,
   * `thread/start` in the project (a thread starts the MCP servers of its config), then `mcpServerStatus/list` of
   * that thread, which answers once the servers' start has ended. A server still `starting` is waited for through its
   * `mcpServer/startupStatus/updated` notification (ready or failed), then the list is asked again.
   */
  async function codexServers(user: User): Promise<CodexServer[]> {
    const app = await startAppServer(codex, user.root, user.env)
    try {
      const {thread} = await app.request('thread/start', {cwd: user.root})
      for (;;) {
        const data = (await app.request('mcpServerStatus/list', {threadId: thread.id})).data as CodexServer[]
        const starting = data.filter((s) => s.runtimeStatus === 'starting').map((s) => s.name)
        if (starting.length === 0) return data
        for (const name of starting) {
          await app.waitFor(
            (m) => m.method === 'mcpServer/startupStatus/updated' && m.params?.threadId === thread.id && m.params?.name === name && m.params?.status !== 'starting',
            `the end of MCP server "${name}"'s start`,
          )
        }
      }
    } finally {
      await app.close()
    }
  }

  /** A Codex user: $CODEX_HOME (a dir under HOME) with their config.toml, the project trusted there or not. */
  async function codexUser(trusted: boolean): Promise<User & {codexHome: string}> {
    const user = await userOf('codex')
    const codexHome = join(user.home, 'codex-home')
    user.env.CODEX_HOME = codexHome
    // What Codex writes when the user trusts the project at its prompt.
    await writeText(join(codexHome, 'config.toml'), `# my Codex settings\n${trusted ? `[projects."${user.root}"]\ntrust_level = "trusted"\n` : ''}`)
    return {...user, codexHome}
  }

  it('in a trusted project: jarvis is connected with its tools; the user’s server and hook stay; uninstall gives every file back', async () => {
    const user = await codexUser(true)
    const {codexHome} = user
    const notes = notesServer(user.home)
    const userToml = `# servers of this project\n[mcp_servers.notes]\ncommand = ${JSON.stringify(notes.command)}\nargs = [${JSON.stringify(notes.args[0])}]\n`
    await writeText(join(user.root, '.codex', 'config.toml'), userToml)
    const notify = {type: 'command', command: USER_HOOK, timeout: 5}
    await writeText(join(user.root, '.codex', 'hooks.json'), json({hooks: {Stop: [{hooks: [notify]}]}}))
    await writeText(join(user.root, 'AGENTS.md'), '# Demo\n\nRun `npm test` before committing.\n')
    /**
     * Codex CLI's own state under $CODEX_HOME, written at every start: its sqlite databases (logs, goals, memories,
     * queue), installation_id, the system skills it unpacks, sessions (the thread's rollout), tmp/ and lock files.
     * Only the user's config.toml there is compared (Codex reads it, it does not rewrite it).
     */
    const owned = (path: string) => under(codexHome)(path) && path !== join(codexHome, 'config.toml')

    await provePerAgent(
      'codex',
      user,
      ['.codex/config.toml', '.codex/hooks.json', 'AGENTS.md'].map((f) => join(user.root, f)),
      owned,
      async () => {
        const toml = await readFile(join(user.root, '.codex', 'config.toml'), 'utf8')
        expect(toml.startsWith(userToml), toml).toBe(true)
        expect(toml).toContain('[mcp_servers.jarvis]')
        const hooks = await readJson(join(user.root, '.codex', 'hooks.json'))
        expect(hooks.hooks.Stop[0]).toEqual({hooks: [notify]})
        expect(JSON.stringify(hooks.hooks.Stop.slice(1))).toContain('hook stop --agent codex')

        const servers = await codexServers(user)
        const jarvisServer = servers.find((s) => s.name === 'jarvis')
        expect(jarvisServer?.runtimeStatus, JSON.stringify(servers).slice(0, 2000)).toBe('connected')
        expect(Object.keys(jarvisServer?.tools ?? {}).sort()).toEqual([...TOOL_NAMES].sort())
        expect(servers.find((s) => s.name === 'notes')?.runtimeStatus).toBe('failed')
      },
      async () => {
        const servers = await codexServers(user)
        expect(servers.map((s) => s.name)).toEqual(['notes'])
      },
    )
  }, 180_000)

  it('in a project the user has not trusted: Codex starts no jarvis and `agents status` says not-started', async () => {
    const user = await codexUser(false)
    await install(user, 'codex')
    expect((await codexServers(user)).map((s) => s.name)).toEqual([])
    const state = await status(user, 'codex')
    expect(state).toMatchObject({state: 'not-started'})
    expect(state.detail).toContain('not trusted')
  }, 180_000)
})

// ---- OpenClaw ------------------------------------------------------------------------------------------------------

describe('OpenClaw: `openclaw mcp probe jarvis --json`', () => {
  let node: string
  let openclaw: string
  beforeAll(async () => {
    ;({node, openclaw} = await installOpenClaw())
  }, 600_000)

  const openClaw = (user: User, args: string[]) => run(node, [openclaw, ...args], {cwd: user.root, env: user.env})

  it('a user of OpenClaw: jarvis connects with its tools; the user’s server and hook stay; uninstall gives every file back', async () => {
    const user = await userOf('openclaw')
    const home = user.home
    // The user set OpenClaw up (config, workspace with its AGENTS.md), enabled a bundled hook and added a server, all with OpenClaw's own commands.
    for (const args of [['setup', '--baseline'], ['hooks', 'enable', 'command-logger'], ['mcp', 'set', 'notes', JSON.stringify(notesServer(home))]]) {
      const ran = await openClaw(user, args)
      expect(ran.code, said(ran)).toBe(0)
    }
    const config = join(home, '.openclaw', 'openclaw.json')
    const userConfig = await readJson(config)
    /**
     * OpenClaw's own state: its sqlite database in ~/.openclaw/state/ and the scratch files of ~/.openclaw/tmp/,
     * written whenever it runs; its workspace is a git repository of its own (its .git is skipped like every .git).
     */
    const owned = (path: string) => under(join(home, '.openclaw', 'state'))(path) || under(join(home, '.openclaw', 'tmp'))(path)

    await provePerAgent(
      'openclaw',
      user,
      [config, join(home, '.openclaw', 'workspace', 'AGENTS.md')],
      owned,
      async () => {
        const now = await readJson(config)
        expect(now.mcp.servers.notes).toEqual(userConfig.mcp.servers.notes)
        expect(now.hooks).toEqual(userConfig.hooks)
        expect(now.mcp.servers.jarvis).toEqual({command: process.execPath, args: [runJs, 'mcp', '--agent', 'openclaw', '--dir', user.root]})

        const probe = await openClaw(user, ['mcp', 'probe', 'jarvis', '--json'])
        expect(probe.code, said(probe)).toBe(0)
        const answer = JSON.parse(probe.stdout) as {servers: Record<string, {launch: string; tools: number}>; tools: string[]; diagnostics: unknown[]}
        expect(answer.diagnostics).toEqual([])
        expect(answer.servers.jarvis).toMatchObject({launch: launch('openclaw', user.root), tools: TOOL_NAMES.length})
        expect(answer.tools).toEqual(expect.arrayContaining(TOOL_NAMES.map((name) => `jarvis__${name}`)))
      },
      async () => {
        const probe = await openClaw(user, ['mcp', 'probe', 'jarvis', '--json'])
        expect(probe.code, said(probe)).toBe(1)
        expect(JSON.parse(probe.stdout)).toMatchObject({ok: false, error: {message: expect.stringContaining('No MCP server named "jarvis"')}})
        expect((await readJson(config)).mcp.servers).toEqual(userConfig.mcp.servers)
      },
    )
  }, 180_000)
})
