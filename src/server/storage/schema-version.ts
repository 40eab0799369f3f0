/**
 * A storage at an older schema than this jarvis's, opened by a command that only reads it (`jarvis serve token list`,
 * `serve export`, `serve backup` of PostgreSQL): refused, never upgraded. The upgrade is the server's, at its start:
 * done by a command that only reads, it would move a live database from under the running servers of the older
 * version (which refuse a newer schema at their next start), and a trial export would make going back to that version
 * impossible. Reading the older schema with this version's queries is not safe either: tables and columns are missing.
 */
import {ExitCode, JarvisError} from '../../errors.js'
import {jarvisVersion} from '../../invocation.js'
import {DEFAULT_WORKSPACE} from './workspace-name.js'

/** Exit 2 naming the storage, its schema and how to go on (upgrade it by starting the server, or use the older jarvis). */
export function olderSchemaRefusal(storage: string, version: number, current: number, workspace: string, data: Record<string, unknown>): JarvisError {
  const upgrade =
    workspace === DEFAULT_WORKSPACE
      ? `start \`jarvis serve\` (version ${jarvisVersion()}) on it once to upgrade it`
      : `start \`jarvis serve\` (version ${jarvisVersion()}) on it and make one request with a key of the workspace ${workspace} to upgrade it`
  return new JarvisError(
    `${storage} is at schema ${version}, older than this jarvis's (${current}); ${upgrade}, or use the jarvis that made it. Nothing was changed: a command that only reads never upgrades a database that servers of an older version may be using`,
    {code: 'STORAGE_OLDER', exit: ExitCode.badInput, data: {...data, version, workspace}},
  )
}
