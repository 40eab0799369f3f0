/** Claude Code transcripts: `$CLAUDE_CONFIG_DIR/projects/<slug>/<sessionId>.jsonl` (research §1). */
import {stat} from 'node:fs/promises'
import {join} from 'node:path'

import createDebug from 'debug'

import {claudeHome, claudeProjectDir, claudeProjectSlug} from './claude-paths.js'
import {readClaudeSession} from './claude-read.js'
import type {SessionSummary} from './universal.js'
import {listDir} from './dir.js'

export {claudeHome, claudeProjectDir, claudeProjectSlug} from './claude-paths.js'
export {type ClaudeChain, type ClaudeReadOptions, parseClaudeTranscript, readClaudeChain, readClaudeSession} from './claude-read.js'
export {appendClaudeSession, CLAUDE_WRITER_VERSION, type ClaudeWriteOptions, lastPromptText, toClaudeSessionJsonl, writeClaudeSession} from './claude-write.js'

const debug = createDebug('jarvis:session')


/**
 * The project's directories: the slug (or `CLAUDE_CODE_PROJECT_DIR_NAME`), and for a path whose slug is longer
 * than 200 characters every `<first 200>-<suffix>` directory, since the suffix rule changed in 2.1.224.
 */
async function projectDirs(projectRoot: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const dirs = [claudeProjectDir(projectRoot, env)]
  const slug = claudeProjectSlug(projectRoot)
  if (slug.length > 200) {
    const prefix = `${slug.slice(0, 200)}-`
    const projects = join(claudeHome(env), 'projects')
    for (const name of await listDir(projects)) if (name.startsWith(prefix) && !dirs.includes(join(projects, name))) dirs.push(join(projects, name))
  }
  return dirs
}

/** Every main session of the project, newest first; [] when Claude Code has no directory for it. Unreadable files are skipped. */
export async function listClaudeSessions(projectRoot: string, env: NodeJS.ProcessEnv = process.env): Promise<SessionSummary[]> {
  const summaries: SessionSummary[] = []
  for (const dir of await projectDirs(projectRoot, env)) {
    for (const name of (await listDir(dir)).sort()) {
      if (!name.endsWith('.jsonl') || name.startsWith('agent-')) continue
      const path = join(dir, name)
      try {
        const transcript = await readClaudeSession(path)
        const last = transcript.messages.at(-1)?.timestamp ?? transcript.lastUpdated ?? (await stat(path)).mtime.toISOString()
        summaries.push({
          provider: 'claude',
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
  }
  return summaries.sort((a, b) => Date.parse(b.lastActivity) - Date.parse(a.lastActivity) || a.path.localeCompare(b.path))
}
