/**
 * The keyword index of a tree: `.nexus/search/index.sqlite`, an SQLite database holding the FTS5 index of the
 * memory files (fts.ts), one row per file with its content hash, stat hints and the filters' fields, and the
 * directories the last scan saw (their mtimes: hints that spare reading unchanged directories). A new process
 * queries it in place: it loads the rows of `files` and `dirs` (needed to check the tree), never the postings.
 *
 * `refresh()` scans `.memory/` with those hints and re-indexes only the files whose hash changed, in one
 * transaction: a killed process leaves the previous index (SQLite's journal), never a mix. A file that is not an
 * index of this version, or that SQLite finds corrupt, is removed and built again. Readers need no lock (WAL mode:
 * a search reads while another process writes).
 */
import {lstat, readFile} from 'node:fs/promises'
import {join, sep} from 'node:path'
import {crc32} from 'node:zlib'

import createDebug from 'debug'

// The store's own modules, not its barrel: a search loads neither the tree lock nor the config's schemas.
import {readTextIfExists} from '../store/atomic.js'
import {forEachConcurrently} from '../store/concurrency.js'
import {blankStat, lstatInto} from '../store/file-stat.js'
import {hashBytes} from '../store/hash.js'
import {isIgnoredMemoryPath} from '../store/paths.js'
import {memoryDir} from '../store/root.js'
import {type DirStat, insideFolder, isSettled, scanMemory, type StatCache} from '../store/tree.js'
import {isSqliteFileError, openNexusRowDatabase, openRowDatabase, removeNexusSqlite, type RowDatabase} from '../store/sqlite-open.js'
import {type ListingFields, type SearchDocument, summaryOf, toSearchDocument} from './document.js'
import {createFtsSchema, FtsEngine} from './fts.js'

export {INDEXED_BODY_CHARS, processTerm} from './fts.js'

const debug = createDebug('jarvis:search')

export const INDEX_FILE = 'search/index.sqlite'
/**
 * `PRAGMA user_version` of the index: 3 was the first SQLite one (1 and 2 were minisearch's index.json); 4 keeps
 * each file's summary and listing fields, so that a recall and `memory ls` parse no front matter; 5 indexes Latin
 * words without their accents and CJK runs as bigrams (fts.ts `wordsOf`).
 */
const INDEX_VERSION = 5
const READ_CONCURRENCY = 32
/** Refreshes tried when other processes keep writing the index in between (each retry starts from their work). */
const MAX_ATTEMPTS = 5

/** Another process committed to the index since this one read it: its ids and hints are stale. */
class IndexMovedOn extends Error {
  constructor() {
    super('the search index was written by another process meanwhile')
  }
}
/** How long a write waits for another process's write to the same index (a rebuild takes seconds). */
const BUSY_TIMEOUT_MS = 30_000

/** What the index keeps in memory of each file: its rowid in the FTS table, the scan's stat hints and hash. */
export interface IndexedFile {
  id: number
  hash: string
  size: number
  mtimeMs: number
  ino?: number
  checkedAtMs?: number
}

/** The filters' fields and the title of a file, read from the index when a query needs them. */
export interface FileMeta {
  title?: string
  tags: string[]
  date?: string
}

export interface RefreshStats {
  /** Files (re-)indexed by this refresh: new or changed content. */
  indexed: number
  /** Files dropped from the index because they are gone. */
  removed: number
  /** Memory files in the index after the refresh. */
  files: number
  /** True when the index file was missing, unreadable or of another version and was built from scratch. */
  rebuilt: boolean
}

export interface KeywordFilters {
  tags?: string[]
  prefix?: string
  since?: string
  until?: string
}

export interface KeywordHit {
  path: string
  score: number
  terms: string[]
}

/**
 * Reads the files `scanMemory` just listed, `READ_CONCURRENCY` at a time (a cold build reads them all). The
 * paths come from the scan, which never follows a symlink, so the per-component symlink check of
 * `readMemoryFile` (a realpath and an lstat per path segment: 3 s of a 10,000-file build) is skipped here;
 * snippets and summaries still read through `readMemoryFile`.
 */
export async function readAll(root: string, paths: string[]): Promise<Array<string | null>> {
  const texts: Array<string | null> = new Array(paths.length).fill(null)
  const base = memoryDir(root)
  await forEachConcurrently(paths, READ_CONCURRENCY, async (path, i) => {
    texts[i] = await readTextIfExists(join(base, ...path.split('/')))
  })
  return texts
}

