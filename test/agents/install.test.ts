/**
 * `jarvis agents install|status` as a user runs them, in a real project with a temp HOME: install merges into
 * the agents' existing files and keeps everything of the user's, a second install changes no byte, --dry-run
 * writes nothing, --uninstall gives every file back as it was, a malformed file stops it with exit 2 and
 * nothing written, and status tells a connected server from one the agent will not start.
 */
import {createHash} from 'node:crypto'
import {existsSync} from 'node:fs'
import {chmod, mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import {delimiter, dirname, isAbsolute, join, relative} from 'node:path'

import {afterAll, beforeEach, describe, expect, it} from 'vitest'

import {failureLine} from '../../src/agents/probe.js'
import {initTree} from '../../src/store/index.js'
import {cleanEnv} from '../cli/memory-helpers.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {installedJarvis, runJarvisBuilt, runJs} from '../hook/helpers.js'
import {removeAll, tempDir} from '../helpers/world.js'

const dirs: string[] = []
let root: string
let home: string
let env: NodeJS.ProcessEnv

afterAll(async () => {
  await removeAll(dirs)
})

beforeEach(async () => {
  const base = await tempDir('jarvis-agents-')
  dirs.push(base)
  root = join(base, 'project')
  home = join(base, 'home')
  await mkdir(join(root, '.git'), {recursive: true})
  await mkdir(home)
  await initTree(root, {server: 'http://127.0.0.1:9', agent: 'claude', project: 'demo'})
  env = cleanEnv(home, {HOME: home, CODEX_HOME: ''})
})

const jarvis = (args: string[], cwd = root) => runJarvis(args, {cwd, env})

/** The user's own set-up before jarvis: another MCP server, another hook, their instructions. */
async function userFiles(): Promise<void> {
  const put = async (path: string, text: string) => {
    await mkdir(join(path, '..'), {recursive: true})
    await writeFile(path, text)
  }
  await put(join(root, 'CLAUDE.md'), '# Project rules\n\nTabs, not spaces.\n')
  await put(join(root, '.mcp.json'), JSON.stringify({mcpServers: {github: {command: 'npx', args: ['-y', 'github-mcp']}}}, null, 2) + '\n')
  await put(join(root, '.claude', 'settings.json'), '{\n\t"hooks": {\n\t\t"Stop": [\n\t\t\t{"hooks": [{"type": "command", "command": "say done"}]}\n\t\t]\n\t},\n\t"model": "opus"\n}\n')
  await put(join(root, '.gemini', 'settings.json'), '{\n  // mine\n  "theme": "GitHub",\n  "mcpServers": {"notes": {"command": "notes-mcp"}}\n}\n')
  await put(join(root, '.codex', 'config.toml'), '# my codex\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n')
  await put(join(home, '.openclaw', 'openclaw.json'), JSON.stringify({agents: {defaults: {model: 'x'}}}, null, 2) + '\n')
}

/** Every file under the project and HOME with its hash; jarvis's own records (.nexus/) aside. */
async function snapshot(): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  async function walk(dir: string, base: string): Promise<void> {
    for (const entry of await readdir(dir, {withFileTypes: true})) {
      const path = join(dir, entry.name)
      if (entry.name === '.nexus') continue
      if (entry.isDirectory()) {
        out[`${relative(base, path)}/`] = 'dir'
        await walk(path, base)
      } else out[relative(base, path)] = createHash('sha256').update(await readFile(path)).digest('hex')
    }
  }
  await walk(root, join(root, '..'))
  await walk(home, join(home, '..'))
  return out
}

const readJson = async (path: string) => JSON.parse((await readFile(path, 'utf8')).replace(/^\s*\/\/.*$/gm, '')) as Record<string, any>

