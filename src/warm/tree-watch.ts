/**
 * What lets a warm server answer as if it had just scanned the tree, without scanning it: the changes under
 * `.memory/` reported to the search index (search/index.ts watchSearchIndex), and a way to be sure every change
 * made before a request has been reported — git fsmonitor's "cookie".
 *
 * Why this is enough (Linux, inotify): Node's `fs.watch` on a folder is one inotify watch on libuv's single
 * inotify descriptor of the event loop. The kernel queues the events of all watches of one descriptor in one
 * queue, in the order the changes happened; libuv reads that queue in order and calls each watcher's callback
 * synchronously, and the callbacks below mark the changed path synchronously (no stat, no timer in between,
 * unlike chokidar, which stats and throttles before it reports). So when a request comes, the server creates a
 * cookie file in a watched folder of `.nexus/` (nothing syncs or indexes it) and answers only once the cookie's own
 * event arrived: every change the client made before it sent the request happened before the cookie was created,
 * so its event was delivered, and its path marked, before the cookie's.
 *
 * - A folder created or removed under `.memory/`: a full rescan at the next request (its files are not reported
 *   one by one), and the new folder is watched at once, before that rescan reads it.
 * - A watch that cannot be set (ENOSPC: the user's inotify watches are used up; EMFILE), a watcher error, an event
 *   without a name, or a cookie that does not come back in time: every request rescans the whole tree. Slower,
 *   never a wrong answer.
 * - Elsewhere than Linux the order is not guaranteed (macOS FSEvents batches and coalesces), and on a filesystem
 *   changed by other hands than this kernel's (NFS, SMB, 9p/drvfs under WSL, FUSE, a VM's shared folder) inotify
 *   sees nothing of those: every request rescans (the index open and the modules loaded still spare most of a
 *   cold call's time).
 * - `.memory/` itself replaced (moved away, another put in its place) or gone: found at the next request, watched
 *   afresh, a full rescan.
 * - An inotify queue overflow (16,384 events queued while the server was busy), which libuv drops without a word:
 *   told by its burst (changes.ts overflowBurst), a full rescan.
 *
 * Besides the search index, every change goes to the journal of changes (changes.ts) that `jarvis sync` asks
 * through `changes`: where the index rescans, the journal answers `all` to every clock given before.
 */