/** True when the file passes every filter given. PURE. */
function passes(path: string, entry: {tags: string[]; date?: string}, filters: KeywordFilters): boolean {
  if (filters.prefix && !path.startsWith(filters.prefix)) return false
  if (filters.tags?.length && !filters.tags.every((tag) => entry.tags.includes(tag.toLowerCase()))) return false
  if (filters.since && (!entry.date || entry.date < filters.since)) return false
  if (filters.until && (!entry.date || entry.date > filters.until)) return false
  return true
}

/** What the filters need of a document: a file without a date of its own is dated by its mtime. */
function metaOfDocument(doc: SearchDocument, mtimeMs: number): FileMeta {
  return {title: doc.title, tags: doc.tags, date: doc.date ?? new Date(mtimeMs).toISOString().slice(0, 10)}
}

/** A database error that means the file cannot serve as an index: build it again. */
const isUnusable = (error: unknown) => isSqliteFileError(error, ['IOERR', 'CORRUPT', 'CANTOPEN', 'NOTADB'])

/** An error of the database itself (not of our code): worth building the index again, elsewhere if need be. */
const isDatabaseError = (error: unknown) => /^(SQLITE_|ERR_SQLITE)/.test(String((error as {code?: unknown}).code))

const FILES_SCHEMA = `
  CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, hash TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ms REAL NOT NULL, ino INTEGER, checked_at_ms REAL, title TEXT, tags TEXT NOT NULL, date TEXT, summary TEXT NOT NULL, listing TEXT NOT NULL,
    body_start INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS dirs (path TEXT PRIMARY KEY, mtime_ms REAL NOT NULL, checked_at_ms REAL NOT NULL) WITHOUT ROWID;
`

/**
 * The tree as the index last saw it, in one row a new process reads at once (see `checkManifest`): the relative
 * paths of every folder, then of every file, joined by NUL (no file name holds one); `stats` holds, as float64s,
 * each folder's mtime, then each file's size, mtime and inode. Written only when every entry is settled (its mtime
 * older than its check by the racy window), so that an equal stat proves the entry unchanged; otherwise absent.
 * (An index made without it gets it at its next refresh.)
 */
const MANIFEST_SCHEMA = 'CREATE TABLE IF NOT EXISTS manifest (id INTEGER PRIMARY KEY CHECK (id = 1), paths TEXT NOT NULL, stats BLOB NOT NULL, dirs INTEGER NOT NULL)'

/** The index database of the tree at `root`, checked; `fresh` when it was (re)created empty. */
function openIndexDatabase(root: string): {db: RowDatabase; fresh: boolean} {
  for (let attempt = 0; ; attempt++) {
    let db: RowDatabase | undefined
    try {
      const opened = openNexusRowDatabase(root, INDEX_FILE)
      db = opened
      opened.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
      opened.exec('PRAGMA journal_mode = WAL')
      // A killed process loses at most its last transaction, never consistency (WAL); the index is a cache.
      opened.exec('PRAGMA synchronous = NORMAL')
      const version = opened.prepare('PRAGMA user_version')
      const tables = opened.prepare("SELECT count(*), count(*) FILTER (WHERE name = 'manifest') FROM sqlite_schema WHERE name IN ('files', 'dirs', 'docs', 'terms', 'manifest')")
      const complete = () => version.get()![0] === INDEX_VERSION && tables.get()![0] === 5
      // The usual case, without the write lock: a search never waits for another process's write to open the index.
      if (complete()) return {db: opened, fresh: false}
      // Checked and created under the write lock: another process creating the index at the same moment is waited
      // for, never taken for a broken index.
      const fresh = opened.immediate(() => {
        const [all, manifest] = tables.get() as [number, number]
        const found = {version: version.get()![0] as number, tables: all - manifest}
        if (found.version === INDEX_VERSION && found.tables === 4) {
          opened.exec(MANIFEST_SCHEMA)
          return false
        }
        if (found.version !== 0 || found.tables !== 0) throw Object.assign(new Error(`an index of version ${found.version}`), {code: 'SQLITE_NOTADB'})
        opened.exec(FILES_SCHEMA)
        opened.exec(MANIFEST_SCHEMA)
        createFtsSchema(opened)
        opened.exec(`PRAGMA user_version = ${INDEX_VERSION}`)
        return true
      })
      return {db: opened, fresh}
    } catch (error) {
      db?.close()
      if (attempt > 0 || !isUnusable(error)) throw error
      debug('search index unusable, rebuilding: %s', (error as Error).message)
      removeNexusSqlite(root, INDEX_FILE)
    }
  }
}

