/**
 * The replicas operation: every `replicas` entry of `.nexus/config.json`, one after the other, under the tree
 * lock. Called by `jarvis replicate`, and by `jarvis sync` and the agents installer when replicas are configured.
 */
import {join} from 'node:path'

import {ConflictLeftError, ExitCode, JarvisError, mostSevere, SecretRefusedError} from '../errors.js'
import type {NexusConfig, Replica} from '../schemas/index.js'
import {appendAudit, findRoot, hashText, isTreeLockHeld, noteReplicaOutcomes, readConfig, type ReplicaOutcome, withTreeLock} from '../store/index.js'
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
      if (!dryRun) await noteOutcomes(root, reports, input.now ?? (() => new Date()))
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

/**
 * A failure is kept for `jarvis status` (and in the audit log) until a later run of that replica succeeds; a
 * replica skipped (its folder missing) or paused neither records nor clears one.
 */
async function noteOutcomes(root: string, reports: readonly ReplicaReport[], now: () => Date): Promise<void> {
  const at = now().toISOString()
  const outcomes: ReplicaOutcome[] = []
  for (const report of reports) {
    if (report.skipped) continue
    if (!report.error) {
      outcomes.push({id: report.id})
      continue
    }
    outcomes.push({id: report.id, failure: {at, kind: report.kind, workspace: report.workspace, code: report.error.code, message: report.error.message}})
    await appendAudit(root, {at, type: 'replica-failed', replica: report.id, kind: report.kind, workspace: report.workspace, code: report.error.code, message: report.error.message})
  }
  await noteReplicaOutcomes(root, outcomes)
}

/**
 * The error a door reports after a run that left something undone, else undefined: a replica that failed (exit
 * 1, or 3 when only the server could not be reached), deletions held back (4, as a sync's mass deletion; `door`
 * names the command whose `--force` lets them through), a conflict kept as a backup (4, as a sync's), a refused
 * secret (5). Several at once: one message with each, and the highest of their exit codes.
 */
export function replicaFailure(result: ReplicasResult, options: {door?: 'replicate' | 'sync'; data?: Record<string, unknown>} = {}): JarvisError | undefined {
  const door = options.door ?? 'replicate'
  const data = options.data ?? {result}
  const found: JarvisError[] = []
  const failed = result.replicas.filter((r) => r.error)
  if (failed.length > 0) {
    const lines = failed.map((r) => `${r.workspace}: ${r.error!.message}`)
    // Only the server away (an event-log replica cannot read the log) is "cannot be reached"; anything else failed.
    const exit = failed.every((r) => r.error!.code === 'UNREACHABLE') ? ExitCode.unreachable : ExitCode.failed
    found.push(new JarvisError(`replication failed:\n${lines.join('\n')}`, {code: 'REPLICA_FAILED', exit, data}))
  }
  const held = result.replicas.filter((r) => r.held.length > 0)
  if (held.length > 0) {
    const lines = held.map((r) => `${r.workspace}: ${r.held.map((h) => (h.action === 'delete-memory' ? `.memory/${h.memoryPath}` : join(r.workspace, h.workspacePath))).join(', ')}`)
    found.push(
      new ConflictLeftError(
        `deletions held back: a replica's files vanished at once (every one of them, or more than half), which is how an emptied, moved or unmounted folder looks; nothing was deleted:\n${lines.join('\n')}\nif you did delete them, run \`jarvis ${door} --force\``,
        data,
      ),
    )
  }
  // A replica's side that lost a conflict is kept as a backup, as a sync keeps a local one: a person decides (4).
  const backups = result.replicas.flatMap((r) => r.backups.map(({path, backup}) => `  ${path}: the merge is in .memory/${path}, the replica's text in .memory/${backup}`))
  if (backups.length > 0) found.push(new ConflictLeftError(`conflicts left for you: compare, then \`jarvis resolve <file> --keep server|local\`\n${backups.join('\n')}`, data))
  // An openclaw file is named in .memory/; a note of an event-log replica, where the person wrote it.
  const lines = result.replicas.flatMap((r) => r.refused.map(({path, reason}) => `${r.kind === 'openclaw' ? `.memory/${path}` : join(r.workspace, path)}: ${reason}`))
  if (lines.length > 0) found.push(new SecretRefusedError(`not replicated, left as they are:\n${lines.join('\n')}`, data))
  return mostSevere(found)
}
