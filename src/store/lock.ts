/**
 * The tree lock: every command that writes either tree holds it (CONTRACT §1).
 *
 * - The lock itself is proper-lockfile's directory `.nexus/lock` (created with mkdir, atomic everywhere); its
 *   mtime is refreshed every 5 s while held, and a lock whose mtime is older than LOCK_STALE_MS (10 s) is stale
 *   (a hung or dead holder on any host).
 * - The holder is recorded in `.nexus/lock-owner.json` `{pid, host, since, command?, lockIno, lockBirthtimeMs}`
 *   right after acquiring (proper-lockfile removes its directory with rmdir, so the directory stays empty).
 *   `lockIno`/`lockBirthtimeMs` tie the record to that one lock directory, so a record left behind by an older
 *   lock is never mistaken for the current holder.
 * - A holder on this host whose pid is gone (kill -9, crash, power loss) is recovered at once, without waiting
 *   for the stale window, and so is a lock directory more than 2 s old that no record describes (its creator
 *   was killed before it could write one): under a short second lock (`.nexus/lock-reclaim`, so two waiters never both reclaim)
 *   the record and the directory are checked again and removed, and the lock is taken normally.
 * - Waiting: retried every 25–75 ms until `timeoutMs`, then LockedError (exit 6) naming the holder and since when.
 * - If the lock is lost while held (its directory removed, or the refresh could not run for 10 s — a suspended
 *   laptop), the callback's `signal` is aborted and `withTreeLock` fails with LOCK_COMPROMISED instead of
 *   crashing the process (proper-lockfile's default would throw from a timer).
 */
import {AsyncLocalStorage} from 'node:async_hooks'
import {mkdirSync, readFileSync, realpathSync, rmSync, statSync} from 'node:fs'
import {realpath, rm, rmdir, stat} from 'node:fs/promises'
import {hostname} from 'node:os'
import {join} from 'node:path'

import createDebug from 'debug'
import lockfile from 'proper-lockfile'

import {ExitCode, JarvisError, LockedError} from '../errors.js'
import {SYNC_SETTINGS_DEFAULTS} from '../schemas/nexus.js'
import {writeFileAtomic} from './atomic.js'
import {pidAlive} from './pid.js'
import {nexusDir} from './root.js'
import {readConfig} from './sync-state.js'

const debug = createDebug('jarvis:store')

export const LOCK_DIR = 'lock'
export const LOCK_OWNER_FILE = 'lock-owner.json'
export const LOCK_RECLAIM_DIR = 'lock-reclaim'
/** proper-lockfile's staleness: a lock not refreshed for this long is taken over (any host). */
export const LOCK_STALE_MS = 10_000

export interface LockOwner {
  pid: number
  host: string
  /** ISO time the lock was taken. */
  since: string
  command?: string
  /** Inode and birth time of the `.nexus/lock` directory this record belongs to. */
  lockIno?: number
  lockBirthtimeMs?: number
}

export interface TreeLockOptions {
  /** How long to wait for another holder; default `sync.lockTimeout` from `.nexus/config.json` (5000). 0 = one try. */
  timeoutMs?: number
  /** Recorded in the owner file and shown to whoever waits (e.g. `jarvis sync`). */
  command?: string
}

export interface TreeLockContext {
  root: string
  owner: LockOwner
  /** Aborted if the lock is lost while the callback runs; check it before a long or final write. */
  signal: AbortSignal
  /** Throws LOCK_COMPROMISED if the lock has been lost. */
  assertHeld(): void
}

/** Keys (real path of `.nexus/`) of the locks held by the current async call chain. */
const heldHere = new AsyncLocalStorage<ReadonlySet<string>>()

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as NodeJS.ErrnoException).code : undefined
}