/** An index in memory, for a tree whose `.nexus/` cannot hold one (read-only): built again by each process. */
function memoryDatabase(): RowDatabase {
  const db = openRowDatabase(':memory:')
  db.exec(FILES_SCHEMA)
  db.exec(MANIFEST_SCHEMA)
  return db
}

export class KeywordIndex {
  private engine: FtsEngine
  private pendingRebuild: boolean
  private readonly ids = new Map<number, string>()
  private nextId = 1
  private statements!: ReturnType<typeof prepareStatements>

  private readonly fileMap = new Map<string, IndexedFile>()
  private dirs = new Map<string, DirStat>()
  private readonly metas = new Map<number, FileMeta>()
  /** Paths of ids looked up one by one while `files` is not read (a new process whose manifest said "fresh"). */
  private readonly pathsById = new Map<number, string | null>()
  /** True when the index lives in memory only (`.nexus/` could not hold it). */
  private inMemory = false
  /** `PRAGMA data_version` when `files` was read: it moves when another connection commits. */
  private seenVersion = 0
  /** False until `files` and `dirs` are read: a search whose manifest holds never reads them. */
  private stateRead = false
  /** `PRAGMA data_version` when `pathsById` and `metas` were last known good (another process may reuse an id). */
  private lookupsVersion = -1
  /** Moves whenever `files` may have changed (read again, or written by this process): what derived data checks. */
  private filesGeneration = 0
  /**
   * The CRC-32 of the manifest the last refresh found the tree equal to; undefined when that refresh had to look
   * further. The manifest is written in the same transaction as `files`, so while it is unchanged `files` is what it
   * was: data derived from `files` and marked with this digest still holds (the vectors' sync mark, semantic.ts)
   * without `files` being read.
   */
  freshManifest: number | undefined

  private constructor(
    readonly root: string,
    private db: RowDatabase,
    rebuilt: boolean,
  ) {
    this.pendingRebuild = rebuilt
    this.engine = new FtsEngine(db)
    this.statements = prepareStatements(db)
  }

  /** Opens `.nexus/search/index.sqlite`; a missing, foreign or corrupt one is replaced by an empty index that the next refresh fills. */
  static async load(root: string): Promise<KeywordIndex> {
    let opened: {db: RowDatabase; fresh: boolean; inMemory?: boolean}
    try {
      opened = openIndexDatabase(root)
    } catch (error) {
      // A read-only .nexus/ must not break search: the index lives in memory for this process.
      debug('search index cannot be opened, keeping one in memory: %s', (error as Error).message)
      opened = {db: memoryDatabase(), fresh: true, inMemory: true}
    }
    const index = new KeywordIndex(root, opened.db, opened.fresh)
    index.inMemory = opened.inMemory === true
    return index
  }

  /** A number that changes whenever `files` may have: data made from `files` is still good while it stays the same. */
  get generation(): number {
    if (!this.stateRead) this.readState()
    return this.filesGeneration
  }

  /** Every indexed file with its hash and stat hints (read from the index at the first use). */
  get files(): ReadonlyMap<string, IndexedFile> {
    if (!this.stateRead) this.readState()
    return this.fileMap
  }

  /**
   * The index's rows of `files` and `dirs`, read now when they were not, or when another process wrote since: only
   * where a refresh starts (a read in the middle of one would hide another process's commit from its write).
   */
  private state(): this {
    if (!this.stateRead || (this.statements.dataVersion.get()![0] as number) !== this.seenVersion) this.readState()
    return this
  }

  /**
   * Reads what checking the tree needs (titles, tags and dates are read for the files a query ranks: metaOf), and
   * notes the database's version: a write finding another process's commit since then starts over from here.
   */
  private readState(): void {
    this.filesGeneration++
    this.fileMap.clear()
    this.ids.clear()
    this.metas.clear()
    this.pathsById.clear()
    this.nextId = 1
    this.seenVersion = this.statements.dataVersion.get()![0] as number
    for (const [id, path, hash, size, mtimeMs, ino, checkedAtMs] of this.statements.allFiles.all() as FileRow[]) {
      this.fileMap.set(path, {id, hash, size, mtimeMs, ino: ino ?? undefined, checkedAtMs: checkedAtMs ?? undefined})
      this.ids.set(id, path)
      if (id >= this.nextId) this.nextId = id + 1
    }
    this.dirs = new Map()
    for (const [path, mtimeMs, checkedAtMs] of this.statements.allDirs.all() as Array<[string, number, number]>) this.dirs.set(path, {mtimeMs, checkedAtMs})
    this.stateRead = true
  }

