/**
 * Base copies: the content of every synced file as of its last sync — the base of every three-way merge — kept in
 * one SQLite database, `.nexus/base.sqlite` (path → text). A file per base cost a sync of 10,000 files 10,000 file
 * creations on each machine, the largest part of an initial sync where creating a file is slow (a busy ext4 looks
 * for a free inode past the recently deleted ones); the database takes a batch in one transaction.
 *
 * Not durable on purpose (WAL, `synchronous = NORMAL`: a killed process loses nothing it committed, a power cut may
 * lose the last transactions, never consistency): every base ever written is a text the server held and the file
 * held, so one lost leaves an older base (still one both sides held), or none: a two-way merge, which never deletes.
 * A database found unusable is made again, empty, for the same reason.
 *
 * A flush of a few small bases (a sync of a few files) is appended to `.nexus/base.journal` instead, one JSON line per
 * path (`{"p": path, "t": text}`, `"t": null` for a removal): loading SQLite's native module, opening the database
 * and its checkpoint at close cost more than the whole of such a sync's other writes (docs/decisions/sync-writes.md).
 * The journal's lines stand before the database's rows; the first flush that goes to the database (many or large
 * bases, or a journal grown past JOURNAL_MAX_BYTES) writes the journal's entries first and then removes it. The
 * journal is not durable either, and needs no more: a line lost, torn or left by a kill after its fold only gives an
 * older base, whether the sync state records its hash or not, never a text that was no base.
 *
 * An older jarvis kept each base in `.nexus/base/<path>`: those are still read when the database has no row for a
 * path, and removed with it.
 *
 * Beside the bases, under keys no path can be (`path` NUL `hash`), the texts of pushes not answered yet (putSent):
 * what the next merge needs to tell whether the server took ours (src/merge/own-write.ts). Kept the same way, flushed
 * with the bases before the sync state that names their hashes, and as little trusted: a text is used only when its
 * hash is one the state awaits.
 */
import {appendFileSync, existsSync, readFileSync, rmSync} from 'node:fs'
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
/** The bases of the latest small flushes, before the database's rows (see above). */
export const BASE_JOURNAL_FILE = 'base.journal'
/** A flush of at most this many characters of bases, and this many paths, is appended to the journal. */
export const JOURNAL_FLUSH_CHARS = 256 * 1024
const JOURNAL_FLUSH_PATHS = 256
/** The journal is folded into the database by the first flush that would take it past this many bytes. */
export const JOURNAL_MAX_BYTES = 1024 * 1024

