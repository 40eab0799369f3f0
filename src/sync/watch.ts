/**
 * `jarvis sync --watch`: keeps one tree in sync until stopped.
 *
 * - A file watcher (chokidar) on `.memory/` batches local changes: a batch is flushed after a 10 ms quiet
 *   window or at 50 changes (seed 003 §7.2). Backups (`*.local.bak`) and atomic-write temp files are ignored.
 * - The `/ws/memory` subscription (`protocol/subscribe.ts`: heartbeat, partition after 15 s of silence, reconnect
 *   with backoff) turns `MEM_UPDATE` / `STATE_CHANGED` into a sync. A declared partition is audited
 *   (`partition`, seed 003 §6); every reconnect is audited (`reconnect`) and followed by a full resync.
 * - A server with only the protocol's fields (timestamp mode) may have no `/ws/memory` and broadcasts nothing: while
 *   no subscription is up, a sync in that mode is followed by another one `reconnectMaxMs` later (a poll).
 * - Every sync is the one-shot `runSync` under the tree lock. One sync at a time per process: triggers that
 *   arrive while a sync runs are coalesced into one more sync after it. A trigger that is only the echo of
 *   what a sync just wrote (a pulled file whose content is its recorded base, a broadcast of a revision the
 *   tree already has) starts no sync, so a sync never feeds itself; a sync with nothing to do writes nothing
 *   into `.memory/` either.
 */
import {watch as fsWatch, type FSWatcher as FolderWatcher} from 'node:fs'
import {relative, sep} from 'node:path'

import {watch, type FSWatcher} from 'chokidar'
import createDebug from 'debug'

import {LockedError, UnreachableError} from '../errors.js'
import type {MemoryClient} from '../protocol/client.js'
import {HEARTBEAT_MS, PARTITION_MS, RECONNECT_INITIAL_MS, RECONNECT_MAX_MS, subscribe, wsUrlFor, type Subscription, type SubscriptionEvent} from '../protocol/subscribe.js'
import type {SyncSettings, WsMessage} from '../schemas/index.js'
import {appendAudit, hashText, isIgnoredMemoryPath, MEMORY_DIR, memoryDir, memoryIdentity, readMemoryFile, readSyncState, type TreeWatch, withTreeLock, type AuditInput} from '../store/index.js'
import {runSync, type SyncResult} from './run.js'

const debug = createDebug('jarvis:watch')

/** Seed 003 §7.2. */
export const BATCH_WINDOW_MS = 10
export const MAX_BATCH_SIZE = 50
export {HEARTBEAT_MS, PARTITION_MS, RECONNECT_INITIAL_MS, RECONNECT_MAX_MS, wsUrlFor}
/** How soon a sync that found the tree locked by another process is tried again. */
export const LOCKED_RETRY_MS = 1000

/** Why a sync ran. */
export type Trigger =
  | {kind: 'start'}
  | {kind: 'subscribed'}
  | {kind: 'reconnect'}
  | {kind: 'retry'}
  /** Timestamp mode without a subscription: asking the server what changed, as nothing tells us. */
  | {kind: 'poll'}
  /** `.memory/` itself was put in the place of the watched one: any file may have changed. */
  | {kind: 'replaced'}
  | {kind: 'local'; path: string; event: 'add' | 'change' | 'unlink'}
  | {kind: 'remote'; type: 'MEM_UPDATE' | 'STATE_CHANGED'; path?: string; rev?: number}

export interface SyncInfo {
  /** 1 for the first sync of this watch. */
  n: number
  /** A full resync (after a reconnect): the whole server listing, not only the changes since the last seq. */
  full: boolean
  /** Short descriptions of the triggers this sync answers, e.g. `local:change:notes.md`, `remote:MEM_UPDATE:x.md`. */
  reasons: string[]
}

export type WatchEvent =
  | {type: 'connected'; url: string; reconnect: boolean}
  | {type: 'disconnected'; code: number; reason: string}
  | {type: 'partition'; silentMs: number}