  /**
   * The cheap check a new process makes before reading any row of `files`: one `lstat` of each folder and file the
   * manifest lists, compared with what it recorded. Every entry equal means the tree is what the index describes
   * (a creation, removal or rename changes a folder's mtime; an edit in place the file's size or mtime; a
   * replacement its inode; and the manifest holds only entries older than their check by the racy window, the
   * rule `scanMemory`'s hints follow): nothing to refresh. The first difference ends the check; the full scan then
   * decides. Synchronous: one `lstat` in a loop is far cheaper than a promise per file.
   */
  private checkManifest(): RefreshStats | undefined {
    const row = this.statements.manifest.get() as [string, Uint8Array, number] | undefined
    if (row === undefined) return undefined
    const [joined, blob, dirCount] = row
    const names = joined.split('\0')
    const stats = float64s(blob)
    if (stats.length !== dirCount + (names.length - dirCount) * 3) return undefined
    const base = memoryDir(this.root)
    const fullPath = (rel: string) => (rel === '' ? base : `${base}${sep}${sep === '/' ? rel : rel.split('/').join(sep)}`)
    // Through lstatInto, as the scan: no fs.Stats and its four Dates per entry (half of this loop at 10,000 files,
    // whose 4,778 folders cost as much as its files); and, as the scan, from inside `.memory/` with the manifest's
    // own relative names, where it may (insideFolder): no path built per entry, fewer folders for the kernel to walk.
    const scratch = blankStat()
    let holds = true
    insideFolder(base, (relative) => {
      const pathOf = relative && sep === '/' ? (rel: string) => (rel === '' ? '.' : rel) : fullPath
      for (let i = 0; i < dirCount && holds; i++) {
        const info = lstatInto(pathOf(names[i]), scratch)
        holds = info?.isDirectory === true && info.mtimeMs === stats[i]
      }
      for (let i = dirCount, at = dirCount; i < names.length && holds; i++, at += 3) {
        const info = lstatInto(pathOf(names[i]), scratch)
        holds = info?.isFile === true && info.size === stats[at] && info.mtimeMs === stats[at + 1] && info.ino === stats[at + 2]
      }
    })
    if (!holds) return undefined
    const rebuilt = this.pendingRebuild
    this.pendingRebuild = false
    this.freshManifest = crc32(blob, crc32(joined))
    return {indexed: 0, removed: 0, files: names.length - dirCount, rebuilt}
  }

  private queue: Promise<unknown> = Promise.resolve()

  /** Resolves when the refreshes asked for so far have ended. */
  async idle(): Promise<void> {
    await this.queue
  }

  /** Brings the index up to date with `.memory/`; writes what changed. Calls run one at a time. */
  refresh(): Promise<RefreshStats> {
    const run = this.queue.then(() => this.refreshNow())
    this.queue = run.catch(() => {})
    return run
  }

