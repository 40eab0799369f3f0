/**
 * `jarvis init`: creates `.memory/`, `.nexus/`, `.nexus/config.json` (seed 002 sync defaults plus server, agent and
 * project when given) and makes git ignore `.nexus/`. Idempotent: a second run with the same options changes
 * nothing. Never writes a credential (a URL with user:password is refused).
 */
import {mkdir, readFile, stat} from 'node:fs/promises'
import {join, resolve} from 'node:path'

import {BadInputError} from '../errors.js'
import {type NexusConfig, nexusConfigSchema} from '../schemas/nexus.js'
import {formatIssues, parseWith} from '../schemas/parse.js'
import {fsyncDir, writeFileAtomic} from './atomic.js'
import {withTreeLock} from './lock.js'
import {configPath, MEMORY_DIR, memoryDir, NEXUS_DIR, nexusDir} from './root.js'
import {assertNoSecretInConfig, CONFIG_FILE, formatJson, readConfig} from './sync-state.js'

export interface InitOptions {
  server?: string
  agent?: string
  project?: string
}

export interface InitResult {
  root: string
  /** What did not exist before, relative to the root: `.memory/`, `.nexus/`, `.nexus/config.json`, `.gitignore`. */
  created: string[]
  /** Existing files this run changed: `.nexus/config.json` (new option values), `.gitignore` (line added). */
  updated: string[]
  changed: boolean
  config: NexusConfig
  /** Settings an earlier init had given that this run replaced: `{field: 'agentId', from: 'claude', to: 'gemini'}`. */
  replaced: Array<{field: 'server' | 'agentId' | 'project'; from: string; to: string}>
}

export const GITIGNORE_LINE = '.nexus/'
/** Conflict backups (`<name>.local.bak`, `<name>.local.<N>.bak`) are this machine's, never the project's. */
export const GITIGNORE_BACKUPS = '.memory/**/*.local*.bak'

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch {
    return false
  }
}

async function ensureDir(path: string, label: string, created: string[]): Promise<void> {
  try {
    const info = await stat(path)
    if (!info.isDirectory()) throw new BadInputError(`${label} exists and is not a directory`, {path})
    return
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  await mkdir(path, {recursive: true})
  await fsyncDir(join(path, '..'))
  created.push(label)
}

/** Checks each given option against its config field, naming the flag (`--agent: …`) rather than the file. */
function checkOptions(options: InitOptions): void {
  const fields = [
    ['server', 'server', options.server],
    ['agent', 'agentId', options.agent],
    ['project', 'project', options.project],
  ] as const
  for (const [flag, field, value] of fields) {
    if (value === undefined) continue
    const parsed = nexusConfigSchema.shape[field].safeParse(value)
    if (!parsed.success) {
      const reason = formatIssues(parsed.error.issues).map((line) => line.replace(/^\(root\): /, '')).join('; ')
      throw new BadInputError(`--${flag}: ${reason} (got ${JSON.stringify(value)})`, {flag, value})
    }
  }
  if (options.server !== undefined) assertNoSecretInConfig({server: options.server})
}

/** True when a .gitignore line already ignores the `.nexus` directory at the top level. */
function ignoresNexus(line: string): boolean {
  const trimmed = line.trim()
  return trimmed === '.nexus' || trimmed === '.nexus/' || trimmed === '/.nexus' || trimmed === '/.nexus/' || trimmed === '.nexus/**' || trimmed === '/.nexus/**'
}

/**
 * The new .gitignore text, or null when it already ignores `.nexus/` and the conflict backups. Keeps every line and
 * the file's line ending.
 */
export function gitignoreWithNexus(text: string | null): string | null {
  const lines = (text ?? '').split(/\r?\n/)
  const missing = [...(lines.some(ignoresNexus) ? [] : [GITIGNORE_LINE]), ...(lines.some((line) => line.includes('.local') && line.trim().endsWith('.bak')) ? [] : [GITIGNORE_BACKUPS])]
  if (missing.length === 0) return null
  if (text === null || text === '') return missing.join('\n') + '\n'
  const eol = text.includes('\r\n') ? '\r\n' : '\n'
  return text + (text.endsWith('\n') ? '' : eol) + missing.join(eol) + eol
}

export async function initTree(dir: string, options: InitOptions = {}): Promise<InitResult> {
  const root = resolve(dir)
  checkOptions(options)
  const created: string[] = []
  const updated: string[] = []
  const replaced: InitResult['replaced'] = []
  await ensureDir(root, '.', [])
  await ensureDir(memoryDir(root), `${MEMORY_DIR}/`, created)
  await ensureDir(nexusDir(root), `${NEXUS_DIR}/`, created)

  const config = await withTreeLock(root, {command: 'init'}, async () => {
    const hadConfig = await exists(configPath(root))
    const current = hadConfig ? await readConfig(root) : nexusConfigSchema.parse({})
    const next: NexusConfig = parseWith(nexusConfigSchema, {
      ...current,
      ...(options.server === undefined ? {} : {server: options.server}),
      ...(options.agent === undefined ? {} : {agentId: options.agent}),
      ...(options.project === undefined ? {} : {project: options.project}),
    }, CONFIG_FILE)
    assertNoSecretInConfig(next)
    if (hadConfig) {
      for (const field of ['server', 'agentId', 'project'] as const) {
        const from = current[field]
        const to = next[field]
        if (typeof from === 'string' && typeof to === 'string' && from !== to) replaced.push({field, from, to})
      }
    }
    const text = formatJson(next)
    const before = hadConfig ? await readFile(configPath(root), 'utf8') : null
    if (before !== text) {
      await writeFileAtomic(configPath(root), text)
      ;(hadConfig ? updated : created).push(CONFIG_FILE)
    }

    const gitignore = join(root, '.gitignore')
    let gitignoreText: string | null = null
    try {
      gitignoreText = await readFile(gitignore, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
    const nextGitignore = gitignoreWithNexus(gitignoreText)
    if (nextGitignore !== null) {
      await writeFileAtomic(gitignore, nextGitignore)
      ;(gitignoreText === null ? created : updated).push('.gitignore')
    }
    return next
  })

  return {root, created, updated, changed: created.length > 0 || updated.length > 0, config, replaced}
}
