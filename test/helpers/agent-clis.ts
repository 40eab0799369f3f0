/**
 * The real agent CLIs for the tests that run them: Claude Code, Gemini CLI and Codex CLI, installed from the npm
 * registry with the ordinary `npm install` into a cache directory under the system temp dir (one directory per
 * package and version, filled once, shared by later runs), never into the project. Tests give each run a temp
 * `HOME`, so nothing of the developer's own agent setup is read or changed.
 */
import {execFile} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdir, rename, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {promisify} from 'node:util'

const run = promisify(execFile)

/** The versions the tests were written against (agent-wiring research). Formats move between releases. */
export const AGENT_CLIS = {
  claude: {pkg: '@anthropic-ai/claude-code', version: '2.1.197', bin: 'claude'},
  gemini: {pkg: '@google/gemini-cli', version: '0.61.0', bin: 'gemini'},
  codex: {pkg: '@openai/codex', version: '0.169.0', bin: 'codex'},
} as const
export type AgentCli = keyof typeof AGENT_CLIS

export const AGENT_CLI_CACHE = join(tmpdir(), 'jarvis-agent-clis')

/** The path of the CLI's executable, installing it first when the cache does not have it yet. */
export async function installAgentCli(name: AgentCli): Promise<string> {
  const {pkg, version, bin} = AGENT_CLIS[name]
  const dir = join(AGENT_CLI_CACHE, `${pkg.replace('/', '+')}@${version}`)
  const executable = join(dir, 'node_modules', '.bin', bin)
  if (existsSync(join(dir, '.installed')) && existsSync(executable)) return executable
  // Installed beside the cache entry, then renamed into place: two test files installing at once never see half an install.
  const staging = `${dir}.${process.pid}.${Date.now()}`
  await mkdir(staging, {recursive: true})
  try {
    await run('npm', ['install', '--prefix', staging, '--no-audit', '--no-fund', '--no-save', '--loglevel=error', `${pkg}@${version}`], {timeout: 600_000, maxBuffer: 16 * 1024 * 1024})
    await run(process.execPath, ['-e', `require('fs').writeFileSync(${JSON.stringify(join(staging, '.installed'))}, '')`])
    await rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error // another run won the race: use its copy
    })
  } catch (error) {
    throw new Error(`could not install ${pkg}@${version} with npm (needed to run the real agent): ${(error as Error).message.split('\n')[0]}`)
  } finally {
    await rm(staging, {recursive: true, force: true})
  }
  if (!existsSync(executable)) throw new Error(`${pkg}@${version} installed, but ${executable} is missing`)
  return executable
}
