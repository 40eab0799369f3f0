/**
 * The replicas operation: every `replicas` entry of `.nexus/config.json`, one after the other, under the tree
 * lock. Called by `jarvis replicate`, and by `jarvis sync` and the agents installer when replicas are configured.
 */
import {join} from 'node:path'

import {ExitCode, JarvisError, SecretRefusedError} from '../errors.js'
import type {NexusConfig, Replica} from '../schemas/index.js'
import {findRoot, hashText, isTreeLockHeld, readConfig, withTreeLock} from '../store/index.js'
import type {EventReplicaRunOptions, ReplicaEventLog} from './event-log.js'
import {expandHome, openclawLayout} from './openclaw.js'
import {emptyReport, type ReplicaReport, runReplica, type Screen} from './run.js'

export interface RunReplicasInput {
  /** The tree: `--dir`, else the nearest parent of the working directory holding `.memory/`. */
  dir?: string
  now?: () => Date
  dryRun?: boolean
  /** Let through a replication that deletes more than half of a replica's files. */
  force?: boolean
  /** The secret and personal-data check (events/ `assertNoSensitive`). Required, so that no door forgets it. */
  screen: Screen
  /** Home directory for `~/…` paths; default the user's. */
  home?: string
  /**
   * The server's event log, for the ai-memory and obsidian replicas; opened only when one of them is configured
   * (an openclaw replica works without a server), once for the whole run, closed at its end.
   */
  openEventLog?: () => Promise<OpenEventLog>
}

export type OpenEventLog = ReplicaEventLog & {close(): Promise<void>}

export interface ReplicasResult {
  root: string
  dryRun: boolean
  replicas: ReplicaReport[]
}


/**
 * The directory under `.nexus/replicas/` holding a replica's bases. It names the kind, the directory and the
 * folder: moving either one starts from no base, which can never turn into deletions.
 */
export function replicaId(kind: string, dir: string, folder: string): string {
  return `${kind}-${hashText(`${kind}\n${dir}\n${folder}`).slice(0, 12)}`
}

/** Runs every configured replica (none configured: returns at once, without taking the lock). */
export async function runReplicas(input: RunReplicasInput): Promise<ReplicasResult> {
  const root = findRoot(process.cwd(), input.dir)
  const config = await readConfig(root)
  const dryRun = Boolean(input.dryRun)
  const result: ReplicasResult = {root, dryRun, replicas: []}
  const replicas = config.replicas ?? []
  if (replicas.length === 0) return result
  let log: Promise<OpenEventLog> | undefined
  const eventLog = () => {
    if (!input.openEventLog) throw new JarvisError('this replica writes the event log out, and no server connection was given to read it', {code: 'REPLICA_NO_SERVER', exit: ExitCode.failed})
    log ??= input.openEventLog()
    return log
  }
  const work = async () => {
    try {
      // An obsidian replica turns a person's edits into events: it runs first, so that the others show them in this same run.
      const order = replicas.map((replica, index) => ({replica, index})).sort((a, b) => Number(b.replica.kind === 'obsidian') - Number(a.replica.kind === 'obsidian'))
      const reports: ReplicaReport[] = []
      for (const {replica, index} of order) reports[index] = await runOne(root, config, replica, input, dryRun, eventLog)
      result.replicas.push(...reports)
    } finally {
      if (log) await (await log.catch(() => undefined))?.close()
    }
    return result
  }
  // `jarvis sync` already holds the lock when it calls this; the lock is not re-entrant.
  if (await isTreeLockHeld(root)) return work()
  return withTreeLock(root, {timeoutMs: config.sync.lockTimeout, command: 'jarvis replicate'}, work)
}

/** `global`, and the tree's project: what every agent of this project reads. */
export function defaultReplicaScopes(config: NexusConfig): string[] {
  return ['global', ...(config.project ? [`project:${config.project}`] : [])]
}

async function runOne(root: string, config: NexusConfig, replica: Replica, input: RunReplicasInput, dryRun: boolean, eventLog: () => Promise<OpenEventLog>): Promise<ReplicaReport> {
  const dir = expandHome(replica.path, input.home)
  const folder = replica.kind === 'openclaw' ? replica.folder : ''
  const id = replicaId(replica.kind, dir, folder)
  if (!replica.enabled) return {...emptyReport(id, {kind: replica.kind, dir}, folder), skipped: 'paused (enabled: false)'}
  const now = input.now ?? (() => new Date())
  try {
    if (replica.kind === 'openclaw') {
      return await runReplica({root, id, folder, layout: openclawLayout(dir), now, dryRun, force: Boolean(input.force), screen: input.screen})
    }
    const options: EventReplicaRunOptions = {root, id, dir, scopes: replica.scopes ?? defaultReplicaScopes(config), log: await eventLog(), now, dryRun, screen: input.screen}
    // Loaded only when configured: a sync with no such replica (the hot path of git hooks) never loads them or yaml.
    if (replica.kind === 'ai-memory') return await (await import('./ai-memory.js')).runAiMemory({...options, minConfidence: replica.minConfidence})
    return await (await import('./obsidian.js')).runObsidian({...options, heading: replica.heading})
  } catch (error) {
    if (error instanceof JarvisError && error.code.startsWith('LOCK_')) throw error
    // One broken replica (unreadable directory, damaged state, server away) must not stop the others, nor a sync.
    const code = error instanceof JarvisError ? error.code : ((error as NodeJS.ErrnoException).code ?? 'FAILED')
    return {...emptyReport(id, {kind: replica.kind, dir}, folder), error: {code, message: error instanceof Error ? error.message : String(error)}}
  }
}

/** The error a door reports after a run that left something undone (exit 1, or 5 for refused secrets); else undefined. */
export function replicaFailure(result: ReplicasResult): JarvisError | undefined {
  const failed = result.replicas.filter((r) => r.error)
  if (failed.length > 0) {
    const lines = failed.map((r) => `${r.workspace}: ${r.error!.message}`)
    // Only the server away (an event-log replica cannot read the log) is "cannot be reached"; anything else failed.
    const exit = failed.every((r) => r.error!.code === 'UNREACHABLE') ? ExitCode.unreachable : ExitCode.failed
    return new JarvisError(`replication failed:\n${lines.join('\n')}`, {code: 'REPLICA_FAILED', exit, data: {result}})
  }
  // An openclaw file is named in .memory/; a note of an event-log replica, where the person wrote it.
  const lines = result.replicas.flatMap((r) => r.refused.map(({path, reason}) => `${r.kind === 'openclaw' ? `.memory/${path}` : join(r.workspace, path)}: ${reason}`))
  if (lines.length > 0) {
    return new SecretRefusedError(`not replicated, left as they are:\n${lines.join('\n')}`, {result})
  }
  return undefined
}
