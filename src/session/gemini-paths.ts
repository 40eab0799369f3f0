/** Where Gemini CLI keeps its transcripts and checkpoints (research §2.1). */
import {createHash} from 'node:crypto'
import {homedir} from 'node:os'
import {basename, dirname, join, resolve} from 'node:path'

import {isRecord} from '../schemas/plain-fields.js'
import {readTextIfExists} from '../store/index.js'

/** `$GEMINI_CLI_HOME/.gemini` (GEMINI_CLI_HOME replaces the home directory), else `~/.gemini`. */
export function geminiHome(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.GEMINI_CLI_HOME !== undefined && env.GEMINI_CLI_HOME !== '' ? env.GEMINI_CLI_HOME : env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir()
  return join(base, '.gemini')
}

/** `projectHash`: sha256 of the resolved project root, lowercase hex (every version; the directory name up to v0.28). */
export function geminiProjectHash(projectRoot: string): string {
  return createHash('sha256').update(resolve(projectRoot)).digest('hex')
}

function registryKey(projectRoot: string): string {
  const key = resolve(projectRoot)
  return process.platform === 'win32' ? key.toLowerCase() : key
}

/** `projects.json` (v0.29+): project root → short directory name; {} when absent or unreadable. */
export async function readGeminiProjects(home: string): Promise<Record<string, string>> {
  const text = await readTextIfExists(join(home, 'projects.json'))
  if (text === null) return {}
  try {
    const value: unknown = JSON.parse(text)
    const projects = isRecord(value) && isRecord(value.projects) ? value.projects : {}
    return Object.fromEntries(Object.entries(projects).filter((e): e is [string, string] => typeof e[1] === 'string'))
  } catch {
    return {}
  }
}

/**
 * The project's directories under `tmp/`: the short name from projects.json when the project is registered
 * (v0.29+), then `sha256(root)` (up to v0.28). Whether they exist is not checked. The first is where a
 * checkpoint is written: a project Gemini CLI has not registered yet gets the hash directory, which v0.29+
 * copies into the short one the first time it runs there (research §2.1).
 */
export async function geminiProjectDirs(projectRoot: string, env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const home = geminiHome(env)
  const short = (await readGeminiProjects(home))[registryKey(projectRoot)]
  const hashDir = join(home, 'tmp', geminiProjectHash(projectRoot))
  return short !== undefined && short !== '' && !short.includes('/') && !short.includes('\\') && short !== '..' ? [join(home, 'tmp', short), hashDir] : [hashDir]
}

/** The project root a `tmp/<project>` directory belongs to: its `.project_root` marker, else projects.json; '' when unknown. */
export async function geminiProjectRootOf(projectDir: string): Promise<string> {
  const marker = await readTextIfExists(join(projectDir, '.project_root'))
  if (marker !== null && marker.trim() !== '') return marker.trim()
  if (basename(dirname(projectDir)) !== 'tmp') return ''
  const projects = await readGeminiProjects(dirname(dirname(projectDir)))
  return Object.entries(projects).find(([, short]) => short === basename(projectDir))?.[0] ?? ''
}