function compromisedError(root: string, cause: unknown): JarvisError {
  return new JarvisError(
    `the tree lock on ${root} was lost while the command ran (${cause instanceof Error ? cause.message : String(cause)}); ` +
      'every file is whole (writes are atomic), but run the command again',
    {code: 'LOCK_COMPROMISED', exit: ExitCode.failed, data: {root}, cause},
  )
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

async function lockKey(root: string): Promise<string> {
  const dir = nexusDir(root)
  // In this thread: two system calls, where the thread pool cost two trips.
  mkdirSync(dir, {recursive: true}) // a tree cloned without its (git-ignored) .nexus/ still locks
  return realpathSync.native(dir)
}

async function readOwnerRecord(key: string): Promise<LockOwner | null> {
  let text: string
  try {
    text = readFileSync(join(key, LOCK_OWNER_FILE), 'utf8')
  } catch {
    return null
  }
  try {
    const value = JSON.parse(text) as Partial<LockOwner>
    if (typeof value.pid !== 'number' || typeof value.host !== 'string' || typeof value.since !== 'string') return null
    return value as LockOwner
  } catch {
    return null
  }
}

/** The owner record, if it describes the lock directory that exists now; null when unknown or no lock. */
async function currentOwner(key: string): Promise<LockOwner | null> {
  let info
  try {
    info = await stat(join(key, LOCK_DIR))
  } catch {
    return null
  }
  const owner = await readOwnerRecord(key)
  if (!owner) return null
  if (owner.lockIno !== undefined && owner.lockIno !== info.ino) return null
  if (owner.lockBirthtimeMs && info.birthtimeMs && owner.lockBirthtimeMs !== info.birthtimeMs) return null
  return owner
}

/** Read-only: who holds the lock of this tree now (null when free or unknown). */
export async function readLockOwner(root: string): Promise<LockOwner | null> {
  try {
    return await currentOwner(await realpath(nexusDir(root)))
  } catch {
    return null
  }
}

function sameOwner(a: LockOwner, b: LockOwner): boolean {
  return a.pid === b.pid && a.host === b.host && a.since === b.since && a.lockIno === b.lockIno
}

function isDeadHere(owner: LockOwner): boolean {
  return owner.host === hostname() && owner.pid !== process.pid && !pidAlive(owner.pid)
}

/**
 * A holder writes its record within milliseconds of creating the lock directory: a directory older than this with
 * no record of its own was left by a process killed in between, and is taken over without waiting the stale window.
 */
const OWNERLESS_GRACE_MS = 2000

/** The lock directory's birth, when the filesystem records one (0 otherwise). */
async function lockBirth(key: string): Promise<{ino: number; birthtimeMs: number} | null> {
  try {
    const info = await stat(join(key, LOCK_DIR))
    return {ino: info.ino, birthtimeMs: info.birthtimeMs}
  } catch {
    return null
  }
}

/** Removes the lock of a holder on this host whose pid is dead, or a lock nobody recorded. True when it did. */
async function reclaimIfDead(key: string): Promise<boolean> {
  const owner = await currentOwner(key)
  const born = owner ? null : await lockBirth(key)
  const ownerless = born !== null && born.birthtimeMs > 0 && Date.now() - born.birthtimeMs > OWNERLESS_GRACE_MS
  if (!ownerless && (!owner || !isDeadHere(owner))) return false
  let release: (() => Promise<void>) | undefined
  try {
    release = await lockfile.lock(join(key, LOCK_RECLAIM_DIR), {
      lockfilePath: join(key, LOCK_RECLAIM_DIR),
      realpath: false,
      retries: 0,
      stale: 2000,
      onCompromised: (error) => debug('reclaim lock compromised: %s', error.message),
    })
  } catch (error) {
    debug('another process is reclaiming the lock (%s)', errorCode(error))
    return false
  }
  try {
    // Check again under the reclaim lock: another waiter may have reclaimed and re-taken it meanwhile.
    const again = await currentOwner(key)
    const bornAgain = owner ? null : await lockBirth(key)
    if (owner ? !again || !sameOwner(again, owner) || !isDeadHere(again) : again !== null || bornAgain?.ino !== born?.ino || bornAgain?.birthtimeMs !== born?.birthtimeMs) return false
    // Record first, directory second: a crash in between leaves an ownerless lock (taken over after
    // OWNERLESS_GRACE_MS), never a record that could be matched against somebody else's lock.
    await rm(join(key, LOCK_OWNER_FILE), {force: true})
    try {
      await rmdir(join(key, LOCK_DIR))
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error
    }
    if (owner) debug('recovered the lock of dead process %d (held since %s)', owner.pid, owner.since)
    else debug('recovered a lock whose holder died before recording itself')
    return true
  } finally {
    await release().catch(() => {})
  }
}

async function configuredTimeout(root: string): Promise<number> {
  try {
    return (await readConfig(root)).sync.lockTimeout
  } catch (error) {
    debug('lock timeout from config unavailable (%s); using %d ms', (error as Error).message, SYNC_SETTINGS_DEFAULTS.lockTimeout)
    return SYNC_SETTINGS_DEFAULTS.lockTimeout
  }
}

/** True when the current async call chain holds the lock of `root` (for assertions in callers). */
export async function isTreeLockHeld(root: string): Promise<boolean> {
  const held = heldHere.getStore()
  if (!held || held.size === 0) return false
  try {
    return held.has(await realpath(nexusDir(root)))
  } catch {
    return false
  }
}

/**
 * Runs `fn` holding the tree lock of `root`, releasing it in every case. Waits up to `timeoutMs` for another
 * holder, then throws LockedError (exit 6). Calling it again for the same tree from inside `fn` is an error
 * (LOCK_REENTRANT): pass the context down instead. Concurrent calls from unrelated code in one process wait
 * for each other like separate processes do.
 */
export async function withTreeLock<T>(root: string, options: TreeLockOptions, fn: (lock: TreeLockContext) => Promise<T>): Promise<T> {
  const key = await lockKey(root)
  const outer = heldHere.getStore()
  if (outer?.has(key)) {
    throw new JarvisError(`withTreeLock: the tree lock of ${root} is already held by this call chain (re-entrant use)`, {
      code: 'LOCK_REENTRANT',
      exit: ExitCode.failed,
      data: {root},
    })
  }
  const timeoutMs = Math.max(0, options.timeoutMs ?? (await configuredTimeout(root)))
  const controller = new AbortController()
  let compromised: unknown
  const deadline = Date.now() + timeoutMs
  let release: () => Promise<void>
  for (;;) {
    try {
      release = await lockfile.lock(key, {
        lockfilePath: join(key, LOCK_DIR),
        realpath: false,
        retries: 0,
        stale: LOCK_STALE_MS,
        onCompromised(error) {
          compromised = error
          debug('tree lock of %s compromised: %s', root, error.message)
          controller.abort(compromisedError(root, error))
        },
      })
      break
    } catch (error) {
      if (errorCode(error) !== 'ELOCKED') throw error
    }
    if (await reclaimIfDead(key)) continue
    const remaining = deadline - Date.now()
    if (remaining <= 0) {
      const holder = await currentOwner(key)
      throw new LockedError(root, holder ? {pid: holder.pid, since: holder.since, host: holder.host} : {})
    }
    await sleep(Math.min(remaining, 25 + Math.floor(Math.random() * 50)))
  }

  let owner: LockOwner
  try {
    const info = statSync(join(key, LOCK_DIR))
    owner = {
      pid: process.pid,
      host: hostname(),
      since: new Date().toISOString(),
      ...(options.command === undefined ? {} : {command: options.command}),
      lockIno: info.ino,
      lockBirthtimeMs: info.birthtimeMs,
    }
    // Not fsynced (two fsyncs less for every command that locks): it matters only while its process lives; after a
    // power cut a lost record leaves an ownerless lock, taken over after OWNERLESS_GRACE_MS like any other.
    await writeFileAtomic(join(key, LOCK_OWNER_FILE), JSON.stringify(owner) + '\n', {durable: false})
  } catch (error) {
    await release().catch(() => {})
    throw error
  }
  debug('tree lock of %s taken (pid %d)', root, process.pid)

  const context: TreeLockContext = {
    root,
    owner,
    signal: controller.signal,
    assertHeld() {
      if (compromised !== undefined) throw compromisedError(root, compromised)
    },
  }
  try {
    const result = await heldHere.run(new Set([...(outer ?? []), key]), () => fn(context))
    if (compromised !== undefined) throw compromisedError(root, compromised)
    return result
  } finally {
    // Our record first (only if it is still ours), then the directory.
    const record = await readOwnerRecord(key)
    if (record && sameOwner(record, owner)) {
      try {
        rmSync(join(key, LOCK_OWNER_FILE), {force: true})
      } catch {
        // The directory's removal below is what frees the lock.
      }
    }
    await release().catch((error: unknown) => debug('tree lock release: %s', errorCode(error) ?? error))
    debug('tree lock of %s released', root)
  }
}

/**
 * For a reader that must not see a merge half done: runs `fn` under the tree lock (withTreeLock), but when this
 * user cannot write the tree at all (no permission, a read-only mount), runs it without: no lock can be taken there,
 * and no writer of this user's can be running. Files are replaced whole, so such a read sees each one old or new.
 */
export async function withTreeLockToRead<T>(root: string, options: TreeLockOptions, fn: () => Promise<T>): Promise<T> {
  try {
    return await withTreeLock(root, options, fn)
  } catch (error) {
    const code = errorCode(error)
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS') throw error
    debug('tree %s cannot be written (%s): read without the lock', root, code)
    return fn()
  }
}
