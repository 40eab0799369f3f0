/**
 * Configuration helpers of `jarvis serve`, kept out of the command so that it stays thin:
 * the default data directory and the token → agent map (option, file, environment, or generated).
 */
import {randomBytes} from 'node:crypto'
import {constants as fsConstants, mkdirSync} from 'node:fs'
import {open, readFile, stat} from 'node:fs/promises'
import {homedir} from 'node:os'
import {isAbsolute, join} from 'node:path'

import {z} from 'zod'

import {BadInputError} from '../errors.js'
import {formatIssues} from '../schemas/parse.js'

/** The agents that get a token when the server generates them. */
export const DEFAULT_AGENTS = ['chatgpt', 'claude', 'gemini', 'openclaw'] as const

export const TOKENS_FILE_NAME = 'tokens.json'
export const TOKENS_ENV = 'JARVIS_SERVER_TOKENS'

/**
 * `$XDG_DATA_HOME/jarvis`, or `~/.local/share/jarvis` when XDG_DATA_HOME is unset, empty or relative
 * (the XDG spec says relative values are to be ignored).
 */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const xdg = env.XDG_DATA_HOME
  if (xdg !== undefined && xdg !== '' && isAbsolute(xdg)) return join(xdg, 'jarvis')
  return join(home, '.local', 'share', 'jarvis')
}

/**
 * Makes the server's data directory `dir` (mode 0700) when it is missing. A path that is a file, or goes through
 * one, is refused with exit 2 naming --data and what to do, not the system's bare EEXIST or ENOTDIR.
 */
export function makeDataDir(dir: string): void {
  try {
    mkdirSync(dir, {recursive: true, mode: 0o700})
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'EEXIST' && code !== 'ENOTDIR') throw error
    const problem = code === 'EEXIST' ? 'is a file' : 'goes through a file'
    throw new BadInputError(`--data: ${dir} ${problem}, not a directory: give --data a directory (one that does not exist yet is made), or move that file away`, {field: 'data', dir}, error)
  }
}

/**
 * An agent id names the worker memory file `jarvis/<agentId>.json`, so it must be one safe path segment.
 */
export const agentIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be an agent id: 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit')

/** A token: printable ASCII without spaces (it travels in an HTTP header), at least 8 characters. */
const tokenSchema = z.string().regex(/^[\x21-\x7e]{8,512}$/, 'must be 8-512 printable ASCII characters without spaces')

export const tokenMapSchema = z
  .record(z.string(), agentIdSchema)
  .superRefine((value, ctx) => {
    const tokens = Object.keys(value)
    if (tokens.length === 0) ctx.addIssue({code: 'custom', message: 'must name at least one token'})
    for (const [index, token] of tokens.entries()) {
      const result = tokenSchema.safeParse(token)
      if (!result.success) {
        // Never echo the token itself: name it by position.
        ctx.addIssue({
          code: 'custom',
          message: `token #${index + 1} (for agent ${JSON.stringify(value[token])}) ${result.error.issues[0]?.message ?? 'is invalid'}`,
        })
      }
    }
  })

/** token → agent id */
export type TokenMap = Record<string, string>

/**
 * Parses a token map (a JSON object token → agent id) from `text`; `source` names the file or the
 * environment variable in the error. Throws BadInputError naming the source and the field.
 */
export function parseTokenMap(text: string, source: string): TokenMap {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new BadInputError(`${source}: not valid JSON: ${(error as Error).message}`, {file: source})
  }
  return validateTokenMap(value, source)
}

/** Validates an already-parsed token map; throws BadInputError naming `source` and the field. */
export function validateTokenMap(value: unknown, source: string): TokenMap {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new BadInputError(`${source}: must be a JSON object mapping each token to an agent id`, {file: source, field: '(root)'})
  }
  const result = tokenMapSchema.safeParse(value)
  if (!result.success) {
    const problems = formatIssues(result.error.issues).map((line) => redactTokenField(line, value as Record<string, unknown>))
    throw new BadInputError(problems.map((problem) => `${source}: ${problem}`).join('\n'), {file: source, problems})
  }
  return {...result.data}
}

/** zod names a bad record value by its key, which is the token: replace it by "token #N". */
function redactTokenField(line: string, value: Record<string, unknown>): string {
  const keys = Object.keys(value)
  for (const [index, key] of keys.entries()) {
    if (line.startsWith(`${key}: `)) return `token #${index + 1}: agent id ${line.slice(key.length + 2)}`
  }
  return line
}

