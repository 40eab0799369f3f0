/** Codex CLI rollouts: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<stamp>-<id>.jsonl` (research §3). */
import {createReadStream} from 'node:fs'
import {resolve} from 'node:path'
import {createInterface} from 'node:readline'

import {isRecord} from '../schemas/plain-fields.js'
import {codexRolloutFiles} from './codex-paths.js'
import {readCodexSession} from './codex-read.js'
import {summarize} from './files.js'
import type {SessionSummary} from './universal.js'

export {codexHome, codexRolloutFiles, codexRolloutId, codexRolloutPath, uuidV7} from './codex-paths.js'
export {type CodexRollout, isCodexContextText, parseCodexRollout, readCodexRollout, readCodexSession} from './codex-read.js'
export {appendCodexSession, CODEX_WRITER_VERSION, type CodexWriteOptions, toCodexRolloutJsonl, writeCodexSession} from './codex-write.js'

/** The first line of a file (a rollout's `session_meta`), read without loading the rest. */
async function firstLine(path: string): Promise<string> {
  const stream = createReadStream(path, {encoding: 'utf8'})
  const lines = createInterface({input: stream, crlfDelay: Number.POSITIVE_INFINITY})
  try {
    for await (const line of lines) return line
    return ''
  } finally {
    lines.close()
    stream.destroy()
  }
}

/** The working directory a rollout's `session_meta` names; undefined when its first line does not say. */
async function rolloutCwd(path: string): Promise<string | undefined> {
  try {
    const value: unknown = JSON.parse(await firstLine(path))
    const payload = isRecord(value) && isRecord(value.payload) ? value.payload : value
    return isRecord(payload) && typeof payload.cwd === 'string' ? payload.cwd : undefined
  } catch {
    return undefined
  }
}

/** The rollouts whose thread was started in `projectRoot` (by their first line only), oldest day first. */
export async function codexProjectRollouts(projectRoot: string, env: NodeJS.ProcessEnv = process.env): Promise<Array<{path: string; id: string}>> {
  const root = resolve(projectRoot)
  const found: Array<{path: string; id: string}> = []
  for (const file of await codexRolloutFiles(env)) {
    const cwd = await rolloutCwd(file.path)
    if (cwd !== undefined && resolve(cwd) === root) found.push(file)
  }
  return found
}

/** Every Codex thread of the project, newest first; [] when Codex CLI has no sessions directory. Unreadable files are skipped. */
export async function listCodexSessions(projectRoot: string, env: NodeJS.ProcessEnv = process.env): Promise<SessionSummary[]> {
  const paths = (await codexProjectRollouts(projectRoot, env)).map((file) => file.path)
  return summarize('codex', paths, readCodexSession, (t) => t.lastUpdated ?? t.messages.at(-1)?.timestamp)
}
