import {BadInputError} from '../errors.js'
import type {ReplicaReport} from '../replica/run.js'
import {runSync, type SyncResult} from '../sync/run.js'
import {type TreeWatch, withTreeLock} from '../store/index.js'
import {connect, openTree, type TreeContext} from './context.js'

export interface SyncOnceOptions {
  dir?: string
  server?: string
  agent?: string
  dryRun?: boolean
  force?: boolean
  /** Told how far a long sync has come (files done, files in all). */
  onProgress?: (done: number, total: number) => void
  /** The watch of the tree at a root, asked which files changed instead of looking at every one (cli/warm.ts). */
  watch?: (root: string) => TreeWatch | undefined
  /** Aborts when the caller left (its client gone from a watch that runs the sync): the sync stops at its next request. */
  signal?: AbortSignal
  /**
   * Work to do under this sync's lock before its round, so the round sends what it wrote: the episodes hooks kept
   * while the tree was locked (hook/pending.ts), which the command's door writes (ops does not reach into hooks).
   */
  beforeRound?: (root: string) => Promise<void>
}

/** What a sync did, and what each run of the configured replicas (`.nexus/config.json` `replicas`) did around it. */
export type SyncOnceResult = SyncResult & {replicas?: ReplicaReport[]}

/**
 * One `jarvis sync`, under the tree lock. Configured replicas run first, so what an agent wrote in its own
 * memory files goes up in this sync, and again after a sync that brought files down, so they reach it too.
 */
export async function syncOnce(options: SyncOnceOptions): Promise<SyncOnceResult> {
  const tree = await openTree(options.dir)
  assertSyncEnabled(tree)
  const {client, identity} = await connect(tree, options)
  // A replica that fails (its directory unreadable, a secret refused) is reported, never a reason to stop the sync.
  // Its code is loaded only for a tree that has replicas: most syncs never need it.
  const replicate = async () => {
    const [{assertNoSensitive}, {EventsClient}, {runReplicas}, {checkAgent}, {eventLogOver}] = await Promise.all([
      import('../events/index.js'),
      import('../protocol/events.js'),
      import('../replica/ops.js'),
      import('./events/common.js'),
      import('./replicate.js'),
    ])
    // The event replicas read and write the log through this sync's own connection, which the sync closes.
    const openEventLog = async () => eventLogOver(EventsClient.over(client), checkAgent(identity.agentId, "to write a person's edits in a replica as"), {closes: false})
    return (await runReplicas({dir: tree.root, dryRun: options.dryRun, force: options.force, screen: assertNoSensitive, openEventLog})).replicas
  }
  try {
    return await withTreeLock(tree.root, {timeoutMs: tree.config.sync.lockTimeout}, async () => {
      if (!options.dryRun) await options.beforeRound?.(tree.root)
      const configured = (tree.config.replicas ?? []).length > 0
      const before = configured ? await replicate() : []
      const result: SyncOnceResult = await runSync({
        root: tree.root,
        client,
        settings: tree.config.sync,
        dryRun: options.dryRun,
        force: options.force,
        onProgress: options.onProgress,
        watch: options.watch?.(tree.root),
      })
      if (!configured) return result
      const broughtDown = result.pulled.length + result.merged.length + result.deleted.length > 0
      result.replicas = broughtDown && !options.dryRun ? [...before, ...(await replicate())] : before
      // A backup a replica made in this run is this sync's conflict (named in its exit), not an earlier one waiting.
      const made = new Set(result.replicas.flatMap((replica) => replica.backups.map((b) => b.backup)))
      result.waiting = result.waiting.filter((backup) => !made.has(backup))
      return result
    })
  } finally {
    await client.close()
  }
}

/** `sync.enabled: false` in `.nexus/config.json` switches syncing off for the tree: every door refuses, saying so. */
export function assertSyncEnabled(tree: TreeContext): void {
  if (tree.config.sync.enabled === false) {
    throw new BadInputError(`sync is switched off for this tree (sync.enabled is false in .nexus/config.json): nothing was sent or fetched; set it to true to sync again`, {field: 'sync.enabled'})
  }
}