  private async refreshNow(attempt = 0): Promise<RefreshStats> {
    this.freshManifest = undefined
    const version = this.statements.dataVersion.get()![0] as number
    if (version !== this.lookupsVersion) {
      this.pathsById.clear()
      this.metas.clear()
      this.lookupsVersion = version
    }
    if (attempt === 0) {
      const fresh = this.checkManifest()
      if (fresh !== undefined) return fresh
    }
    const {fileMap: files} = this.state()
    const dirs = new Map<string, DirStat>()
    const scanned = await scanMemory(this.root, files, {dirCache: this.dirs, dirs})
    const removed = [...files.keys()].filter((path) => !scanned.has(path))
    const changed: string[] = []
    const hinted: string[] = []
    for (const [path, stat] of scanned) {
      const known = files.get(path)
      if (known === undefined || known.hash !== stat.hash) changed.push(path)
      else if (known.checkedAtMs !== stat.checkedAtMs || known.mtimeMs !== stat.mtimeMs || known.size !== stat.size || known.ino !== stat.ino) hinted.push(path)
    }
    const texts = await readAll(this.root, changed)
    const updates: Array<{path: string; stat: StatCache[string]; doc: SearchDocument}> = []
    for (const [i, path] of changed.entries()) {
      const text = texts[i]
      // Deleted since the scan: the next refresh drops it (and its folder's hint no longer holds, so it is read).
      if (text !== null) updates.push({path, stat: scanned.get(path)!, doc: toSearchDocument(path, text)})
    }
    const dirsChanged = dirs.size !== this.dirs.size || [...dirs].some(([path, stat]) => this.dirs.get(path)?.checkedAtMs !== stat.checkedAtMs || this.dirs.get(path)?.mtimeMs !== stat.mtimeMs)
    // The manifest did not hold (this refresh is past its check): written again, even when nothing else changed
    // (an index made before the manifest existed), once every entry is settled.
    if (updates.length > 0 || removed.length > 0 || hinted.length > 0 || dirsChanged || manifestOf(files, dirs) !== undefined) {
      try {
        this.write({removed, updates, hinted: hinted.map((path) => [path, scanned.get(path)!] as const), dirs})
      } catch (error) {
        if (error instanceof IndexMovedOn && attempt < MAX_ATTEMPTS) {
          // Another process refreshed the index since it was read: start from what it wrote (its work is not redone).
          this.readState()
          return this.refreshNow(attempt + 1)
        }
        if (!(await this.recover(error))) throw error
        return this.refreshNow(attempt + 1)
      }
    }
    const rebuilt = this.pendingRebuild
    this.pendingRebuild = false
    debug('refresh: %d indexed, %d removed, %d files', updates.length, removed.length, this.fileMap.size)
    return {indexed: updates.length, removed: removed.length, files: this.fileMap.size, rebuilt}
  }

  /**
   * After a failed write: a corrupt file is replaced by a new one, a file that cannot be written (read-only,
   * disk full, another writer for too long) by an index in memory; either way built from scratch by the caller.
   */
  private async recover(error: unknown): Promise<boolean> {
    if (!isDatabaseError(error) || this.inMemory) return false
    debug('search index write failed (%s): building it again', (error as Error).message)
    this.db.close()
    let db: RowDatabase
    try {
      if (!isUnusable(error)) throw error
      removeNexusSqlite(this.root, INDEX_FILE)
      db = openIndexDatabase(this.root).db
    } catch {
      db = memoryDatabase()
      this.inMemory = true
    }
    this.db = db
    this.engine = new FtsEngine(db)
    this.statements = prepareStatements(db)
    this.readState()
    this.pendingRebuild = true
    return true
  }

  /** One transaction: every change of a refresh is written, or none. */
  private write(change: {removed: string[]; updates: Array<{path: string; stat: StatCache[string]; doc: SearchDocument}>; hinted: ReadonlyArray<readonly [string, StatCache[string]]>; dirs?: Map<string, DirStat>}): void {
    const {statements: sql, engine} = this
    // The maps the change was computed from (read at the start of the refresh), never read again here: a commit by
    // another process since must be found by the version check below, not hidden by a fresh read.
    if (!this.stateRead) this.readState()
    const files = new Map(this.fileMap)
    const ids = new Map(this.ids)
    let nextId = this.nextId
    // IMMEDIATE: the write lock is taken first, so the version check and the writes see the same database.
    this.db.immediate(() => {
      if ((sql.dataVersion.get()![0] as number) !== this.seenVersion) throw new IndexMovedOn()
      for (const path of change.removed) {
        const entry = files.get(path)
        if (!entry) continue
        engine.remove(entry.id)
        sql.deleteFile.run(entry.id)
        files.delete(path)
        ids.delete(entry.id)
      }
      for (const {path, stat, doc} of change.updates) {
        const old = files.get(path)
        if (old) engine.remove(old.id)
        const id = old?.id ?? nextId++
        const entry: IndexedFile = {id, hash: stat.hash, size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino, checkedAtMs: stat.checkedAtMs}
        const meta = metaOfDocument(doc, stat.mtimeMs)
        sql.upsertFile.run(id, path, entry.hash, entry.size, entry.mtimeMs, entry.ino ?? null, entry.checkedAtMs ?? null, meta.title ?? null, meta.tags.join('\n'), meta.date ?? null, summaryOf(doc), JSON.stringify(doc.listing), doc.bodyStart)
        engine.add(id, doc)
        files.set(path, entry)
        ids.set(id, path)
      }
      for (const [path, stat] of change.hinted) {
        const entry = files.get(path)
        if (!entry) continue
        sql.updateHints.run(stat.size, stat.mtimeMs, stat.ino ?? null, stat.checkedAtMs ?? null, entry.id)
        files.set(path, {...entry, size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino, checkedAtMs: stat.checkedAtMs})
      }
      if (change.dirs) {
        for (const path of this.dirs.keys()) if (!change.dirs.has(path)) sql.deleteDir.run(path)
        for (const [path, stat] of change.dirs) {
          const old = this.dirs.get(path)
          if (old?.mtimeMs !== stat.mtimeMs || old.checkedAtMs !== stat.checkedAtMs) sql.upsertDir.run(path, stat.mtimeMs, stat.checkedAtMs)
        }
      }
      const manifest = manifestOf(files, change.dirs ?? this.dirs)
      if (manifest === undefined) sql.deleteManifest.run()
      else sql.putManifest.run(manifest.paths, manifest.stats, manifest.dirs)
    })
    // Only once the transaction committed: the maps always describe what the database holds.
    this.metas.clear()
    this.pathsById.clear()
    this.fileMap.clear()
    for (const [path, entry] of files) this.fileMap.set(path, entry)
    this.ids.clear()
    for (const [id, path] of ids) this.ids.set(id, path)
    this.nextId = nextId
    if (change.dirs) this.dirs = change.dirs
    // This process's own commit: what it holds is what the database holds.
    this.seenVersion = this.statements.dataVersion.get()![0] as number
    this.filesGeneration++
  }

