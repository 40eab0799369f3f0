/** Claude Code transcripts: `$CLAUDE_CONFIG_DIR/projects/<slug>/<sessionId>.jsonl` (research §1). */
import {join} from 'node:path'

import {claudeHome, claudeProjectDir, claudeProjectSlug} from './claude-paths.js'
import {readClaudeSession} from './claude-read.js'
import type {SessionSummary} from './universal.js'
import {listDir} from './dir.js'
import {summarize} from './files.js'

export {claudeHome, claudeProjectDir, claudeProjectSlug} from './claude-paths.js'
export {type ClaudeChain, type ClaudeReadOptions, parseClaudeTranscript, readClaudeChain, readClaudeSession} from './claude-read.js'
export {appendClaudeSession, CLAUDE_WRITER_VERSION, type ClaudeWriteOptions, lastPromptText, toClaudeSessionJsonl, writeClaudeSession} from './claude-write.js'


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
  const paths: string[] = []
  for (const dir of await projectDirs(projectRoot, env)) {
    for (const name of (await listDir(dir)).sort()) if (name.endsWith('.jsonl') && !name.startsWith('agent-')) paths.push(join(dir, name))
  }
  return summarize('claude', paths, (path) => readClaudeSession(path), (t) => t.messages.at(-1)?.timestamp ?? t.lastUpdated)
}
