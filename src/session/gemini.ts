/** Gemini CLI transcripts and checkpoints: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/…` (research §2). */
import {stat} from 'node:fs/promises'
import {join} from 'node:path'

import createDebug from 'debug'

import {geminiProjectDirs} from './gemini-paths.js'
import {readGeminiFile} from './gemini-read.js'
import type {SessionSummary} from './universal.js'

export {geminiHome, geminiProjectDirs, geminiProjectHash, geminiProjectRootOf, readGeminiProjects} from './gemini-paths.js'
export {type GeminiParse, isGeminiContextText, parseGeminiText, readGeminiFile, readGeminiSession} from './gemini-read.js'
export {
  appendGeminiSession,
  geminiPreamble,
  geminiSessionFileName,
  type GeminiSessionWriteOptions,
  type GeminiWriteOptions,
  toGeminiCheckpointJson,
  toGeminiSessionText,
  writeGeminiCheckpoint,
  writeGeminiSession,
} from './gemini-write.js'
import {listDir} from './dir.js'

const debug = createDebug('jarvis:session')


/**
 * The project's sessions (`chats/session-*.json` and `.jsonl`, main sessions only, one per sessionId: the
 * newer of a migrated `.json`/`.jsonl` pair) and `/chat save` checkpoints, from both the short-name and the
 * hash directory; newest first; [] when Gemini CLI has no directory for the project. Unreadable files are skipped.
 */
export async function listGeminiSessions(projectRoot: string, env: NodeJS.ProcessEnv = process.env): Promise<SessionSummary[]> {
  const sessions = new Map<string, SessionSummary & {updated: number}>()
  const checkpoints: SessionSummary[] = []
  for (const dir of await geminiProjectDirs(projectRoot, env)) {
    const files = [
      ...(await listDir(join(dir, 'chats'))).filter((n) => n.startsWith('session-') && (n.endsWith('.json') || n.endsWith('.jsonl'))).map((n) => join(dir, 'chats', n)),
      ...(await listDir(dir)).filter((n) => n.startsWith('checkpoint-') && n.endsWith('.json')).map((n) => join(dir, n)),
    ]
    for (const path of files) {
      try {
        const {transcript, kind} = await readGeminiFile(path)
        if (kind === 'subagent') continue
        const mtime = (await stat(path)).mtime.toISOString()
        const lastActivity = transcript.lastUpdated ?? transcript.messages.at(-1)?.timestamp ?? mtime
        const summary: SessionSummary = {
          provider: 'gemini',
          sessionId: transcript.sessionId,
          ...(transcript.tag !== undefined ? {tag: transcript.tag} : {}),
          path,
          messageCount: transcript.messages.length,
          lastActivity: transcript.tag !== undefined ? mtime : lastActivity,
          ...(transcript.title !== undefined ? {title: transcript.title} : {}),
        }
        if (transcript.tag !== undefined) {
          checkpoints.push(summary)
          continue
        }
        const updated = Date.parse(summary.lastActivity)
        const known = sessions.get(transcript.sessionId)
        if (!known || updated > known.updated || (updated === known.updated && path.endsWith('.jsonl'))) sessions.set(transcript.sessionId, {...summary, updated})
      } catch (error) {
        debug('skipping %s: %s', path, error instanceof Error ? error.message : String(error))
      }
    }
  }
  const all: SessionSummary[] = [...[...sessions.values()].map(({updated: _updated, ...summary}) => summary), ...checkpoints]
  return all.sort((a, b) => Date.parse(b.lastActivity) - Date.parse(a.lastActivity) || a.path.localeCompare(b.path))
}
