import {runSync, type SyncResult} from '../sync/run.js'
import {withTreeLock} from '../store/index.js'
import {connect, openTree} from './context.js'
import {progressLine} from './render.js'

export interface SyncOnceOptions {
  dir?: string
  server?: string
  agent?: string
  dryRun?: boolean
  force?: boolean
  progress?: boolean
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
        onProgress: options.progress ? progressLine : undefined,
      }),
    )
  } finally {
    await client.close()
  }
}
