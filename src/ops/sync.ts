import {runSync, type SyncResult} from '../sync/run.js'
import {withTreeLock} from '../store/index.js'
import {connect, openTree} from './context.js'

export interface SyncOnceOptions {
  dir?: string
  server?: string
  agent?: string
  dryRun?: boolean
  force?: boolean
  /** Told how far a long sync has come (files done, files in all). */
  onProgress?: (done: number, total: number) => void
}

/** One `jarvis sync`, under the tree lock. */
export async function syncOnce(options: SyncOnceOptions): Promise<SyncResult> {
  const tree = await openTree(options.dir)
  const {client} = await connect(tree, options)
  try {
    return await withTreeLock(tree.root, {timeoutMs: tree.config.sync.lockTimeout}, () =>
      runSync({
        root: tree.root,
        client,
        settings: tree.config.sync,
        dryRun: options.dryRun,
        force: options.force,
        onProgress: options.onProgress,
      }),
    )
  } finally {
    await client.close()
  }
}
