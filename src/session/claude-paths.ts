/** Where Claude Code keeps its transcripts (research §1.1). */
import {homedir} from 'node:os'
import {join} from 'node:path'

/** `$CLAUDE_CONFIG_DIR`, else `~/.claude`. */
export function claudeHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.CLAUDE_CONFIG_DIR
  if (configured !== undefined && configured !== '') return configured
  return join(env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir(), '.claude')
}

/**
 * The project directory name Claude Code derives from a working directory: every UTF-16 unit outside
 * `[A-Za-z0-9]` becomes `-`; a name longer than 200 characters is cut to 200 and given `-<hash>`, the
 * Java-style String.hashCode of the raw path in base 36. The name is lossy: never decode it.
 */
export function claudeProjectSlug(projectRoot: string): string {
  const slug = projectRoot.replace(/[^a-zA-Z0-9]/g, '-')
  if (slug.length <= 200) return slug
  let hash = 0
  for (let i = 0; i < projectRoot.length; i++) hash = ((hash << 5) - hash + projectRoot.charCodeAt(i)) | 0
  return `${slug.slice(0, 200)}-${Math.abs(hash).toString(36)}`
}

/** The directory a new session of `projectRoot` goes to (`CLAUDE_CODE_PROJECT_DIR_NAME` overrides the slug, Claude 2.1.234+). */
export function claudeProjectDir(projectRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  const named = env.CLAUDE_CODE_PROJECT_DIR_NAME
  return join(claudeHome(env), 'projects', named !== undefined && named !== '' ? named : claudeProjectSlug(projectRoot))
}
