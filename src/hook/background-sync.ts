/**
 * The sync a recording hook starts after writing an episode, run as its own detached process so that the hook
 * returns at once (Claude Code gives a SessionEnd hook about 1.5 s). Started as
 *
 *     node background-sync.js <root> <agent> <marker>
 *
 * It runs one `jarvis sync` under the tree lock (so two never run at once: a second one waits for the first),
 * logs a failure to `.nexus/hooks.log` (a server that cannot be reached leaves the episode for the next sync),
 * and removes its marker `.nexus/hook-syncs/<marker>` when it ends, whatever happened. A marker that stays
 * names a sync still running (or killed).
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

async function runBackgroundSync(root: string, agent: string, marker: string): Promise<void> {
  try {
    if ((await readNexusFile(root, `${SYNC_MARKER_DIR}/${marker}`)) === null) return // not started by a hook
    const {syncOnce} = await import('../ops/sync.js')
    const started = Date.now()
    for (;;) {
      try {
        await syncOnce({dir: root})
        return
      } catch (error) {
        if (error instanceof LockedError && Date.now() - started < BACKGROUND_LOCK_PATIENCE_MS) {
          await sleep(250)
          continue
        }
        throw error
      }
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    await appendHookLog(root, {
      at: new Date().toISOString(),
      agent,
      event: 'sync',
      reason: `the episode was recorded but not synced (${message}); it stays in .memory/ and the next \`jarvis sync\` sends it`,
    }).catch(() => {})
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