export interface WatchOptions {
  root: string
  /** Closed by `stop()`. */
  client: MemoryClient
  settings: SyncSettings
  /** Bearer token for the WebSocket upgrade (the HTTP client has its own). */
  token?: string
  /** Default: the client's server with http→ws and `/ws/memory`. */
  wsUrl?: string
  /** Called after each successful sync. */
  onSync?: (result: SyncResult, info: SyncInfo) => void
  /** Asked by each sync which files changed (see SyncOptions' `watch`). */
  watch?: TreeWatch
  /** Called when a sync fails; the watch goes on (an offline server is retried when the socket reconnects). */
  onError?: (error: unknown, info: SyncInfo) => void
  /** Connection changes, for the human output. */
  onEvent?: (event: WatchEvent) => void
  /** Timings, overridable for tests; defaults are the seed's. */
  batchWindowMs?: number
  maxBatchSize?: number
  heartbeatMs?: number
  partitionMs?: number
  reconnectInitialMs?: number
  reconnectMaxMs?: number
  lockedRetryMs?: number
}

export interface WatchStats {
  syncs: number
  failures: number
  skipped: number
  reconnects: number
  partitions: number
  connected: boolean
}

export interface WatchHandle {
  /** Resolves once the file watcher is ready, the first sync has run (or failed) and the first connection attempt settled. */
  ready: Promise<void>
  /** Closes the watcher, the WebSocket and the client; waits for a sync in flight. Idempotent. */
  stop(): Promise<void>
  stats(): WatchStats
}

/** True for a path under `.memory/` the watch never reacts to: conflict backups and atomic-write temp files. */
export function isWatchIgnored(rel: string): boolean {
  const name = rel.slice(rel.lastIndexOf('/') + 1)
  return name.includes('.jarvis-tmp-') || isIgnoredMemoryPath(rel)
}

function describe(trigger: Trigger): string {
  switch (trigger.kind) {
    case 'local':
      return `local:${trigger.event}:${trigger.path}`
    case 'remote':
      return `remote:${trigger.type}${trigger.path ? `:${trigger.path}` : ''}`
    default:
      return trigger.kind
  }
}

