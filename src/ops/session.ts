import type {Provider} from '../schemas/index.js'
import {listSessions, type SessionListResult, type SessionSyncResult, syncSession} from '../session/sync.js'
import {openTree} from './context.js'

export type {SessionListEntry, SessionListResult, SessionSyncResult} from '../session/sync.js'

/** `jarvis session list`: the three tools' sessions of the tree's project. */
export async function sessionList(options: {dir?: string}): Promise<SessionListResult> {
  const tree = await openTree(options.dir)
  return listSessions({root: tree.root, settings: tree.config.sync, env: process.env})
}

/** `jarvis session sync`: settings from `.nexus/config.json`, provider homes from CLAUDE_CONFIG_DIR / GEMINI_CLI_HOME / CODEX_HOME. */
export async function sessionSync(options: {dir?: string; ref: string; to: Provider; force?: boolean; tag?: string}): Promise<SessionSyncResult> {
  const tree = await openTree(options.dir)
  return syncSession({root: tree.root, settings: tree.config.sync, ref: options.ref, to: options.to, force: options.force, tag: options.tag, env: process.env})
}
