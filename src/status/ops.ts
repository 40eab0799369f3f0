/**
 * `jarvis status`: the `git status` of the memory — the tree, its server and agent, the last sync, local changes
 * not yet synced, conflict backups waiting for a person, queued writes, hook and replica failures, the agents' wiring, the
 * watch of the tree and whether the server answers. Reads only; with `offline`, touches no network.
 */
import {agentsStatus, type AgentStatus} from '../agents/ops.js'
import {HOOK_AGENTS} from '../hook/events.js'
import {type HookLogEntry, readHookFailures} from '../hook/index.js'
import {openTree} from '../ops/context.js'
import {readUserConfig, resolveIdentity} from '../ops/identity.js'
import {MemoryClient, modeOf, type ServerMode} from '../protocol/client.js'
import {type BackupsOfFile, backupsByFile, readAudit, readOutbox, readReplicaFailures, readStatCache, readSyncState, type ReplicaFailure, scanMemory, type UnreadableEntry, unreadableFiles} from '../store/index.js'
import {askWarm} from '../warm/client.js'
import {ABOUT_OP, type WarmAbout} from '../warm/protocol.js'

export interface StatusOptions {
  dir?: string
  server?: string
  agent?: string
  /** Do not ask the server. */
  offline?: boolean
  /** Told of what status read past: a line of the audit log that is not an entry. */
  warn?: (message: string) => void
}

export interface StatusResult {
  root: string
  server?: string
  agent?: string
  project?: string
  /** The last sync's audit line, when there was one. */
  lastSync?: {at: string; pushed: number; pulled: number; merged: number; deleted: number; conflicts: number; backups: number}
  /** Local changes against what the last sync recorded: they go with the next sync. */
  changes: {added: string[]; modified: string[]; deleted: string[]}
  /** Conflict backups (relative to `.memory/`), newest conflict first per file: each waits for `jarvis resolve`. */
  backups: string[]
  /**
   * The same backups under the file each belongs to, newest first, files sorted. `file` is null for a backup an
   * older jarvis left beside several files named like it (`candidates`), which only a person can attribute.
   */
  backupsByFile: BackupsOfFile[]
  /**
   * Files and folders of `.memory/` this user may not read (relative to `.memory/`): a sync leaves them as they are
   * (neither sent nor deleted anywhere) until they can be read. Their files are in no list of `changes`.
   */
  unreadable: UnreadableEntry[]
  /** Writes made offline, waiting in the outbox for the next sync. */
  outbox: number
  /** Sessions' episodes kept while the tree was locked as they ended, waiting to be written (the next sync or hook does). */
  pendingEpisodes: number
  /** The newest hook failures (`.nexus/hooks.log`). */
  hookFailures: HookLogEntry[]
  /** Replicas whose last run failed (`.nexus/replica-failures.json`), newest first; a run that succeeds clears its own. */
  replicaFailures: ReplicaFailure[]
  agents: AgentStatus[]
  /** The process that watches the tree and answers the other jarvis processes in it, when one runs (src/warm/). */
  watch?: WarmAbout
  /** `mode`: how a sync decides with this server, by revisions or (a server without them) by timestamps. */
  remote: {state: 'answers' | 'unreachable' | 'not-asked' | 'no-server'; detail?: string; files?: number; mode?: ServerMode}
}

const HOOK_FAILURES_SHOWN = 5

export async function treeStatus(options: StatusOptions): Promise<StatusResult> {
  const tree = await openTree(options.dir)
  const {root} = tree
  const identity = resolveIdentity({flags: options, env: process.env, tree: tree.config, user: await readUserConfig()})
  const backups: string[] = []
  const unreadable: UnreadableEntry[] = []
  const [state, local, audit, outbox, pendingEpisodes, hookFailures, replicaFailures, agents, watch] = await Promise.all([
    readSyncState(root),
    readStatCache(root).then((cache) => scanMemory(root, cache, {backups, unreadable})),
    readAudit(root, options.warn),
    readOutbox(root),
    import('../hook/pending-names.js').then(({countPendingEpisodes}) => countPendingEpisodes(root)),
    readHookFailures(root, {limit: HOOK_FAILURES_SHOWN}),
    readReplicaFailures(root),
    agentsStatus({dir: root, agents: [...HOOK_AGENTS], probe: false}).then((result) => result.agents),
    askWarm<WarmAbout>(root, ABOUT_OP, {}),
  ])
  // A file the stat cache stood for was not read: asked apart (a sync finds out when it must read one).
  unreadable.push(...unreadableFiles(root, local.keys()))
  unreadable.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  const changes: StatusResult['changes'] = {added: [], modified: [], deleted: []}
  for (const [path, info] of local) {
    const recorded = state.files[path]
    if (!recorded) changes.added.push(path)
    else if (recorded.hash !== info.hash) changes.modified.push(path)
  }
  const unread = (path: string) => unreadable.some((entry) => (entry.folder ? path.startsWith(`${entry.path}/`) : path === entry.path))
  for (const path of Object.keys(state.files)) if (!local.has(path) && !unread(path)) changes.deleted.push(path)
  for (const list of Object.values(changes)) list.sort()
  const last = audit.findLast((entry) => entry.type === 'sync') as (Record<string, unknown> & {at: string}) | undefined
  const count = (key: string) => (typeof last?.[key] === 'number' ? (last[key] as number) : 0)
  return {
    root,
    server: identity.server,
    agent: identity.agentId,
    project: tree.config.project,
    lastSync: last && {at: last.at, pushed: count('pushed'), pulled: count('pulled'), merged: count('merged'), deleted: count('deleted'), conflicts: count('conflicts'), backups: count('backups')},
    changes,
    backups: backups.sort(),
    backupsByFile: await backupsByFile(root, backups),
    unreadable,
    outbox: outbox.length,
    pendingEpisodes,
    hookFailures,
    replicaFailures,
    agents,
    ...(watch === undefined ? {} : {watch}),
    remote: await remoteState(identity.server, identity.token, options.offline, tree.config.sync.requestTimeout),
  }
}

async function remoteState(server: string | undefined, token: string | undefined, offline: boolean | undefined, timeoutMs: number): Promise<StatusResult['remote']> {
  if (!server) return {state: 'no-server'}
  if (offline) return {state: 'not-asked'}
  try {
    const status = await new MemoryClient({server, token, timeoutMs}).status()
    return {state: 'answers', files: Object.values(status.files).filter((file) => !file.deleted).length, mode: modeOf(status)}
  } catch (error) {
    return {state: 'unreachable', detail: error instanceof Error ? error.message : String(error)}
  }
}