export function startWatch(options: WatchOptions): WatchHandle {
  const {root, client, settings} = options
  const batchWindowMs = options.batchWindowMs ?? BATCH_WINDOW_MS
  const maxBatchSize = options.maxBatchSize ?? MAX_BATCH_SIZE
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS
  const partitionMs = options.partitionMs ?? PARTITION_MS
  const reconnectInitialMs = options.reconnectInitialMs ?? RECONNECT_INITIAL_MS
  const reconnectMaxMs = options.reconnectMaxMs ?? RECONNECT_MAX_MS
  const lockedRetryMs = options.lockedRetryMs ?? LOCKED_RETRY_MS
  const wsUrl = options.wsUrl ?? wsUrlFor(client.server)
  const memory = memoryDir(root)

  const stats: Omit<WatchStats, 'connected'> = {syncs: 0, failures: 0, skipped: 0, reconnects: 0, partitions: 0}
  let stopped = false
  let subscription: Subscription | undefined
  const connected = () => subscription?.connected() ?? false

  // ---- one job at a time: syncs and audit appends share the tree lock, taken once per job ----------------
  let chain: Promise<unknown> = Promise.resolve()
  function exclusive<T>(job: () => Promise<T>): Promise<T> {
    const next = chain.then(job)
    chain = next.catch(() => undefined)
    return next
  }
  const lockOptions = {timeoutMs: settings.lockTimeout, command: 'jarvis sync --watch'}

  /** Audit entries waiting for the lock; written by the next job that holds it. */
  const pendingAudits: AuditInput[] = []
  async function writePendingAudits(): Promise<void> {
    while (pendingAudits.length > 0) {
      await appendAudit(root, pendingAudits[0])
      pendingAudits.shift()
    }
  }
  function audit(entry: AuditInput): void {
    pendingAudits.push({at: new Date().toISOString(), ...entry})
    exclusive(() => withTreeLock(root, lockOptions, writePendingAudits)).catch((error: unknown) => {
      debug('audit %s deferred to the next sync: %s', entry.type, (error as Error).message)
    })
  }

  // ---- the sync loop: one sync at a time, triggers coalesced ----------------------------------------------
  let triggers: Trigger[] = []
  let fullRequested = false
  let running: Promise<void> | undefined
  let firstSyncDone: () => void = () => {}
  const firstSync = new Promise<void>((resolve) => (firstSyncDone = resolve))
  let retryTimer: NodeJS.Timeout | undefined

  function request(trigger: Trigger | Trigger[], full = false): void {
    if (stopped) return
    triggers.push(...(Array.isArray(trigger) ? trigger : [trigger]))
    if (full) fullRequested = true
    if (!running) running = loop()
  }

  async function loop(): Promise<void> {
    for (;;) {
      // Checked and cleared in the same tick as `request` tests `running`: no trigger is ever stranded.
      if (stopped || triggers.length === 0) {
        running = undefined
        return
      }
      const batch = triggers
      triggers = []
      const full = fullRequested
      fullRequested = false
      const info: SyncInfo = {n: stats.syncs + stats.failures + 1, full, reasons: [...new Set(batch.map(describe))]}
      if (!full && (await onlyEchoes(batch))) {
        stats.skipped++
        debug('skipped a sync: %o are echoes of what the tree already has', info.reasons)
        firstSyncDone()
        continue
      }
      debug('sync #%d (%s): %o', info.n, full ? 'full' : 'incremental', info.reasons)
      try {
        const result = await exclusive(() =>
          withTreeLock(root, lockOptions, async () => {
            await writePendingAudits()
            return runSync({root, client, settings: full ? {...settings, incrementalSync: false} : settings, watch: options.watch})
          }),
        )
        stats.syncs++
        if (result.mode === 'timestamp' && !connected() && triggers.length === 0 && !stopped) {
          clearTimeout(retryTimer)
          retryTimer = setTimeout(() => request({kind: 'poll'}), reconnectMaxMs)
        }
        options.onSync?.(result, info)
      } catch (error) {
        stats.failures++
        if (error instanceof LockedError) {
          // Another process (a git hook, a one-shot sync) is syncing: try again shortly.
          clearTimeout(retryTimer)
          retryTimer = setTimeout(() => request({kind: 'retry'}, full), lockedRetryMs)
        } else if (error instanceof UnreachableError) {
          if (full) fullRequested = true // the reconnect resync is still owed
          // With the socket down, the reconnect brings the next sync. With it up (the HTTP side failed, e.g. 503),
          // nothing else would: try again later, so that a local edit does not wait for the next trigger.
          if (connected()) {
            clearTimeout(retryTimer)
            retryTimer = setTimeout(() => request({kind: 'retry'}), reconnectMaxMs)
          }
        }
        options.onError?.(error, info)
      }
      firstSyncDone()
    }
  }

  /** True when no trigger of the batch needs a sync: each is what the last sync itself wrote or recorded. */
  async function onlyEchoes(batch: Trigger[]): Promise<boolean> {
    if (!batch.every((t) => t.kind === 'local' || (t.kind === 'remote' && t.type === 'MEM_UPDATE' && t.path !== undefined && t.rev !== undefined))) return false
    let state
    try {
      state = await readSyncState(root)
    } catch (error) {
      debug('sync state unreadable (%s): syncing', (error as Error).message)
      return false
    }
    for (const trigger of batch) {
      if (trigger.kind === 'local') {
        const text = await readMemoryFile(root, trigger.path).catch(() => undefined)
        if (text === undefined) return false
        const recorded = state.files[trigger.path]?.hash
        if (text === null ? recorded !== undefined : recorded !== hashText(text)) return false
      } else if (trigger.kind === 'remote') {
        const recorded = state.files[trigger.path!]?.rev
        if (state.server !== client.server || recorded === undefined || recorded < trigger.rev!) return false
      }
    }
    return true
  }

  // ---- the file watcher, batched -------------------------------------------------------------------------
  const changed = new Map<string, 'add' | 'change' | 'unlink'>()
  let batchTimer: NodeJS.Timeout | undefined
  function flushLocal(): void {
    clearTimeout(batchTimer)
    batchTimer = undefined
    if (changed.size === 0) return
    const batch = [...changed]
    changed.clear()
    debug('local batch of %d change(s)', batch.length)
    request(batch.map(([path, event]) => ({kind: 'local', path, event})))
  }
  function onFileEvent(event: string, absolute: string): void {
    if (stopped || (event !== 'add' && event !== 'change' && event !== 'unlink')) return
    const rel = relative(memory, absolute).split(sep).join('/')
    if (rel === '' || rel.startsWith('..') || isWatchIgnored(rel)) return
    changed.set(rel, event)
    if (changed.size >= maxBatchSize) flushLocal()
    else {
      clearTimeout(batchTimer)
      batchTimer = setTimeout(flushLocal, batchWindowMs)
    }
  }

  let watcher: FSWatcher | undefined
  async function watchMemory(): Promise<void> {
    const started = watch(memory, {
      ignoreInitial: true,
      ignored: (path: string) => {
        const rel = relative(memory, path).split(sep).join('/')
        return rel !== '' && isWatchIgnored(rel)
      },
    })
    watcher = started
    started.on('all', onFileEvent)
    started.on('error', (error) => debug('watcher error: %s', (error as Error).message))
    await new Promise<void>((resolve) => started.once('ready', () => resolve()))
  }

  // `.memory/` put in the place of the watched one (moved away and restored, a checkout that replaced it, a symlink
  // pointed elsewhere): the file watcher follows the old folder, so it starts again on the new one, and a sync looks
  // at every file. The tree's own folder is watched for that, without recursion: one inotify watch.
  let memoryId = memoryIdentity(root)
  let treeWatcher: FolderWatcher | undefined
  let rewatching: Promise<void> = Promise.resolve()
  function onTreeEvent(name: string | Buffer | null): void {
    if (stopped || (name !== null && String(name) !== MEMORY_DIR)) return
    const id = memoryIdentity(root)
    if (id === memoryId) return
    memoryId = id
    debug('.memory/ %s: watching it afresh', id === undefined ? 'is gone' : 'was replaced')
    rewatching = rewatching
      .then(async () => {
        await watcher?.close()
        watcher = undefined
        if (!stopped && id !== undefined) await watchMemory()
      })
      .catch((error: unknown) => debug('cannot watch the new .memory/: %s', (error as Error).message))
      .then(() => request({kind: 'replaced'}))
  }

  // ---- the WebSocket subscription: remote changes, partitions and reconnects ----------------------------------
  function onSubscriptionEvent(event: SubscriptionEvent): void {
    switch (event.type) {
      case 'connected': {
        options.onEvent?.({type: 'connected', url: wsUrl, reconnect: event.reconnect})
        if (event.reconnect || event.partitioned) {
          stats.reconnects++
          pendingAudits.push({at: new Date().toISOString(), type: 'reconnect', server: client.server, partitioned: event.partitioned})
          request({kind: 'reconnect'}, true)
        } else {
          // Anything broadcast before we subscribed is caught by this sync.
          request({kind: 'subscribed'})
        }
        break
      }
      case 'disconnected': {
        options.onEvent?.({type: 'disconnected', code: event.code, reason: event.reason})
        break
      }
      case 'partition': {
        stats.partitions++
        audit({type: 'partition', server: client.server, silentMs: event.silentMs, connected: event.connected})
        options.onEvent?.({type: 'partition', silentMs: event.silentMs})
        break
      }
    }
  }

  function onRemoteMessage(message: WsMessage): void {
    request(message.type === 'MEM_UPDATE' ? {kind: 'remote', type: 'MEM_UPDATE', path: message.path, rev: message.rev} : {kind: 'remote', type: 'STATE_CHANGED'})
  }

  // ---- start and stop -------------------------------------------------------------------------------------
  const ready = (async () => {
    try {
      treeWatcher = fsWatch(root, {persistent: false}, (_event, name) => onTreeEvent(name))
      treeWatcher.on('error', (error) => debug('tree folder watcher error: %s', error.message))
    } catch (error) {
      debug('cannot watch %s for a replaced .memory/: %s', root, (error as Error).message)
    }
    await watchMemory()
    if (stopped) return
    request({kind: 'start'})
    subscription = subscribe({url: wsUrl, token: options.token, heartbeatMs, partitionMs, reconnectInitialMs, reconnectMaxMs, onMessage: onRemoteMessage, onEvent: onSubscriptionEvent})
    await Promise.all([firstSync, subscription.settled])
  })()

  let stopping: Promise<void> | undefined
  async function stop(): Promise<void> {
    stopped = true
    firstSyncDone()
    // Closed at once, not after the awaits below: no connection event may reach the caller once stop() began.
    const unsubscribed = subscription?.close()
    clearTimeout(batchTimer)
    clearTimeout(retryTimer)
    await ready.catch(() => undefined)
    treeWatcher?.close()
    await rewatching
    await watcher?.close()
    await running
    // A partition or reconnect noticed but not yet written: try once more to record it.
    if (pendingAudits.length > 0) await exclusive(() => withTreeLock(root, lockOptions, writePendingAudits)).catch(() => undefined)
    await chain
    await unsubscribed
    await client.close()
    debug('stopped after %d sync(s)', stats.syncs)
  }

  return {
    ready,
    stop() {
      stopping ??= stop()
      return stopping
    },
    stats: () => ({...stats, connected: connected()}),
  }
}