  /**
   * Brings only `paths` up to date (a file watcher reported them): each is re-read and re-indexed when its hash
   * changed, or dropped when it is gone.
   */
  refreshPaths(paths: Iterable<string>): Promise<RefreshStats> {
    const run = this.queue.then(() => this.refreshPathsNow([...new Set(paths)]))
    this.queue = run.catch(() => {})
    return run
  }

  private async refreshPathsNow(paths: string[]): Promise<RefreshStats> {
    this.state()
    const base = memoryDir(this.root)
    const removed: string[] = []
    const updates: Array<{path: string; stat: StatCache[string]; doc: SearchDocument}> = []
    const hinted: Array<readonly [string, StatCache[string]]> = []
    for (const path of paths) {
      if (path === '' || isIgnoredMemoryPath(path)) continue
      const full = join(base, ...path.split('/'))
      const checkedAtMs = Date.now()
      const info = await lstat(full).catch(() => null)
      let bytes: Buffer | null = null
      if (info?.isFile()) bytes = await readFile(full).catch(() => null)
      if (bytes === null) {
        if (this.fileMap.has(path)) removed.push(path)
        continue
      }
      const stat = {hash: hashBytes(bytes), size: bytes.length, mtimeMs: info!.mtimeMs, ino: info!.ino, checkedAtMs}
      if (this.fileMap.get(path)?.hash === stat.hash) hinted.push([path, stat])
      else updates.push({path, stat, doc: toSearchDocument(path, bytes.toString('utf8'))})
    }
    try {
      this.write({removed, updates, hinted})
    } catch (error) {
      // Another process wrote the index meanwhile, or it had to be built again: a full refresh covers these paths.
      if (error instanceof IndexMovedOn) this.readState()
      else if (!(await this.recover(error))) throw error
      return this.refreshNow()
    }
    debug('refresh of %d watched path(s): %d indexed, %d removed', paths.length, updates.length, removed.length)
    return {indexed: updates.length, removed: removed.length, files: this.fileMap.size, rebuilt: false}
  }

  /** Closes the database (SQLite folds its WAL into the file); the index cannot be used afterwards. */
  close(): void {
    this.db.close()
  }

  /** The path of the file indexed under `id`, or undefined when there is none (without reading all of `files`). */
  private pathOf(id: number): string | undefined {
    if (this.stateRead) return this.ids.get(id)
    let path = this.pathsById.get(id)
    if (path === undefined) this.pathsById.set(id, (path = (this.statements.pathOfId.get(id)?.[0] as string | undefined) ?? null))
    return path ?? undefined
  }

  /** Title, tags and date of an indexed file (read once, then kept). */
  metaOf(path: string): FileMeta | undefined {
    const row = this.statements.meta.get(path) as [number, string | null, string, string | null] | undefined
    if (row === undefined) return undefined
    let meta = this.metas.get(row[0])
    if (meta === undefined) {
      meta = {title: row[1] ?? undefined, tags: row[2] === '' ? [] : row[2].split('\n'), date: row[3] ?? undefined}
      this.metas.set(row[0], meta)
    }
    return meta
  }