/** The journal as read: each path's last entry (null: removed), its size, and whether every line was whole JSON. */
interface Journal {
  entries: Map<string, string | null>
  bytes: number
  whole: boolean
}
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
  /** Written since the last flush, by path (or sentKey): a text, or null for a removal. */
  private readonly pending = new Map<string, string | null>()
  private pendingChars = 0
  /** Whether `.nexus/base/` (an older jarvis's bases) exists, asked once. */
  private legacy: boolean | undefined
  /** `.nexus/base.journal`, read at its first use. */
  private journal: Journal | undefined

  constructor(private readonly root: string) {}

  /** The base of `rel`, or null when there is none. The path is checked (PathRefusedError). */
  async get(rel: string): Promise<string | null> {
    const clean = checkRelativePath(rel)
    const stored = this.lookup(clean)
    if (stored !== undefined || !this.hasLegacy()) return stored ?? null
    return readTextIfExists(await resolveInside(baseDir(this.root), clean))
  }

  /**
   * A text of `rel` (its hash `hash`) a sync sent and has not heard back about: kept beside the bases, at the next
   * flush, until `forgetSent`. Not a base: what the server may hold (src/merge/own-write.ts decides).
   */
  putSent(rel: string, hash: string, text: string): void {
    this.keep(sentKey(checkRelativePath(rel), hash), text)
  }

  /** The text `putSent` kept for `rel` and `hash`, or null. */
  async getSent(rel: string, hash: string): Promise<string | null> {
    return this.lookup(sentKey(checkRelativePath(rel), hash)) ?? null
  }

  /** Forgets the sent texts of `rel` with these hashes, at the next flush. */
  forgetSent(rel: string, hashes: readonly string[]): void {
    const clean = checkRelativePath(rel)
    for (const hash of hashes) this.pending.set(sentKey(clean, hash), null)
  }

  /** What the pending writes, the journal or the database hold under `key`: undefined when none of them knows it. */
  private lookup(key: string): string | null | undefined {
    if (this.pending.has(key)) return this.pending.get(key) ?? null
    const journal = this.readJournal()
    if (journal.entries.has(key)) return journal.entries.get(key) ?? null
    // A tree that never synced has no database: reading makes none (a command that only looks writes nothing).
    const row = this.hasDatabase() ? this.open().get.get(key) : undefined
    return row === undefined ? undefined : (row[0] as string)
  }

  /**
   * Records `text` as the base of `rel` at the next flush — or now, once what is kept exceeds FLUSH_CHARS, so that a
   * sync of a large tree never holds it all (a caller puts a base only once it may be written).
   */
  put(rel: string, text: string | Uint8Array): void {
    this.keep(checkRelativePath(rel), typeof text === 'string' ? text : Buffer.from(text).toString('utf8'))
  }

  private keep(key: string, content: string): void {
    this.pending.set(key, content)
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
   * failure is left to the flush, which meets it again and reports it. Not when the flush of `expected` (paths, and
   * characters when known) will go to the journal.
   */
  openEarly(expected?: {paths: number; chars?: number}): void {
    if (expected !== undefined && this.journalTakes(this.pending.size + expected.paths, this.pendingChars + (expected.chars ?? 0))) return
    try {
      this.open()
    } catch {
      // See flush.
    }
  }

  /** Writes what `put` and `remove` kept: appended to the journal when it is a few small bases, else in one transaction. */
  flush(): void {
    if (this.pending.size === 0) return
    const journal = this.readJournal()
    // Removals only, and no database nor journal: nothing to remove from.
    if (!this.hasDatabase() && journal.bytes === 0 && [...this.pending.values()].every((text) => text === null)) {
      this.pending.clear()
      return
    }
    if (this.db === undefined && this.journalTakes(this.pending.size, this.pendingChars)) {
      const lines = [...this.pending].map(([key, text]) => `${JSON.stringify(journalLine(key, text))}\n`).join('')
      const bytes = Buffer.byteLength(lines)
      if (journal.bytes + bytes <= JOURNAL_MAX_BYTES) {
        // One write: killed inside it, the journal ends in a torn line, which a reader skips and the next flush folds.
        appendFileSync(this.journalPath(), lines)
        for (const [path, text] of this.pending) journal.entries.set(path, text)
        journal.bytes += bytes
        this.clearPending()
        return
      }
    }
    const {put, remove} = this.open()
    const db = this.db!
    db.immediate(() => {
      // The journal's entries first: the pending ones are newer.
      for (const entries of [journal.entries, this.pending]) {
        for (const [path, text] of entries) {
          if (text === null) remove.run(path)
          else put.run(path, text)
        }
      }
    })
    // After the commit: killed before this, the journal's entries are older than the rows, and the sync state (written
    // after this flush returns) still names them.
    if (journal.bytes > 0) rmSync(this.journalPath(), {force: true})
    this.journal = {entries: new Map(), bytes: 0, whole: true}
    this.clearPending()
  }

  /** Closes the database; what was not flushed is dropped (a base is only ever written after what it records). */
  close(): void {
    this.clearPending()
    this.journal = undefined
    this.db?.close()
    this.db = undefined
    this.statements = undefined
  }

  private clearPending(): void {
    this.pending.clear()
    this.pendingChars = 0
  }

  private journalPath(): string {
    return join(nexusDir(this.root), BASE_JOURNAL_FILE)
  }

  /** A flush of `paths` bases of `chars` characters goes to the journal (unless it would outgrow JOURNAL_MAX_BYTES). */
  private journalTakes(paths: number, chars: number): boolean {
    const journal = this.readJournal()
    return journal.whole && paths <= JOURNAL_FLUSH_PATHS && chars <= JOURNAL_FLUSH_CHARS && journal.bytes + chars < JOURNAL_MAX_BYTES
  }

  /**
   * The journal, read once: each line that is whole JSON of the right shape, the last one of a path winning. A line
   * that is not (torn by a kill, zeros after a power cut, a hand edit) is skipped, and the next flush folds the journal
   * into the database, so that no line is ever appended after it.
   */
  private readJournal(): Journal {
    if (this.journal !== undefined) return this.journal
    const journal: Journal = {entries: new Map(), bytes: 0, whole: true}
    let text: string
    try {
      text = readFileSync(this.journalPath(), 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      return (this.journal = journal)
    }
    journal.bytes = Buffer.byteLength(text)
    const lines = text.split('\n')
    // The text after the last newline: empty when the last line is whole.
    if (lines.pop() !== '') journal.whole = false
    for (const line of lines) {
      const entry = parseJournalLine(line)
      if (entry === undefined) journal.whole = false
      else journal.entries.set(entry.key, entry.text)
    }
    return (this.journal = journal)
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

/**
 * A sent text's key among the bases' (`path` NUL `hash`): a NUL is in no checked path, so it names no base, and an
 * older jarvis, which reads the database by path, never meets it.
 */
function sentKey(path: string, hash: string): string {
  return `${path}\u0000${hash}`
}

/** A key's journal line: `{p, t}` for a base, `{s, h, t}` for a sent text (a line an older jarvis skips as torn). */
function journalLine(key: string, text: string | null): {p: string; t: string | null} | {s: string; h: string; t: string | null} {
  const nul = key.indexOf('\u0000')
  return nul === -1 ? {p: key, t: text} : {s: key.slice(0, nul), h: key.slice(nul + 1), t: text}
}

/** One line of the journal, its key and text, or undefined when it is not one (see readJournal). */
function parseJournalLine(line: string): {key: string; text: string | null} | undefined {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const {p, s, h, t} = value as {p?: unknown; s?: unknown; h?: unknown; t?: unknown}
  if (!(typeof t === 'string' || t === null)) return undefined
  try {
    if (typeof p === 'string') return {key: checkRelativePath(p), text: t}
    if (typeof s === 'string' && typeof h === 'string' && /^[0-9a-f]+$/.test(h)) return {key: sentKey(checkRelativePath(s), h), text: t}
    return undefined
  } catch {
    return undefined
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
