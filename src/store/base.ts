/**
 * Base copies: the content of every synced file as of its last sync — the base of every three-way merge — kept in
 * one SQLite database, `.nexus/base.sqlite` (path → text). A file per base cost a sync of 10,000 files 10,000 file
 * creations on each machine, the largest part of an initial sync where creating a file is slow (a busy ext4 looks
 * for a free inode past the recently deleted ones); the database takes a batch in one transaction.
 *
 * Not durable on purpose (WAL, `synchronous = NORMAL`: a killed process loses nothing it committed, a power cut may
 * lose the last transactions, never consistency): a base is only trusted when its hash matches the one sync-state
 * recorded, and a missing or torn base means a two-way merge, which never deletes. A database found unusable is
 * made again, empty, for the same reason.
 *
 * An older jarvis kept each base in `.nexus/base/<path>`: those are still read when the database has no row for a
 * path, and removed with it.
 */
import {existsSync} from 'node:fs'
import {join} from 'node:path'

import createDebug from 'debug'

import {readTextIfExists} from './atomic.js'
import {resolveInside} from './inside.js'
import {checkRelativePath} from './paths.js'
import {nexusDir} from './root.js'
import {isSqliteFileError, openNexusRowDatabase, removeNexusSqlite, type RowDatabase, type RowStatement} from './sqlite-open.js'
import {deleteInside} from './tree.js'

const debug = createDebug('jarvis:store')

export const BASE_FILE = 'base.sqlite'
/** Where an older jarvis kept one file per base (`.nexus/base/<path>`). */
export const BASE_DIR = 'base'

export function baseDir(root: string): string {
  return join(nexusDir(root), BASE_DIR)
}

/** Kept texts are written once they exceed this many characters: a batch at a time, bounded memory. */
const FLUSH_CHARS = 1024 * 1024

/**
 * A database file that is not one, or a damaged one: the bases are made again, empty. Only then: a busy database
 * (another process), a full disk or a file it may not open would be gone for good, and each base with it.
 */
const isDamaged = (error: unknown) => isSqliteFileError(error, ['CORRUPT', 'NOTADB'])

/**
 * The base copies of one tree, for one command. `put` and `remove` are kept until `flush`, which writes them in one
 * transaction: a sync flushes before it writes the sync state that names the new bases (file, then base, then
 * state), never before the server acknowledged what they record.
 */
export class BaseStore {
  private db: RowDatabase | undefined
  private statements: {get: RowStatement; put: RowStatement; remove: RowStatement} | undefined
  /** Written since the last flush: a text, or null for a removal. */
  private readonly pending = new Map<string, string | null>()
  private pendingChars = 0
  /** Whether `.nexus/base/` (an older jarvis's bases) exists, asked once. */
  private legacy: boolean | undefined

  constructor(private readonly root: string) {}

  /** The base of `rel`, or null when there is none. The path is checked (PathRefusedError). */
  async get(rel: string): Promise<string | null> {
    const clean = checkRelativePath(rel)
    if (this.pending.has(clean)) return this.pending.get(clean) ?? null
    // A tree that never synced has no database: reading makes none (a command that only looks writes nothing).
    const row = this.hasDatabase() ? this.open().get.get(clean) : undefined
    if (row !== undefined) return row[0] as string
    if (!this.hasLegacy()) return null
    return readTextIfExists(await resolveInside(baseDir(this.root), clean))
  }

  /**
   * Records `text` as the base of `rel` at the next flush — or now, once what is kept exceeds FLUSH_CHARS, so that a
   * sync of a large tree never holds it all (a caller puts a base only once it may be written).
   */
  put(rel: string, text: string | Uint8Array): void {
    const content = typeof text === 'string' ? text : Buffer.from(text).toString('utf8')
    this.pending.set(checkRelativePath(rel), content)
    this.pendingChars += content.length
    if (this.pendingChars > FLUSH_CHARS) this.flush()
  }

  /** Forgets the base of `rel` at the next flush (an older jarvis's file at once); false when there was none. */
  async remove(rel: string): Promise<boolean> {
    const clean = checkRelativePath(rel)
    const had = (await this.get(clean)) !== null
    this.pending.set(clean, null)
    if (this.hasLegacy()) await deleteInside(baseDir(this.root), clean, '.nexus/base')
    return had
  }

  /**
   * Opens the database now, while the caller waits for an answer whose texts it will flush here: only a head start. A
   * failure is left to the flush, which meets it again and reports it.
   */
  openEarly(): void {
    try {
      this.open()
    } catch {
      // See flush.
    }
  }

  /** Writes what `put` and `remove` kept, in one transaction. */
  flush(): void {
    if (this.pending.size === 0) return
    // Removals only, and no database: nothing to remove from.
    if (!this.hasDatabase() && [...this.pending.values()].every((text) => text === null)) {
      this.pending.clear()
      return
    }
    const {put, remove} = this.open()
    const db = this.db!
    db.immediate(() => {
      for (const [path, text] of this.pending) {
        if (text === null) remove.run(path)
        else put.run(path, text)
      }
    })
    this.pending.clear()
    this.pendingChars = 0
  }

  /** Closes the database; what was not flushed is dropped (a base is only ever written after what it records). */
  close(): void {
    this.pending.clear()
    this.pendingChars = 0
    this.db?.close()
    this.db = undefined
    this.statements = undefined
  }

  private hasDatabase(): boolean {
    return this.db !== undefined || existsSync(join(nexusDir(this.root), BASE_FILE))
  }

  private hasLegacy(): boolean {
    return (this.legacy ??= existsSync(baseDir(this.root)))
  }

  private open(): {get: RowStatement; put: RowStatement; remove: RowStatement} {
    if (this.statements) return this.statements
    for (let attempt = 0; ; attempt++) {
      let db: RowDatabase | undefined
      try {
        db = openNexusRowDatabase(this.root, BASE_FILE)
        db.exec('PRAGMA busy_timeout = 5000')
        db.exec('PRAGMA journal_mode = WAL')
        db.exec('PRAGMA synchronous = NORMAL')
        db.exec('CREATE TABLE IF NOT EXISTS bases (path TEXT PRIMARY KEY, text TEXT NOT NULL) WITHOUT ROWID')
        this.statements = {
          get: db.prepare('SELECT text FROM bases WHERE path = ?'),
          put: db.prepare('INSERT OR REPLACE INTO bases (path, text) VALUES (?, ?)'),
          remove: db.prepare('DELETE FROM bases WHERE path = ?'),
        }
        this.db = db
        return this.statements
      } catch (error) {
        db?.close()
        if (attempt > 0 || !isDamaged(error)) throw error
        debug('base copies unusable, starting them again (merges are two-way until the next sync): %s', (error as Error).message)
        removeNexusSqlite(this.root, BASE_FILE)
      }
    }
  }
}

/** Runs `work` with the base store of `root`, flushed and closed after it. */
async function withBases<T>(root: string, work: (bases: BaseStore) => Promise<T> | T): Promise<T> {
  const bases = new BaseStore(root)
  try {
    const result = await work(bases)
    bases.flush()
    return result
  } finally {
    bases.close()
  }
}

export async function readBase(root: string, rel: string): Promise<string | null> {
  return withBases(root, (bases) => bases.get(rel))
}

export async function writeBase(root: string, rel: string, content: string | Uint8Array): Promise<void> {
  await withBases(root, (bases) => bases.put(rel, content))
}

/** Removes a base copy; false when there was none. */
export async function deleteBase(root: string, rel: string): Promise<boolean> {
  return withBases(root, (bases) => bases.remove(rel))
}
