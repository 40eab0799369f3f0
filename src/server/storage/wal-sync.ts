/**
 * Durability of event-log appends without blocking the event loop.
 *
 * With `synchronous = FULL` in WAL mode, SQLite fsyncs the WAL file at every commit, synchronously: better-sqlite3
 * runs on the main thread, so while the disk flushes, no request is read, parsed or scanned, and every append pays
 * a whole fsync of its own. Event-log commits are instead written with `synchronous = NORMAL`. The commit's frames
 * are then in the WAL file but may still sit in the OS cache. Before any of them is answered, WalSync
 * fdatasyncs the WAL file on libuv's thread pool. The guarantee is the one FULL gives: an acknowledged append is on
 * disk and survives power loss. But the main thread keeps working while the disk flushes, and every commit made
 * meanwhile shares the next flush.
 *
 * Why this is enough: in WAL mode a commit is durable once its WAL frames are on disk. With NORMAL, SQLite itself
 * syncs the WAL before every checkpoint, syncs the database after it, and syncs the WAL header when the file is
 * reused, so only "frames written since the last sync" are at risk, and this fsync covers exactly those. The WAL
 * file keeps its inode while the database is open (it is truncated or reused, never replaced), so one descriptor
 * serves the whole session.
 */
import {closeSync, fdatasync, openSync} from 'node:fs'

export type SyncFn = (fd: number) => Promise<void>

const fdatasyncAsync: SyncFn = (fd) =>
  new Promise((resolve, reject) => {
    fdatasync(fd, (error) => (error ? reject(error) : resolve()))
  })

export class WalSync {
  private readonly fd: number
  private readonly syncFn: SyncFn
  /** The flush in progress, if any. */
  private current: Promise<void> | null = null
  /** A flush queued behind `current`, for writes made after `current` started. */
  private next: Promise<void> | null = null

  /** Opens the WAL file (it must exist: the database is open in WAL mode and has been written to). */
  constructor(walPath: string, syncFn: SyncFn = fdatasyncAsync) {
    // Read-write: some systems (Windows) refuse to flush a read-only handle. Nothing is ever written through it.
    this.fd = openSync(walPath, 'r+')
    this.syncFn = syncFn
  }

  /** Resolves once everything written to the WAL before this call is on disk. */
  sync(): Promise<void> {
    if (this.current === null) return this.begin()
    // The flush in progress may have started before the caller's writes: one more flush after it covers them,
    // and every caller that arrives meanwhile shares it.
    this.next ??= this.current.then(
      () => this.startNext(),
      () => this.startNext(),
    )
    return this.next
  }

  private startNext(): Promise<void> {
    this.next = null
    return this.begin()
  }

  private begin(): Promise<void> {
    const run: Promise<void> = this.syncFn(this.fd).finally(() => {
      if (this.current === run) this.current = null
    })
    this.current = run
    return run
  }

  /** Waits for flushes in progress, then closes the descriptor. */
  async close(): Promise<void> {
    await Promise.allSettled([this.current, this.next])
    closeSync(this.fd)
  }
}
