/**
 * What an agent sends a hook on stdin (agent-wiring research): Claude Code and Codex `session_id`,
 * `transcript_path`, `cwd`, `hook_event_name`, plus `prompt`, `source`, `trigger`, `reason`,
 * `last_assistant_message`; Gemini CLI the same names plus `prompt_response`; an OpenClaw plugin handler passes
 * its own camelCase names (`sessionKey`, `workspaceDir`, `sessionFile`), accepted as aliases.
 */
import {existsSync, statSync} from 'node:fs'
import type {Readable} from 'node:stream'

import {findRoot} from '../store/root.js'

/** The fields a hook uses, whatever the agent called them. */
export interface HookInput {
  sessionId?: string
  transcriptPath?: string
  cwd?: string
  hookEventName?: string
  prompt?: string
  source?: string
  lastAssistantMessage?: string
  promptResponse?: string
}

export type ParsedHookInput = {ok: true; input: HookInput} | {ok: false; reason: string; input: HookInput}

const nonEmpty = (...values: Array<string | null | undefined>) => values.find((v): v is string => typeof v === 'string' && v.trim() !== '')

/** Parses stdin. Empty stdin is an empty input (a person running the hook by hand); anything but a JSON object is malformed. */
export function parseHookInput(raw: string): ParsedHookInput {
  const trimmed = raw.replace(/^\uFEFF/, '').trim()
  if (trimmed === '') return {ok: true, input: {}}
  let value: unknown
  try {
    value = JSON.parse(trimmed)
  } catch (error) {
    return {ok: false, reason: `the hook input on stdin is not JSON (${(error as Error).message})`, input: {}}
  }
  // Checked by hand, not with zod: this runs at every prompt, and every field is just "a string, else ignored".
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {ok: false, reason: 'the hook input on stdin is not a JSON object', input: {}}
  const fields = value as Record<string, unknown>
  const text = (key: string) => (typeof fields[key] === 'string' ? (fields[key] as string) : undefined)
  return {
    ok: true,
    input: {
      sessionId: nonEmpty(text('session_id'), text('sessionId'), text('sessionKey')),
      transcriptPath: nonEmpty(text('transcript_path'), text('transcriptPath'), text('sessionFile')),
      cwd: nonEmpty(text('cwd'), text('workspaceDir')),
      hookEventName: nonEmpty(text('hook_event_name')),
      prompt: text('prompt'),
      source: nonEmpty(text('source')),
      lastAssistantMessage: nonEmpty(text('last_assistant_message')),
      promptResponse: nonEmpty(text('prompt_response')),
    },
  }
}

/** Stdin larger than this is not a hook input (a transcript is named by path, never sent). */
export const MAX_STDIN_BYTES = 8 * 1024 * 1024

/**
 * Reads a hook's stdin. A terminal gives '' at once (someone running the hook by hand); a sender that never
 * closes the pipe is not waited for beyond `timeoutMs`; more than MAX_STDIN_BYTES is cut off (and then fails to parse).
 */
export async function readHookStdin(stream: Readable & {isTTY?: boolean}, timeoutMs = 3000): Promise<string> {
  if (stream.isTTY) return ''
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    const done = () => {
      clearTimeout(timer)
      stream.removeListener('data', onData)
      stream.removeListener('end', done)
      stream.removeListener('error', done)
      stream.pause()
      resolve(Buffer.concat(chunks).toString('utf8'))
    }
    const onData = (chunk: Buffer | string) => {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
      if (size + buffer.length > MAX_STDIN_BYTES) {
        chunks.push(buffer.subarray(0, MAX_STDIN_BYTES - size))
        done()
        return
      }
      chunks.push(buffer)
      size += buffer.length
    }
    const timer = setTimeout(done, timeoutMs)
    timer.unref()
    stream.on('data', onData)
    stream.once('end', done)
    stream.once('error', done)
  })
}

/** The environment variable each agent sets to the project directory. */
const PROJECT_DIR_ENV: Record<string, string[]> = {
  claude: ['CLAUDE_PROJECT_DIR'],
  codex: ['CLAUDE_PROJECT_DIR'],
  gemini: ['GEMINI_PROJECT_DIR', 'GEMINI_CWD'],
  openclaw: [],
}

/**
 * The jarvis tree of the session, found like git finds `.git`: from `--dir` (that directory itself), else
 * walking up from the hook's `cwd`, the agent's project-dir variable, then the process's working directory.
 * Undefined when none of them is inside a tree (a hook installed for the user, run in another project).
 */
export function findHookTree(options: {dir?: string; input: HookInput; agent?: string; env: NodeJS.ProcessEnv; processCwd: string}): string | undefined {
  if (options.dir) {
    try {
      return findRoot(options.processCwd, options.dir)
    } catch {
      return undefined
    }
  }
  const candidates = [options.input.cwd, ...(PROJECT_DIR_ENV[options.agent ?? ''] ?? ['CLAUDE_PROJECT_DIR', 'GEMINI_PROJECT_DIR']).map((name) => options.env[name]), options.processCwd]
  for (const start of candidates) {
    if (!start || !isDirectory(start)) continue
    try {
      return findRoot(start)
    } catch {
      // not inside a tree: try the next one
    }
  }
  return undefined
}

function isDirectory(path: string): boolean {
  try {
    return existsSync(path) && statSync(path).isDirectory()
  } catch {
    return false
  }
}
