/**
 * The sync a recording hook starts after writing an episode, or after keeping it because the tree was locked
 * (pending.ts), run as its own detached process so that the hook returns at once (Claude Code gives a SessionEnd hook
 * about 1.5 s). Started as
 *
 *     node background-sync.js <root> <agent> <marker>
 *
 * It waits for the tree lock (up to BACKGROUND_LOCK_PATIENCE_MS) to write the episodes hooks kept, then, when
 * `sync.enabled` and `sync.autoSync` are on, runs one `jarvis sync` under the tree lock (so two never run at once: a
 * second one waits for the first). It logs a failure to `.nexus/hooks.log` (a server that cannot be reached leaves
 * the episode for the next sync; a tree locked all that time leaves the kept episodes for the next hook), and removes
 * its marker `.nexus/hook-syncs/<marker>` when it ends, whatever happened. A marker that stays names a sync still
 * running (or killed).
 */
import {spawn} from 'node:child_process'
import {randomUUID} from 'node:crypto'
import {realpathSync} from 'node:fs'
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {LockedError} from '../errors.js'
import {jarvisPackageRoot} from '../invocation.js'
import {deleteNexusFile, nexusDir, readNexusFile, writeNexusFile} from '../store/index.js'
import {appendHookLog} from './log.js'
import {PENDING_DIR} from './pending-names.js'

export const SYNC_MARKER_DIR = 'hook-syncs'
/** How long the background sync waits for a tree that another process holds (on top of sync.lockTimeout per try). */
export const BACKGROUND_LOCK_PATIENCE_MS = 30_000

/** Marks a background sync as started and starts it, detached, its standard streams closed. */
export async function startBackgroundSync(root: string, agent: string, env: NodeJS.ProcessEnv): Promise<string> {
  const marker = `${Date.now()}-${randomUUID().slice(0, 8)}.json`
  await writeNexusFile(root, `${SYNC_MARKER_DIR}/${marker}`, JSON.stringify({agent, startedAt: new Date().toISOString()}) + '\n')
  const self = fileURLToPath(import.meta.url)
  // From the sources (tests, bin/dev.js) the script is this TypeScript file, run through tsx like bin/dev.js does;
  // built, it is dist/hook/background-sync.js, wherever the bundler put the code that starts it.
  const fromSources = self.endsWith('.ts')
  const script = fromSources ? self : join(jarvisPackageRoot(import.meta.url), 'dist', 'hook', 'background-sync.js')
  const loader = fromSources ? ['--import', import.meta.resolve('tsx'), '--no-warnings=ExperimentalWarning'] : []
  const child = spawn(process.execPath, [...loader, script, root, agent, marker], {detached: true, stdio: 'ignore', env, cwd: root})
  child.on('error', () => {}) // a spawn that fails leaves its marker; the episode waits for the next sync
  child.unref()
  return marker
}

/** Markers of the background syncs that have not ended (tests wait for none). */
export async function pendingBackgroundSyncs(root: string): Promise<string[]> {
  try {
    return (await readdir(join(nexusDir(root), SYNC_MARKER_DIR))).filter((name) => name.endsWith('.json'))
  } catch {
    return []
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** `work` again while another process holds the tree, for at most BACKGROUND_LOCK_PATIENCE_MS from `started`. */
async function patiently<T>(started: number, work: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await work()
    } catch (error) {
      if (!(error instanceof LockedError) || Date.now() - started >= BACKGROUND_LOCK_PATIENCE_MS) throw error
      await sleep(250)
    }
  }
}

async function runBackgroundSync(root: string, agent: string, marker: string): Promise<void> {
  const log = (reason: string) => appendHookLog(root, {at: new Date().toISOString(), agent, event: 'sync', reason}).catch(() => {})
  let pendingWritten = false
  try {
    if ((await readNexusFile(root, `${SYNC_MARKER_DIR}/${marker}`)) === null) return // not started by a hook
    const started = Date.now()
    // First the episodes of hooks that found the tree locked (pending.ts): this sync then sends them too.
    const [{writePendingEpisodes}, {readConfig, withTreeLock}] = await Promise.all([import('./episode.js'), import('../store/index.js')])
    const written = await patiently(started, () => withTreeLock(root, {command: 'jarvis hook (background)'}, () => writePendingEpisodes(root)))
    pendingWritten = true
    for (const episode of written) if (episode.refused) await log(episode.refused)
    const {sync} = await readConfig(root)
    if (!sync.enabled || !sync.autoSync) return
    const {syncOnce} = await import('../ops/sync.js')
    await patiently(started, () => syncOnce({dir: root}))
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    await log(
      pendingWritten
        ? `the episode was recorded but not synced (${message}); it stays in .memory/ and the next \`jarvis sync\` sends it`
        : `the episodes kept while the tree was locked are not written yet (${message}); they stay in .nexus/${PENDING_DIR}/ for the next hook that gets the lock`,
    )
  } finally {
    await deleteNexusFile(root, `${SYNC_MARKER_DIR}/${marker}`).catch(() => {})
  }
}

function isMainScript(): boolean {
  try {
    return Boolean(process.argv[1]) && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}

// Run only as a script (never when imported).
if (process.argv.length >= 5 && isMainScript()) {
  const [root, agent, marker] = process.argv.slice(2)
  // No top-level await: the fast door's code is bundled as one CommonJS script (scripts/bundle.mjs).
  void runBackgroundSync(root, agent, marker).then(() => process.exit(0))
}