  /** The file's one-line summary as the index made it from its text (`summaryOf`), or undefined when it is not indexed. */
  summaryOf(path: string): string | undefined {
    return this.statements.summary.get(path)?.[0] as string | undefined
  }

  /**
   * What the index made of a file's text when it indexed it (title, tags, summary, where its body starts), for a
   * text read now: undefined when the file is not indexed or the text is not the size the index saw (changed
   * since), so that the caller parses the text itself.
   */
  documentOf(path: string, text: string): {title?: string; tags: string[]; summary: string; body: string} | undefined {
    const row = this.statements.document.get(path) as [string | null, string, string, number, number] | undefined
    if (row === undefined || Buffer.byteLength(text) !== row[4]) return undefined
    return {title: row[0] ?? undefined, tags: row[1] === '' ? [] : row[1].split('\n'), summary: row[2], body: text.slice(row[3])}
  }

  /** The files `accept` takes, sorted by path, at most `limit`, as the index holds them (the caller refreshed it: a watched tree). */
  listing(accept: (path: string) => boolean, limit: number): Array<{path: string; size: number; mtimeMs: number; listing: ListingFields}> {
    const rows = (this.statements.listing.all() as Array<[string, number, number, string]>).filter(([path]) => accept(path))
    rows.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return rows.slice(0, limit).map(([path, size, mtimeMs, listing]) => ({path, size, mtimeMs, listing: JSON.parse(listing) as ListingFields}))
  }

  /** True when the file passes every filter given. */
  matches(path: string, filters: KeywordFilters): boolean {
    if (!filters.prefix && !filters.tags?.length && !filters.since && !filters.until) return this.stateRead ? this.fileMap.has(path) : true
    const meta = this.metaOf(path)
    return meta !== undefined && passes(path, meta, filters)
  }

  /** BM25 ranking, best first, after the filters. */
  search(query: string, filters: KeywordFilters, limit: number): KeywordHit[] {
    const unfiltered = !filters.prefix && !filters.tags?.length && !filters.since && !filters.until
    // Unfiltered, every id FTS5 finds is a file (both are written in one transaction): only the top ones are looked up.
    const accept = unfiltered && !this.stateRead ? () => true : (id: number) => {
      const path = this.pathOf(id)
      return path !== undefined && this.matches(path, filters)
    }
    const hits: KeywordHit[] = []
    const found = this.engine.search(query, accept)
    for (const {id, score} of found.hits) {
      if (hits.length === limit) break
      const path = this.pathOf(id)
      if (path !== undefined) hits.push({path, score, terms: found.termsOf(id)})
    }
    return hits
  }

  /** Every indexed path passing the filters (for the vector ranking). */
  paths(filters: KeywordFilters): string[] {
    return [...this.files.keys()].filter((path) => this.matches(path, filters))
  }
}

/** A blob of float64s as an array (a copy when SQLite's buffer is not 8-byte aligned). */
function float64s(blob: Uint8Array): Float64Array {
  if (blob.byteOffset % 8 === 0 && blob.byteLength % 8 === 0) return new Float64Array(blob.buffer, blob.byteOffset, blob.byteLength / 8)
  const copy = new Uint8Array(blob.byteLength - (blob.byteLength % 8))
  copy.set(blob.subarray(0, copy.length))
  return new Float64Array(copy.buffer)
}


/**
 * The manifest of the index's files and folders (see MANIFEST_SCHEMA), or undefined while an entry is not settled:
 * its stat proves nothing yet, so a new process must scan. PURE.
 */
function manifestOf(files: ReadonlyMap<string, IndexedFile>, dirs: ReadonlyMap<string, DirStat>): {paths: string; stats: Uint8Array; dirs: number} | undefined {
  const stats = new Float64Array(dirs.size + files.size * 3)
  const names: string[] = []
  let at = 0
  for (const [path, dir] of dirs) {
    if (!isSettled(dir.mtimeMs, dir.checkedAtMs)) return undefined
    names.push(path)
    stats[at++] = dir.mtimeMs
  }
  for (const [path, file] of files) {
    if (file.ino === undefined || !isSettled(file.mtimeMs, file.checkedAtMs)) return undefined
    names.push(path)
    stats[at++] = file.size
    stats[at++] = file.mtimeMs
    stats[at++] = file.ino
  }
  return {paths: names.join('\0'), stats: Buffer.from(stats.buffer, 0, stats.byteLength), dirs: dirs.size}
}

