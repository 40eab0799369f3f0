/** File access the three providers share: reading a transcript, replacing one safely, listing summaries. */
import type {Stats} from 'node:fs'
import {readFile, stat} from 'node:fs/promises'

import createDebug from 'debug'

import {BadInputError, ExitCode, JarvisError} from '../errors.js'
import type {Provider} from '../schemas/index.js'
import type {SessionSummary, SessionTranscript} from './universal.js'

const debug = createDebug('jarvis:session')

/** A transcript's text and modification time; a missing file is bad input naming it. */
export async function readTranscriptFile(path: string): Promise<{text: string; mtime: string}> {
  try {
    const [text, info] = await Promise.all([readFile(path, 'utf8'), stat(path)])
    return {text, mtime: info.mtime.toISOString()}
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') throw new BadInputError(`${path}: no such transcript file`, {path}, error)
    throw error
  }
}

/**
 * Before an append replaces a session file whole: gives up (exit 4, nothing written) when the file changed since it
 * was read, since a line its tool appended meanwhile would be lost.
 */
export async function assertUnchangedSince(path: string, before: Stats, tool: string): Promise<void> {
  const current = await stat(path)
  if (current.size !== before.size || current.mtimeMs !== before.mtimeMs) {
    throw new JarvisError(`${path} changed while jarvis was appending to it (is ${tool} using this session?); nothing was written, try again`, {
      code: 'SESSION_IN_USE',
      exit: ExitCode.conflictLeft,
      data: {path},
    })
  }
}

/** Summaries of the session files at `paths`, newest first; a file that cannot be read is skipped (debug `jarvis:session`). */
export async function summarize(
  provider: Provider,
  paths: readonly string[],
  read: (path: string) => Promise<SessionTranscript>,
  lastActivity: (transcript: SessionTranscript) => string | undefined,
): Promise<SessionSummary[]> {
  const summaries: SessionSummary[] = []
  for (const path of paths) {
    try {
      const transcript = await read(path)
      summaries.push({
        provider,
        sessionId: transcript.sessionId,
        path,
        messageCount: transcript.messages.length,
        lastActivity: lastActivity(transcript) ?? (await stat(path)).mtime.toISOString(),
        ...(transcript.title !== undefined ? {title: transcript.title} : {}),
      })
    } catch (error) {
      debug('skipping %s: %s', path, error instanceof Error ? error.message : String(error))
    }
  }
  return summaries.sort((a, b) => Date.parse(b.lastActivity) - Date.parse(a.lastActivity) || a.path.localeCompare(b.path))
}
