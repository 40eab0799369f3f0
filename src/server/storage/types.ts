/**
 * The storage behind `jarvis serve`, as an interface so that a PostgreSQL backend can follow the
 * embedded SQLite one (docs/decisions/server-stack.md).
 *
 * Every method is async even though better-sqlite3 is synchronous: a networked backend needs it, and
 * the routes must not depend on a write finishing within one tick.
 *
 * Model: a flat map of `.memory/`-relative paths to text files. Each file carries a per-file revision
 * (`rev`, 1 on creation, +1 on every change including deletion, never reset), the sha256 hex of its
 * UTF-8 bytes, `updatedAt` (server time, ISO 8601), the agent that wrote it, and the server-wide change
 * sequence (`seq`) of the commit that last touched it. A deletion leaves a tombstone (`deleted: true`,
 * no content, no hash) whose rev continues the file's history.
 */

/** Metadata of one path, live or tombstone. */
export interface FileMeta {
  path: string
  rev: number
  /** sha256 hex of the content; `null` for a tombstone. */
  hash: string | null
  updatedAt: string
  author: string
  /** The change sequence of the commit that last wrote or deleted this path. */
  seq: number
  deleted: boolean
}

/** One path with its content (`null` for a tombstone). */
export interface FileRecord extends FileMeta {
  content: string | null
}

export interface StatusSnapshot {
  /** The server-wide change sequence: the seq of the newest commit that changed anything (0 when empty). */
  seq: number
  /**
   * Random id of this database, fixed at creation. A client that recorded a different one must not use its
   * `since`: the seqs belong to another history (a wiped or replaced server).
   */
  serverId: string
  /** True when `files` lists every path: no `since`, or a `since` greater than `seq` (which cannot be this history's). */
  full: boolean
  /** Every path (live and tombstones) whose seq is greater than `since`, or all of them (see `full`). */
  files: FileMeta[]
}

/** Expected revision of a path: a number, or `null` / `0` for "I believe it does not exist". */
export type BaseRev = number | null

export interface CommitRequest {
  /** path → new content. Paths are already normalised by `checkRelativePath`. */
  writes: ReadonlyMap<string, string>
  /** Paths to delete (tombstone). A path that is not live is a no-op. */
  deletes: readonly string[]
  /**
   * Optimistic concurrency: for each path of `writes`/`deletes` that has an entry here, the expected
   * current revision. A path without an entry is written unconditionally (last writer wins).
   */
  base: ReadonlyMap<string, BaseRev>
  /**
   * When set, the commit is done at most once: a second commit with the same key changes nothing and
   * answers `{ok: true, duplicate: true}`. Used by sync-task (`sync-task:<agent>:<taskId>`).
   */
  idempotencyKey?: string
}

export interface CommitResult {
  ok: true
  /** The server seq after this commit (unchanged when the commit changed nothing). */
  seq: number
  /** True when nothing was written because `idempotencyKey` had already been committed. */
  duplicate: boolean
  /** Paths written by this commit, with their new metadata. */
  written: FileMeta[]
  /** Paths turned into tombstones by this commit. */
  deleted: FileMeta[]
  /** Writes whose content equalled the live content, and deletes of a tombstone: nothing changed. */
  unchanged: FileMeta[]
  /** Deletes of a path the server has never seen: nothing changed. */
  unknown: string[]
}

export interface CommitStale {
  ok: false
  /** Paths whose `base` did not match, sorted. Nothing was written. */
  stale: string[]
}

export type CommitOutcome = CommitResult | CommitStale

export interface MemoryStorage {
  /** Metadata of every path changed after `since` (all paths without it), with the current seq, read consistently. */
  status(since?: number): Promise<StatusSnapshot>
  /** The records of the given paths; a path the server has never seen is absent from the map. */
  read(paths: readonly string[]): Promise<Map<string, FileRecord>>
  /**
   * Applies writes and deletes as ONE transaction: every base matches and all of it is stored, with one
   * new seq shared by every changed path, or nothing is stored.
   *
   * Base rule for a path with a base entry `b`:
   * - live at rev r: matches when b === r; a write of content identical to the live content always
   *   matches (both sides already agree) and changes nothing;
   * - tombstone at rev r: matches when b === r, null or 0; deleting a tombstone always matches (no-op);
   * - never seen: matches when b is null or 0; deleting it is a no-op.
   */
  commit(request: CommitRequest, author: string, now: string): Promise<CommitOutcome>
  /** The current server-wide change sequence (cheap: no file list). */
  seq(): Promise<number>
  /** Whether an idempotency key has been committed. */
  hasCommitted(idempotencyKey: string): Promise<boolean>
  /** Closes the backend; the instance is unusable afterwards. Idempotent. */
  close(): Promise<void>
}