type FileRow = [number, string, string, number, number, number | null, number | null]

function prepareStatements(db: RowDatabase) {
  return {
    dataVersion: db.prepare('PRAGMA data_version'),
    allFiles: db.prepare('SELECT id, path, hash, size, mtime_ms, ino, checked_at_ms FROM files'),
    allDirs: db.prepare('SELECT path, mtime_ms, checked_at_ms FROM dirs'),
    upsertFile: db.prepare(
      `INSERT INTO files (id, path, hash, size, mtime_ms, ino, checked_at_ms, title, tags, date, summary, listing, body_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET hash = excluded.hash, size = excluded.size, mtime_ms = excluded.mtime_ms, ino = excluded.ino,
         checked_at_ms = excluded.checked_at_ms, title = excluded.title, tags = excluded.tags, date = excluded.date,
         summary = excluded.summary, listing = excluded.listing, body_start = excluded.body_start`,
    ),
    deleteFile: db.prepare('DELETE FROM files WHERE id = ?'),
    meta: db.prepare('SELECT id, title, tags, date FROM files WHERE path = ?'),
    pathOfId: db.prepare('SELECT path FROM files WHERE id = ?'),
    summary: db.prepare('SELECT summary FROM files WHERE path = ?'),
    document: db.prepare('SELECT title, tags, summary, body_start, size FROM files WHERE path = ?'),
    listing: db.prepare('SELECT path, size, mtime_ms, listing FROM files'),
    manifest: db.prepare('SELECT paths, stats, dirs FROM manifest WHERE id = 1'),
    putManifest: db.prepare('INSERT OR REPLACE INTO manifest (id, paths, stats, dirs) VALUES (1, ?, ?, ?)'),
    deleteManifest: db.prepare('DELETE FROM manifest'),
    updateHints: db.prepare('UPDATE files SET size = ?, mtime_ms = ?, ino = ?, checked_at_ms = ? WHERE id = ?'),
    deleteDir: db.prepare('DELETE FROM dirs WHERE path = ?'),
    upsertDir: db.prepare('INSERT INTO dirs (path, mtime_ms, checked_at_ms) VALUES (?, ?, ?) ON CONFLICT (path) DO UPDATE SET mtime_ms = excluded.mtime_ms, checked_at_ms = excluded.checked_at_ms'),
  }
}

/**
 * The same keyword ranking over texts held in memory, for a store that is not a tree on disk (the server's file
 * store behind `/mcp`): the caller keeps it current with `set` and `delete`, by content hash. An SQLite database
 * in memory, opened at the first `set`.
 */
export class MemoryTextIndex {
  private engine: FtsEngine | undefined
  readonly files = new Map<string, {id: number; hash: string} & FileMeta>()
  private readonly ids = new Map<number, string>()
  private nextId = 1

  private get fts(): FtsEngine {
    return (this.engine ??= new FtsEngine(openRowDatabase(':memory:')))
  }

  hashOf(path: string): string | undefined {
    return this.files.get(path)?.hash
  }

  set(path: string, text: string, hash: string, updatedAt: string): void {
    const doc = toSearchDocument(path, text)
    const old = this.files.get(path)
    if (old) this.fts.remove(old.id)
    const id = old?.id ?? this.nextId++
    this.fts.add(id, doc)
    this.files.set(path, {id, hash, title: doc.title, tags: doc.tags, date: doc.date ?? updatedAt.slice(0, 10)})
    this.ids.set(id, path)
  }

  delete(path: string): void {
    const entry = this.files.get(path)
    if (!entry) return
    this.fts.remove(entry.id)
    this.files.delete(path)
    this.ids.delete(entry.id)
  }

  metaOf(path: string): FileMeta | undefined {
    return this.files.get(path)
  }

  matches(path: string, filters: KeywordFilters): boolean {
    const entry = this.files.get(path)
    return entry !== undefined && passes(path, entry, filters)
  }

  search(query: string, filters: KeywordFilters, limit: number): KeywordHit[] {
    if (this.engine === undefined) return []
    const found = this.engine.search(query, (id) => {
      const path = this.ids.get(id)
      return path !== undefined && this.matches(path, filters)
    })
    return found.hits.slice(0, limit).map(({id, score}) => ({path: this.ids.get(id)!, score, terms: found.termsOf(id)}))
  }
}