/** Inverts a token map for display: agent id → token (the first token of each agent). */
export function tokensByAgent(tokens: TokenMap): Record<string, string> {
  const byAgent: Record<string, string> = {}
  for (const [token, agent] of Object.entries(tokens)) {
    if (!(agent in byAgent)) byAgent[agent] = token
  }
  return byAgent
}

export interface ResolveTokensOptions {
  /** token → agent id, given directly (highest precedence). */
  tokens?: TokenMap
  /** A JSON file token → agent id (`--tokens FILE`). */
  tokensFile?: string
  /** Environment (for JARVIS_SERVER_TOKENS); default process.env. */
  env?: NodeJS.ProcessEnv
  /** The server's data directory, where tokens.json is created when nothing else names tokens. */
  dataDir: string
  /** Agents to generate tokens for; default chatgpt, claude, gemini, openclaw. */
  agents?: readonly string[]
}

export interface ResolvedTokens {
  /** token → agent id, what the server authenticates against. */
  tokens: TokenMap
  source: 'option' | 'file' | 'env' | 'data-dir'
  /** The file the tokens came from (the --tokens file or the data directory's tokens.json). */
  file?: string
  /** Only for source `data-dir`: agent → token, so that the command can print how a client uses them. */
  byAgent: Record<string, string> | null
  /** True when tokens.json was created just now. */
  generated: boolean
  /** Things worth a warning (e.g. a tokens file readable by others). */
  warnings: string[]
}

/** A random token: 32 bytes from node:crypto, base64url. */
export function generateToken(): string {
  return randomBytes(32).toString('base64url')
}

async function permissionWarning(file: string): Promise<string[]> {
  if (process.platform === 'win32') return []
  const info = await stat(file)
  if ((info.mode & 0o077) !== 0) {
    return [`${file} is readable by other users (mode ${(info.mode & 0o777).toString(8)}); run chmod 600 ${file}`]
  }
  return []
}

/** The token map of a tokens file (`--tokens FILE`, `<data>/tokens.json`); exit 2 naming the file when it cannot be read or is not one. */
export async function readTokensFile(file: string): Promise<TokenMap> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new BadInputError(`cannot read the tokens file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, {
      file,
    })
  }
  return parseTokenMap(text, file)
}

/**
 * Loads `<dataDir>/tokens.json`, or creates it (mode 0600, exclusive create so that two servers
 * starting at once cannot both write it) with one random token per agent.
 */
export async function loadOrCreateDataDirTokens(
  dataDir: string,
  agents: readonly string[] = DEFAULT_AGENTS,
): Promise<{tokens: TokenMap; file: string; generated: boolean}> {
  const file = join(dataDir, TOKENS_FILE_NAME)
  makeDataDir(dataDir)
  const tokens: TokenMap = {}
  for (const agent of agents) tokens[generateToken()] = agentIdSchema.parse(agent)
  let handle
  try {
    handle = await open(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      return {tokens: await readTokensFile(file), file, generated: false}
    }
    throw error
  }
  try {
    await handle.writeFile(JSON.stringify(tokens, null, 2) + '\n', 'utf8')
    await handle.sync()
  } finally {
    await handle.close()
  }
  return {tokens, file, generated: true}
}

/**
 * Where the server's tokens come from, in order: `tokens`, `tokensFile`, JARVIS_SERVER_TOKENS, and
 * otherwise `<dataDir>/tokens.json` (created with one token per default agent when missing).
 */
export async function resolveTokens(options: ResolveTokensOptions): Promise<ResolvedTokens> {
  const env = options.env ?? process.env
  if (options.tokens !== undefined) {
    return {tokens: validateTokenMap(options.tokens, 'tokens option'), source: 'option', byAgent: null, generated: false, warnings: []}
  }
  if (options.tokensFile !== undefined) {
    const tokens = await readTokensFile(options.tokensFile)
    return {
      tokens,
      source: 'file',
      file: options.tokensFile,
      byAgent: null,
      generated: false,
      warnings: await permissionWarning(options.tokensFile),
    }
  }
  const fromEnv = env[TOKENS_ENV]
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    return {tokens: parseTokenMap(fromEnv, TOKENS_ENV), source: 'env', byAgent: null, generated: false, warnings: []}
  }
  const {tokens, file, generated} = await loadOrCreateDataDirTokens(options.dataDir, options.agents)
  return {
    tokens,
    source: 'data-dir',
    file,
    byAgent: tokensByAgent(tokens),
    generated,
    warnings: generated ? [] : await permissionWarning(file),
  }
}
