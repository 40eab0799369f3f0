/**
 * The replicas operation: every `replicas` entry of `.nexus/config.json`, one after the other, under the tree
 * lock. Called by `jarvis replicate`, and by `jarvis sync` and the agents installer when replicas are configured.
 */
import {ExitCode, JarvisError, SecretRefusedError} from '../errors.js'
import type {Replica} from '../schemas/index.js'
import {findRoot, hashText, isTreeLockHeld, readConfig, withTreeLock} from '../store/index.js'
import {expandHome, openclawLayout} from './openclaw.js'
import {emptyReport, type ReplicaLayout, type ReplicaReport, runReplica, type Screen} from './run.js'

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
}

export interface ReplicasResult {
  root: string
  dryRun: boolean
  replicas: ReplicaReport[]
}

const LAYOUTS: Record<Replica['kind'], (dir: string) => ReplicaLayout> = {
  openclaw: openclawLayout,
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
  const work = async () => {
    for (const replica of replicas) result.replicas.push(await runOne(root, replica, input, dryRun))
    return result
  }
  // `jarvis sync` already holds the lock when it calls this; the lock is not re-entrant.
  if (await isTreeLockHeld(root)) return work()
  return withTreeLock(root, {timeoutMs: config.sync.lockTimeout, command: 'jarvis replicate'}, work)
}

async function runOne(root: string, replica: Replica, input: RunReplicasInput, dryRun: boolean): Promise<ReplicaReport> {
  const layout = LAYOUTS[replica.kind](expandHome(replica.path, input.home))
  const id = replicaId(replica.kind, layout.dir, replica.folder)
  if (!replica.enabled) return {...emptyReport(id, layout, replica.folder), skipped: 'paused (enabled: false)'}
  try {
    return await runReplica({root, id, folder: replica.folder, layout, now: input.now ?? (() => new Date()), dryRun, force: Boolean(input.force), screen: input.screen})
  } catch (error) {
    if (error instanceof JarvisError && error.code.startsWith('LOCK_')) throw error
    // One broken replica (unreadable directory, damaged state) must not stop the others, nor a sync.
    const code = error instanceof JarvisError ? error.code : ((error as NodeJS.ErrnoException).code ?? 'FAILED')
    return {...emptyReport(id, layout, replica.folder), error: {code, message: error instanceof Error ? error.message : String(error)}}
  }
}

/** The error a door reports after a run that left something undone (exit 1, or 5 for refused secrets); else undefined. */
export function replicaFailure(result: ReplicasResult): JarvisError | undefined {
  const failed = result.replicas.filter((r) => r.error)
  if (failed.length > 0) {
    const lines = failed.map((r) => `${r.workspace}: ${r.error!.message}`)
    return new JarvisError(`replication failed:\n${lines.join('\n')}`, {code: 'REPLICA_FAILED', exit: ExitCode.failed, data: {result}})
  }
  const refused = result.replicas.flatMap((r) => r.refused)
  if (refused.length > 0) {
    const lines = refused.map((r) => `.memory/${r.path}: ${r.reason}`)
    return new SecretRefusedError(`not replicated, left as they are on both sides:\n${lines.join('\n')}`, {result})
  }
  return undefined
}