describe('jarvis agents install', () => {
  it('wires all four agents into the existing files, keeps the user’s, twice is once, uninstall restores every byte', async () => {
    await userFiles()
    const before = await snapshot()

    const first = await jarvis(['agents', 'install'])
    expect(first.code, first.stderr).toBe(0)
    expect(first.stdout).toContain('Claude Code: wired')
    expect(first.stdout).toMatch(/Gemini CLI[^\n]*\n(.*\n)*.*note: Gemini CLI starts MCP servers .* only in a folder you trust/)

    const mcp = await readJson(join(root, '.mcp.json'))
    expect(mcp.mcpServers.github).toEqual({command: 'npx', args: ['-y', 'github-mcp']})
    const server = mcp.mcpServers.jarvis as {command: string; args: string[]}
    // Started by absolute path with this node: no `jarvis` on PATH needed, any working directory.
    expect(isAbsolute(server.command) && existsSync(server.command)).toBe(true)
    expect(server.args.slice(-5)).toEqual(['mcp', '--agent', 'claude', '--dir', root])
    expect(server.args.some((arg) => isAbsolute(arg) && /bin\/(run|dev)\.js$/.test(arg))).toBe(true)
    expect((await readJson(join(root, '.claude', 'settings.local.json'))).enabledMcpjsonServers).toEqual(['jarvis'])

    const claudeSettings = await readFile(join(root, '.claude', 'settings.json'), 'utf8')
    expect(claudeSettings).toContain('\t\t\t{"hooks": [{"type": "command", "command": "say done"}]},')
    const hooks = (await readJson(join(root, '.claude', 'settings.json'))).hooks as Record<string, Array<{hooks: Array<{command: string}>}>>
    expect(Object.keys(hooks).sort()).toEqual(['PreCompact', 'SessionEnd', 'SessionStart', 'Stop', 'UserPromptSubmit'])
    expect(hooks.UserPromptSubmit[0].hooks[0].command).toMatch(/ hook prompt --agent claude$/)

    const gemini = await readFile(join(root, '.gemini', 'settings.json'), 'utf8')
    expect(gemini).toContain('// mine')
    const geminiHooks = (await readJson(join(root, '.gemini', 'settings.json'))).hooks as Record<string, Array<{hooks: Array<{timeout: number}>}>>
    expect(geminiHooks.BeforeAgent[0].hooks[0].timeout).toBeGreaterThanOrEqual(1000) // milliseconds for Gemini

    const toml = await readFile(join(root, '.codex', 'config.toml'), 'utf8')
    expect(toml.startsWith('# my codex\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n')).toBe(true)
    expect(toml).toMatch(/\[mcp_servers\.jarvis\]\ncommand = ".*"\nargs = \[.*"mcp", "--agent", "chatgpt"/)

    const openclaw = await readJson(join(home, '.openclaw', 'openclaw.json'))
    expect(openclaw.agents).toEqual({defaults: {model: 'x'}})
    expect(openclaw.mcp.servers.jarvis.args).toContain(root)

    const claudeMd = await readFile(join(root, 'CLAUDE.md'), 'utf8')
    expect(claudeMd).toMatch(/^# Project rules\n\nTabs, not spaces\.\n\n<!-- jarvis:begin -->\n.*memory_snapshot/s)
    expect(await readFile(join(root, 'AGENTS.md'), 'utf8')).toContain('you are agent "chatgpt"')
    // No token is ever written into an agent's file.
    for (const file of ['.mcp.json', '.gemini/settings.json', '.codex/config.toml']) expect(await readFile(join(root, file), 'utf8')).not.toMatch(/TOKEN/i)

    const installed = await snapshot()
    const second = await jarvis(['agents', 'install'])
    expect(second.code).toBe(0)
    expect(second.stdout).toContain('Claude Code: already wired; nothing changed')
    expect(await snapshot()).toEqual(installed)

    const removed = await jarvis(['agents', 'install', '--uninstall'])
    expect(removed.code, removed.stderr).toBe(0)
    expect(await snapshot()).toEqual(before)
    expect(existsSync(join(root, '.nexus', 'agents.json'))).toBe(false)
  })

  it('uninstall after the user changed a file takes out only what jarvis wrote', async () => {
    expect((await jarvis(['agents', 'install', '--agent', 'gemini'])).code).toBe(0)
    const path = join(root, '.gemini', 'settings.json')
    const settings = await readJson(path)
    await writeFile(path, JSON.stringify({...settings, theme: 'Dracula', mcpServers: {...settings.mcpServers, mine: {command: 'mine'}}}, null, 2))
    expect((await jarvis(['agents', 'install', '--agent', 'gemini', '--uninstall'])).code).toBe(0)
    expect(await readJson(path)).toEqual({theme: 'Dracula', mcpServers: {mine: {command: 'mine'}}})
    expect(existsSync(join(root, 'GEMINI.md'))).toBe(false)
  })

  it('a hook the user added to a group of jarvis’s survives a second install and the uninstall (Claude, Gemini, Codex)', async () => {
    expect((await jarvis(['agents', 'install'])).code).toBe(0)
    const hookFiles = [join(root, '.claude', 'settings.json'), join(root, '.gemini', 'settings.json'), join(root, '.codex', 'hooks.json')]
    for (const file of hookFiles) {
      const settings = await readJson(file)
      settings.hooks.SessionStart[0].hooks.push({type: 'command', command: 'echo my-own-hook'})
      await writeFile(file, JSON.stringify(settings, null, 2))
    }
    const shared = await snapshot()
    const again = await jarvis(['agents', 'install'])
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).not.toContain('updated')
    expect(await snapshot()).toEqual(shared)

    expect((await jarvis(['agents', 'install', '--uninstall'])).code).toBe(0)
    for (const file of hookFiles) expect((await readJson(file)).hooks, file).toEqual({SessionStart: [{hooks: [{type: 'command', command: 'echo my-own-hook'}]}]})
    expect(existsSync(join(root, '.mcp.json'))).toBe(false)
  })

  it('--dry-run prints the diff and writes nothing', async () => {
    await userFiles()
    const before = await snapshot()
    const run = await jarvis(['agents', 'install', '--agent', 'claude', '--dry-run'])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain(`--- a${join(root, '.mcp.json')}`)
    expect(run.stdout).toMatch(/^\+ {4}"jarvis": \{$/m)
    expect(run.stdout).toContain(`--- /dev/null\n+++ b${join(root, '.claude', 'settings.local.json')}`)
    expect(run.stdout).toContain('dry run; nothing was written')
    expect(await snapshot()).toEqual(before)
    expect(existsSync(join(root, '.nexus', 'agents.json'))).toBe(false)
  })

  it('a malformed file stops the whole install with exit 2 naming the file and line, and nothing is written', async () => {
    await userFiles()
    await writeFile(join(root, '.gemini', 'settings.json'), '{\n  "theme": "GitHub",\n  "mcpServers": {\n')
    const before = await snapshot()
    const run = await jarvis(['agents', 'install'])
    expect(run.code).toBe(2)
    expect(run.stderr).toContain(`${join(root, '.gemini', 'settings.json')} line 4: not valid JSON`)
    expect(run.stderr).not.toMatch(/\n\s+at /)
    expect(await snapshot()).toEqual(before)
  })

  it('a read-only folder or file stops the install with exit 1 naming it and what to do, and nothing is written', async () => {
    await userFiles()
    // Root writes these anyway: they are refused by their mode bits, as the user set them.
    await chmod(join(root, '.claude'), 0o555)
    await chmod(join(root, 'CLAUDE.md'), 0o444)
    const before = await snapshot()
    const run = await jarvis(['agents', 'install', '--agent', 'claude'])
    expect(run.code).toBe(1)
    expect(run.stderr).toContain("cannot write the agents' files, so nothing was changed")
    expect(run.stderr).toContain(`${join(root, '.claude')} is a read-only folder (mode 0555), and jarvis writes settings.local.json, settings.json there: make it writable (chmod u+w ${join(root, '.claude')})`)
    expect(run.stderr).toContain(`${join(root, 'CLAUDE.md')} is read-only (mode 0444)`)
    expect(await snapshot()).toEqual(before)
    expect(existsSync(join(root, '.nexus', 'agents.json'))).toBe(false)

    // The folder writable again, the file still read-only: still refused, naming only the file.
    await chmod(join(root, '.claude'), 0o755)
    const file = await jarvis(['agents', 'install', '--agent', 'claude', '--json'])
    expect(file.code).toBe(1)
    expect(envelope(file).error).toMatchObject({code: 'NOT_WRITABLE', message: expect.not.stringContaining('.claude')})
    expect(await snapshot()).toEqual(before)
    await chmod(join(root, 'CLAUDE.md'), 0o644)
    expect((await jarvis(['agents', 'install', '--agent', 'claude'])).code).toBe(0)
  })

  it('user scope writes the home files, with a server that finds the tree from where the agent starts', async () => {
    const run = await jarvis(['agents', 'install', '--agent', 'claude', '--scope', 'user', '--json'])
    const result = envelope<{agents: Array<{files: Array<{file: string; action: string}>}>}>(run).result!
    expect(result.agents[0].files.map((f) => [relative(home, f.file), f.action])).toEqual([
      ['.claude.json', 'create'],
      [join('.claude', 'settings.json'), 'create'],
      [join('.claude', 'CLAUDE.md'), 'create'],
    ])
    const server = (await readJson(join(home, '.claude.json'))).mcpServers.jarvis as {args: string[]}
    expect(server.args).not.toContain('--dir')
    expect(existsSync(join(root, '.mcp.json'))).toBe(false)
    expect((await jarvis(['agents', 'install', '--agent', 'claude', '--scope', 'user', '--uninstall'])).code).toBe(0)
    // Nothing of Claude's is left; jarvis's own config folder (XDG_CONFIG_HOME here) keeps its settings.
    expect((await readdir(home)).filter((name) => name !== 'xdg')).toEqual([])
  })

  it('the hooks of every prompt and turn run bin/jarvis when the node on PATH is this node, which a watch can answer without Node; else node bin/run.js', async () => {
    const hooksWith = async (path: string) => {
      const run = await runJarvisBuilt(['agents', 'install', '--agent', 'claude'], {cwd: root, env: {...env, PATH: path}})
      expect(run.code, run.stderr).toBe(0)
      const hooks = (await readJson(join(root, '.claude', 'settings.json'))).hooks as Record<string, Array<{hooks: Array<{command: string}>}>>
      return (event: string) => hooks[event][0].hooks[0].command
    }
    const ours = await hooksWith(`${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`)
    for (const [name, event] of [['UserPromptSubmit', 'prompt'], ['Stop', 'stop'], ['PreCompact', 'pre-compact'], ['SessionEnd', 'session-end']]) {
      expect(ours(name)).toBe(`${installedJarvis} hook ${event} --agent claude`)
    }
    // Session start asks the server, once a session: it starts this node, as before.
    expect(ours('SessionStart')).toBe(`${process.execPath} ${runJs} hook session-start --agent claude`)

    // Another node first on the PATH (another version, say): bin/jarvis would run it, so the hook does not.
    const elsewhere = join(home, 'other-node')
    await mkdir(elsewhere)
    await writeFile(join(elsewhere, 'node'), '#!/bin/sh\nexit 1\n', {mode: 0o755})
    const theirs = await hooksWith(`${elsewhere}${delimiter}${dirname(process.execPath)}`)
    expect(theirs('UserPromptSubmit')).toBe(`${process.execPath} ${runJs} hook prompt --agent claude`)
  })

  it('project scope outside a jarvis tree, or an unknown agent, is exit 2 with what to do', async () => {
    const outside = await tempDir('jarvis-agents-outside-')
    dirs.push(outside)
    const run = await jarvis(['agents', 'install'], outside)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('not a jarvis tree')
    const unknown = await jarvis(['agents', 'install', '--agent', 'cursor'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('use claude, gemini, codex, openclaw or all')
  })
})

describe('jarvis agents status', () => {
  it('says beside Codex CLI hooks that Codex runs them only once trusted (it skips them without a trace)', async () => {
    expect((await jarvis(['agents', 'install', '--agent', 'codex'])).code).toBe(0)
    const run = await jarvis(['agents', 'status', '--agent', 'codex', '--no-probe'])
    expect(run.stdout).toMatch(/✓ hooks \(\d\/\d\) .*\n {4}note {6}Codex CLI runs a hook only after you review and trust it/)
    const claude = await jarvis(['agents', 'install', '--agent', 'claude'])
    expect(claude.code).toBe(0)
    expect((await jarvis(['agents', 'status', '--agent', 'claude', '--no-probe'])).stdout).not.toContain('note')
  })

  it('tells connected from registered-but-not-started, and says why', async () => {
    expect((await jarvis(['agents', 'install', '--agent', 'claude'])).code).toBe(0)
    expect((await jarvis(['agents', 'install', '--agent', 'gemini'])).code).toBe(0)
    const run = await jarvis(['agents', 'status', '--json'])
    const {agents} = envelope<{agents: Array<{agent: string; server: {state: string; tools?: number; detail?: string}; items: Array<{what: string; present: boolean}>}>}>(run).result!
    const of = (name: string) => agents.find((a) => a.agent === name)!
    expect(of('claude').server.state).toBe('connected')
    expect(of('claude').server.tools).toBeGreaterThanOrEqual(11)
    expect(of('claude').items.filter((i) => i.present).map((i) => i.what)).toEqual(expect.arrayContaining(['MCP server "jarvis"', 'approval of "jarvis"', 'instructions', 'hooks (5/5)']))
    expect(of('gemini').server.state).toBe('not-started')
    expect(of('gemini').server.detail).toContain('does not trust')
    expect(of('codex').server.state).toBe('not-registered')

    // The user trusts the folder in Gemini: now it is connected.
    await mkdir(join(home, '.gemini'), {recursive: true})
    await writeFile(join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({[root]: 'TRUST_FOLDER'}))
    const trusted = await jarvis(['agents', 'status', '--agent', 'gemini'])
    expect(trusted.stdout).toMatch(/^Gemini CLI: connected \(\d+ tools\)/)

    // A registered command that no longer starts (jarvis moved away) is reported as such.
    const mcpJson = join(root, '.mcp.json')
    const config = await readJson(mcpJson)
    config.mcpServers.jarvis.args = ['/nowhere/bin/run.js', 'mcp']
    await writeFile(mcpJson, JSON.stringify(config))
    const broken = await jarvis(['agents', 'status', '--agent', 'claude'])
    expect(broken.stdout).toMatch(/^Claude Code: registered, fails to start/)
    // The line that says what failed, not Node's version after the stack.
    expect(broken.stdout).toMatch(/why +the registered command does not answer: .*: Error: Cannot find module '\/nowhere\/bin\/run\.js'\n/)

    // Not started, the same command is only registered: nothing says it would connect.
    const unchecked = await jarvis(['agents', 'status', '--agent', 'claude', '--no-probe', '--json'])
    expect(envelope<{agents: Array<{server: {state: string; detail?: string}}>}>(unchecked).result!.agents[0].server).toMatchObject({state: 'registered', detail: 'not started to check (--no-probe)'})
    expect((await jarvis(['agents', 'status', '--agent', 'claude', '--no-probe'])).stdout).toMatch(/^Claude Code: registered\n/)
  })
})

describe('failureLine', () => {
  it('keeps the line of a failed start that says what failed', () => {
    const node = "node:internal/modules/cjs/loader:1210\n  throw err;\n  ^\n\nError: Cannot find module '/work/gone/bin/run.js'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)\n    at node:internal/main/run_main_module:28:49 {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n\nNode.js v20.20.2\n"
    expect(failureLine(node)).toBe("Error: Cannot find module '/work/gone/bin/run.js'")
    expect(failureLine('node:internal/modules/esm/resolve:283\n\nError [ERR_MODULE_NOT_FOUND]: Cannot find package \'x\' imported from /a.js\n    at f\n\nNode.js v20.20.2\n')).toBe("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'x' imported from /a.js")
    expect(failureLine('starting\njarvis: not a jarvis tree (no .memory/ in /x or any parent)\n')).toBe('jarvis: not a jarvis tree (no .memory/ in /x or any parent)')
    expect(failureLine('something odd\nNode.js v20.20.2\n')).toBe('something odd')
    expect(failureLine('')).toBeUndefined()
  })
})
