/** Codex CLI rollouts: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<stamp>-<id>.jsonl` (research §3). */
import {createReadStream} from 'node:fs'
import {stat} from 'node:fs/promises'
import {resolve} from 'node:path'
import {createInterface} from 'node:readline'

import createDebug from 'debug'

import {codexRolloutFiles} from './codex-paths.js'
import {readCodexRollout} from './codex-read.js'
import {isRecord, type SessionSummary} from './universal.js'

export {codexHome, codexRolloutFiles, codexRolloutId, codexRolloutPath, uuidV7} from './codex-paths.js'
export {type CodexRollout, isCodexContextText, parseCodexRollout, readCodexRollout, readCodexSession} from './codex-read.js'
export {appendCodexSession, CODEX_WRITER_VERSION, type CodexWriteOptions, toCodexRolloutJsonl, writeCodexSession} from './codex-write.js'

const debug = createDebug('jarvis:session')

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
  const summaries: SessionSummary[] = []
  for (const {path} of await codexProjectRollouts(projectRoot, env)) {
    try {
      const {transcript} = await readCodexRollout(path)
      const last = transcript.lastUpdated ?? transcript.messages.at(-1)?.timestamp ?? (await stat(path)).mtime.toISOString()
      summaries.push({
        provider: 'codex',
        sessionId: transcript.sessionId,
        path,
        messageCount: transcript.messages.length,
        lastActivity: last,
        ...(transcript.title !== undefined ? {title: transcript.title} : {}),
      })
    } catch (error) {
      debug('skipping %s: %s', path, error instanceof Error ? error.message : String(error))
    }
  }
  return summaries.sort((a, b) => Date.parse(b.lastActivity) - Date.parse(a.lastActivity) || a.path.localeCompare(b.path))
}