import {type FSWatcher, lstatSync, mkdirSync, readdirSync, rmSync, statfsSync, watch, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'

import createDebug from 'debug'

import {type RefreshStats, type SearchIndexWatch, watchSearchIndex} from '../search/index.js'
import {isIgnoredMemoryPath, isTempName} from '../store/paths.js'
import {memoryDir, memoryIdentity, nexusDir} from '../store/root.js'
import {type ChangesAnswer, ChangeJournal, overflowBurst} from './changes.js'

const debug = createDebug('jarvis:warm')

/** The folder of `.nexus/` where cookies are made and removed, a folder per watch (`<pid>.<n>`) in it. */
export const COOKIE_DIR = 'warm-cookies'
/** The watches this process started: each one's cookie folder has its number. */
let watches = 0
/** How long a request waits for its cookie before it settles for a full rescan. */
export const COOKIE_TIMEOUT_MS = 500

export interface FreshTree {
  /**
   * Brings the search index up to date with every change made under `.memory/` before this call (the watched
   * paths only, or everything when the watch cannot vouch for them). Each search in this process does it too.
   */
  settle(): Promise<RefreshStats>
  /** Whether the watch vouches for the order of events (false: every `settle()` rescans). */
  ordered(): boolean
  /**
   * The files of `.memory/` changed since `clock` (changes.ts), once every change made before this call was reported
   * (the cookie); `all` when the watch cannot vouch for that.
   */
  changes(clock: string | undefined): Promise<ChangesAnswer>
  close(): Promise<void>
}

/** True for a path under `.memory/` no answer depends on: conflict backups and atomic-write temp files. */
function ignored(rel: string): boolean {
  return rel.slice(rel.lastIndexOf('/') + 1).includes('.jarvis-tmp-') || isIgnoredMemoryPath(rel)
}

/**
 * The filesystems (statfs magic numbers, Linux) whose every change inotify reports: local ones, where each change
 * goes through this kernel. A network or shared one (NFS, SMB, 9p and drvfs under WSL, FUSE, virtiofs, a VM's shared
 * folder) changes under another machine's or the host's hands, unseen: there every request rescans.
 */
const LOCAL_FILESYSTEMS: ReadonlySet<number> = new Set([
  0xef53, // ext2, ext3, ext4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x01021994, // tmpfs
  0x858458f6, // ramfs
  0x794c7630, // overlayfs (containers)
  0xf2f52010, // f2fs
  0x2fc12fc1, // zfs
  0xca451a4e, // bcachefs
])

/** Whether the folder at `path` lies on a filesystem whose changes this kernel sees all of (see LOCAL_FILESYSTEMS). */
export function changesAllSeen(path: string): boolean {
  try {
    return LOCAL_FILESYSTEMS.has(statfsSync(path).type >>> 0)
  } catch {
    return false
  }
}

export function watchTreeFresh(root: string, options: {ordered?: boolean; cookieTimeoutMs?: number; overflowBurst?: number} = {}): FreshTree {
  // Every search of the tree in this process waits for a cookie first (a request's, the MCP session's own).
  const searchIndex: SearchIndexWatch = watchSearchIndex(root, {settle: () => cookie()})
  // What changed goes to the search index and to the journal of changes (the clocks `jarvis sync` asks with).
  const journal = new ChangeJournal()
  const index = {
    changed(rel: string) {
      searchIndex.changed(rel)
      journal.change(rel)
    },
    rescan(reason = 'a folder was added, removed or moved') {
      searchIndex.rescan()
      journal.lose(reason)
    },
  }
  // Events delivered in one read of the inotify queue (see overflowBurst): as many as an overflowed queue holds is a loss.
  const burstLimit = options.overflowBurst ?? overflowBurst()
  let burst = 0
  const memory = memoryDir(root)
  // A folder of its own: another watch of the tree (a sync --watch and an MCP session) never touches it.
  const cookies = join(nexusDir(root), COOKIE_DIR, `${process.pid}.${++watches}`)
  const cookieTimeoutMs = options.cookieTimeoutMs ?? COOKIE_TIMEOUT_MS
  let ordered = options.ordered ?? (process.platform === 'linux' && changesAllSeen(memory))
  // `.memory/` itself as first watched: one put in its place (moved, cloned, restored) is not the one the watches follow.
  let memoryId = memoryIdentity(root)
  const folders = new Map<string, FSWatcher>()
  const waiting = new Map<string, () => void>()
  let cookieWatcher: FSWatcher | undefined
  let cookieCount = 0

  /** From now on, every request rescans. */
  function unordered(reason: string): void {
    if (ordered) debug('every request rescans the tree: %s', reason)
    ordered = false
    index.rescan(reason)
  }

  function watchFolder(rel: string): void {
    if (!ordered || folders.has(rel)) return
    const full = rel === '' ? memory : join(memory, ...rel.split('/'))
    // A folder mounted from elsewhere (a network share under `.memory/`): its changes may never be reported.
    if (rel !== '' && !changesAllSeen(full)) {
      if (lstatSync(full, {throwIfNoEntry: false})?.isDirectory()) unordered(`${full} is on a filesystem whose changes are not all reported`)
      return
    }
    let watcher: FSWatcher
    try {
      watcher = watch(full, {persistent: false}, (event, name) => onEvent(rel, event, name))
    } catch (error) {
      // ENOENT: the folder went away meanwhile (its removal is reported to its parent); anything else (ENOSPC).
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') unordered(`cannot watch ${full}: ${(error as Error).message}`)
      return
    }
    watcher.on('error', (error) => unordered(`watcher of ${full}: ${error.message}`))
    folders.set(rel, watcher)
    let entries
    try {
      entries = readdirSync(full, {withFileTypes: true})
    } catch {
      return
    }
    for (const entry of entries) if (entry.isDirectory()) watchFolder(rel === '' ? entry.name : `${rel}/${entry.name}`)
  }

  /**
   * A folder that appeared under a name (made, or moved in, maybe over another one): watched, and each file in it
   * marked changed. The rescan alone can miss them: a folder moved over one of the same mtime (file times come from a
   * coarse clock) looks unchanged to the scan's folder hints.
   */
  function arrived(rel: string): void {
    watchFolder(rel)
    const walk = (folder: string) => {
      let entries
      try {
        entries = readdirSync(join(memory, ...folder.split('/')), {withFileTypes: true})
      } catch {
        return
      }
      for (const entry of entries) {
        const path = `${folder}/${entry.name}`
        if (entry.isDirectory()) walk(path)
        else if (!ignored(path)) index.changed(path)
      }
    }
    walk(rel)
  }

  function unwatchFolder(rel: string): void {
    for (const [folder, watcher] of folders) {
      if (folder !== rel && !folder.startsWith(`${rel}/`)) continue
      watcher.close()
      folders.delete(folder)
    }
  }

  /** Synchronous from libuv's callback to the mark: what makes the cookie a proof (see above). */
  function onEvent(folder: string, event: string, name: string | Buffer | null): void {
    if (burst++ === 0) setImmediate(() => (burst = 0))
    if (burst === burstLimit) index.rescan('the inotify queue may have overflowed')
    if (name === null) return index.rescan('an event without a name')
    const rel = folder === '' ? String(name) : `${folder}/${String(name)}`
    // The journal hears of every name but jarvis's own temp files, whatever the search index ignores: a conflict
    // backup (a sync reports the ones waiting), a file whose name only looks like a temp file's (the scan counts it).
    if (ignored(rel)) return isTempName(String(name)) ? undefined : journal.change(rel)
    if (event === 'change') return index.changed(rel)
    // 'rename': created, removed or moved, a file or a folder.
    const info = lstatSync(join(memory, ...rel.split('/')), {throwIfNoEntry: false})
    if (folders.has(rel)) {
      // A folder watched already: removed or moved away, or another one now has its name (moved over it, made again).
      // Watched afresh if one is there: the old watch follows the old folder, and an edit in the new one would go
      // unseen.
      unwatchFolder(rel)
      if (info?.isDirectory()) arrived(rel)
      return index.rescan()
    }
    if (info?.isDirectory()) {
      arrived(rel)
      return index.rescan()
    }
    index.changed(rel)
  }

  function onCookie(name: string | Buffer | null): void {
    const resolve = name === null ? undefined : waiting.get(String(name))
    if (resolve) resolve()
  }

  // Cookies left by processes that were killed are removed; then this process's folder is watched.
  try {
    removeDeadCookies(dirname(cookies))
    mkdirSync(cookies, {recursive: true})
    cookieWatcher = watch(cookies, {persistent: false}, (_event, name) => onCookie(name))
    cookieWatcher.on('error', (error) => unordered(`cookie watcher: ${error.message}`))
  } catch (error) {
    unordered(`cannot watch ${cookies}: ${(error as Error).message}`)
  }
  watchFolder('')

  /**
   * A `.memory/` put in the place of the watched one: watched afresh, and everything counts as changed (the search
   * index and the journal rescan). Checked at every request, before its cookie: the watches would go on following
   * the old folder, and answer for it.
   */
  function checkReplaced(): string | undefined {
    const id = memoryIdentity(root)
    if (id === memoryId) return id
    for (const watcher of folders.values()) watcher.close()
    folders.clear()
    memoryId = id
    if (id !== undefined && !changesAllSeen(memory)) unordered(`${memory} is on a filesystem whose changes are not all reported`)
    else if (id !== undefined) watchFolder('')
    index.rescan(id === undefined ? '.memory/ is gone' : '.memory/ was replaced')
    return id
  }

  /** Resolves once every change made before the call has been marked; false when that cannot be known. */
  async function cookie(): Promise<boolean> {
    checkReplaced()
    if (!ordered) return false
    const name = String(++cookieCount)
    const file = join(cookies, name)
    let timer: NodeJS.Timeout | undefined
    const seen = new Promise<boolean>((resolve) => {
      waiting.set(name, () => resolve(true))
      timer = setTimeout(() => resolve(false), cookieTimeoutMs)
    })
    try {
      writeFileSync(file, '')
      if (await seen) return true
      debug('cookie %s not seen within %d ms: this search rescans the tree', file, cookieTimeoutMs)
      return false
    } catch (error) {
      debug('cookie %s not made (%s): this search rescans the tree', file, (error as Error).message)
      return false
    } finally {
      clearTimeout(timer)
      waiting.delete(name)
      rmSync(file, {force: true})
    }
  }

  return {
    settle: () => searchIndex.refresh(),
    ordered: () => ordered,
    async changes(clock) {
      // No clock before a replacement is answered (checkReplaced); the cookie then: every change made before this
      // request is in the journal.
      const id = checkReplaced()
      if (id === undefined) journal.lose('.memory/ is gone')
      else if (!(await cookie())) journal.lose(ordered ? 'a cookie did not come back in time' : 'this watch cannot vouch for the order of events')
      return journal.since(clock)
    },
    async close() {
      for (const watcher of folders.values()) watcher.close()
      folders.clear()
      cookieWatcher?.close()
      rmSync(cookies, {recursive: true, force: true})
      await searchIndex.stop()
    },
  }
}

/** The cookie folders of processes that no longer run (a server killed before it could remove its own). */
function removeDeadCookies(folder: string): void {
  let names: string[]
  try {
    names = readdirSync(folder)
  } catch {
    return
  }
  for (const name of names) {
    const pid = /^(\d+)\.\d+$/.exec(name)?.[1]
    if (pid === undefined || !isRunning(Number(pid))) rmSync(join(folder, name), {recursive: true, force: true})
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
