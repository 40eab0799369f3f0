/**
 * The keyword index: minisearch (BM25 with prefix and fuzzy terms) over title, tags, path and body, kept in
 * `.nexus/search/index.json` together with a per-file content hash. `refresh()` scans `.memory/` (reusing the
 * stat hints stored beside the hashes) and re-indexes only the files whose hash changed; a missing, corrupt or
 * other-version index file is rebuilt from scratch. Written atomically, so a killed process leaves the old
 * index or the new one, both consistent (hashes and postings live in the same file).
 */
import {lstat, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import createDebug from 'debug'
import MiniSearch, {type AsPlainObject, type Options, type SearchResult as MiniResult} from 'minisearch'

import {forEachConcurrently, hashBytes, isIgnoredMemoryPath, memoryDir, readNexusFile, readTextIfExists, scanMemory, type StatCache, writeNexusFile} from '../store/index.js'
import {type SearchDocument, toSearchDocument} from './document.js'

const debug = createDebug('jarvis:search')

export const INDEX_FILE = 'search/index.json'
/** 2: bodies capped at INDEXED_BODY_CHARS (an index of version 1 may hold whole large files: it is rebuilt once). */
const INDEX_VERSION = 2
/**
 * How much of a file's body the keyword index holds. Memory files are notes of a few kB; a log or a dump kept
 * in `.memory/` made the index as large as the tree (95 MB for 94 MB of dumps) and every prompt's search seconds
 * long. Past this, a file is still listed, read and snippeted, but its words are not indexed.
 */
export const INDEXED_BODY_CHARS = 64 * 1024
/** Re-save the index when this many files had only their stat hints refreshed, so the next process skips re-hashing them. */
const HINT_RESAVE = 100
const READ_CONCURRENCY = 32

const STOP_WORDS = new Set(
  'a an and are as at be but by did do does for from had has have how i in is it its of on or our so that the their then there these this to was we were what when where which who why will with you'.split(' '),
)

export function processTerm(term: string): string | null {
  const lower = term.toLowerCase()
  return lower.length < 2 || STOP_WORDS.has(lower) ? null : lower
}

/** What the index keeps of each file: the scan's stat hints and hash, and the filters' fields. */
export interface IndexedFile {
  hash: string
  size: number
  mtimeMs: number
  ino?: number
  checkedAtMs?: number
  title?: string
  tags: string[]
  date?: string
}

const optional = (value: unknown, type: 'number' | 'string') => value === undefined || typeof value === type

/**
 * A cache, rebuilt when anything in it is off, so a plain check is enough (zod took 25 ms at 10,000 files,
 * at every start of `recall`).
 */
function isIndexedFile(value: unknown): value is IndexedFile {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Record<string, unknown>
  return (
    typeof v.hash === 'string' &&
    typeof v.size === 'number' &&
    typeof v.mtimeMs === 'number' &&
    optional(v.ino, 'number') &&
    optional(v.checkedAtMs, 'number') &&
    optional(v.title, 'string') &&
    optional(v.date, 'string') &&
    Array.isArray(v.tags) &&
    v.tags.every((tag) => typeof tag === 'string')
  )
}

function isIndexFile(value: unknown): value is {version: typeof INDEX_VERSION; files: Record<string, IndexedFile>; mini: AsPlainObject} {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Record<string, unknown>
  return v.version === INDEX_VERSION && typeof v.mini === 'object' && v.mini !== null && typeof v.files === 'object' && v.files !== null && Object.values(v.files).every(isIndexedFile)
}

interface MiniDoc {
  id: string
  title: string
  tags: string
  path: string
  body: string
}

const MINI_OPTIONS: Options<MiniDoc> = {
  fields: ['title', 'tags', 'path', 'body'],
  storeFields: [],
  processTerm,
  searchOptions: {
    boost: {title: 3, tags: 2, path: 1.5},
    prefix: (term) => term.length >= 3,
    fuzzy: (term) => (term.length >= 5 ? 0.2 : false),
    maxFuzzy: 2,
    combineWith: 'OR',
  },
}

function miniDoc(doc: SearchDocument): MiniDoc {
  return {id: doc.path, title: doc.title ?? '', tags: doc.tags.join(' '), path: doc.path.replace(/\.md$/, ''), body: doc.body.slice(0, INDEXED_BODY_CHARS)}
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
async function readAll(root: string, paths: string[]): Promise<Array<string | null>> {
  const texts: Array<string | null> = new Array(paths.length).fill(null)
  const base = memoryDir(root)
  await forEachConcurrently(paths, READ_CONCURRENCY, async (path, i) => {
    texts[i] = await readTextIfExists(join(base, ...path.split('/')))
  })
  return texts
}

export class KeywordIndex {
  private dirty = false
  private pendingRebuild: boolean

  private constructor(
    readonly root: string,
    private mini: MiniSearch<MiniDoc>,
    readonly files: Map<string, IndexedFile>,
    rebuilt: boolean,
  ) {
    this.pendingRebuild = rebuilt
  }

  /** Loads `.nexus/search/index.json`; anything wrong with it means an empty index that the next refresh fills. */
  static async load(root: string): Promise<KeywordIndex> {
    const text = await readNexusFile(root, INDEX_FILE).catch(() => null)
    if (text !== null) {
      try {
        const parsed: unknown = JSON.parse(text)
        if (!isIndexFile(parsed)) throw new Error('not an index of this version')
        const mini = MiniSearch.loadJS<MiniDoc>(parsed.mini, MINI_OPTIONS)
        return new KeywordIndex(root, mini, new Map(Object.entries(parsed.files)), false)
      } catch (error) {
        debug('search index unreadable, rebuilding: %s', (error as Error).message)
      }
    }
    return new KeywordIndex(root, new MiniSearch<MiniDoc>(MINI_OPTIONS), new Map(), true)
  }

  private queue: Promise<unknown> = Promise.resolve()

  /** Brings the index up to date with `.memory/`; saves it when anything changed. Calls run one at a time. */
  refresh(): Promise<RefreshStats> {
    const run = this.queue.then(() => this.refreshNow())
    this.queue = run.catch(() => {})
    return run
  }

  private async refreshNow(): Promise<RefreshStats> {
    const hints: StatCache = Object.fromEntries(this.files)
    const scanned = await scanMemory(this.root, hints)
    let indexed = 0
    let removed = 0
    let hintsChanged = 0
    for (const path of [...this.files.keys()]) {
      if (scanned.has(path)) continue
      this.files.delete(path)
      if (this.mini.has(path)) this.mini.discard(path)
      removed++
    }
    const changed: string[] = []
    for (const [path, stat] of scanned) {
      const known = this.files.get(path)
      if (known && known.hash === stat.hash && this.mini.has(path)) {
        if (known.checkedAtMs !== stat.checkedAtMs || known.mtimeMs !== stat.mtimeMs) hintsChanged++
        Object.assign(known, {size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino, checkedAtMs: stat.checkedAtMs})
      } else changed.push(path)
    }
    const texts = await readAll(this.root, changed)
    for (const [i, path] of changed.entries()) {
      const stat = scanned.get(path)!
      const text = texts[i]
      if (text === null) continue // deleted since the scan: the next refresh drops it
      const doc = toSearchDocument(path, text)
      if (this.mini.has(path)) this.mini.discard(path)
      this.mini.add(miniDoc(doc))
      this.files.set(path, {hash: stat.hash, size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino, checkedAtMs: stat.checkedAtMs, title: doc.title, tags: doc.tags, date: doc.date ?? new Date(stat.mtimeMs).toISOString().slice(0, 10)})
      indexed++
    }
    const rebuilt = this.pendingRebuild
    if (indexed > 0 || removed > 0 || rebuilt || hintsChanged >= HINT_RESAVE || this.dirty) await this.save()
    this.pendingRebuild = false
    debug('refresh: %d indexed, %d removed, %d files', indexed, removed, this.files.size)
    return {indexed, removed, files: this.files.size, rebuilt}
  }

  /**
   * Brings only `paths` up to date (a file watcher reported them): each is re-read and re-indexed when its hash
   * changed, or dropped when it is gone. Not saved now (the whole index file is megabytes at 10,000 files): the
   * next full refresh, or `flush()`, saves it; a process that loads the older file re-checks every hash anyway.
   */
  refreshPaths(paths: Iterable<string>): Promise<RefreshStats> {
    const run = this.queue.then(() => this.refreshPathsNow([...new Set(paths)]))
    this.queue = run.catch(() => {})
    return run
  }

  private async refreshPathsNow(paths: string[]): Promise<RefreshStats> {
    const base = memoryDir(this.root)
    let indexed = 0
    let removed = 0
    for (const path of paths) {
      if (path === '' || isIgnoredMemoryPath(path)) continue
      const full = join(base, ...path.split('/'))
      const checkedAtMs = Date.now()
      const info = await lstat(full).catch(() => null)
      let bytes: Buffer | null = null
      if (info?.isFile()) bytes = await readFile(full).catch(() => null)
      if (bytes === null) {
        if (this.files.delete(path)) removed++
        if (this.mini.has(path)) this.mini.discard(path)
        continue
      }
      const hash = hashBytes(bytes)
      const known = this.files.get(path)
      const stat = {hash, size: bytes.length, mtimeMs: info!.mtimeMs, ino: info!.ino, checkedAtMs}
      if (known && known.hash === hash && this.mini.has(path)) {
        Object.assign(known, stat)
        continue
      }
      const doc = toSearchDocument(path, bytes.toString('utf8'))
      if (this.mini.has(path)) this.mini.discard(path)
      this.mini.add(miniDoc(doc))
      this.files.set(path, {...stat, title: doc.title, tags: doc.tags, date: doc.date ?? new Date(stat.mtimeMs).toISOString().slice(0, 10)})
      indexed++
    }
    if (indexed > 0 || removed > 0) this.dirty = true
    debug('refresh of %d watched path(s): %d indexed, %d removed', paths.length, indexed, removed)
    return {indexed, removed, files: this.files.size, rebuilt: false}
  }

  /** Saves the index when a refresh of watched paths left it newer than its file. */
  flush(): Promise<void> {
    const run = this.queue.then(() => (this.dirty ? this.save() : undefined))
    this.queue = run.catch(() => {})
    return run
  }

  private async save(): Promise<void> {
    const payload = {version: INDEX_VERSION, files: Object.fromEntries(this.files), mini: this.mini.toJSON()}
    try {
      await writeNexusFile(this.root, INDEX_FILE, JSON.stringify(payload))
      this.dirty = false
    } catch (error) {
      // A read-only .nexus/ must not break search: the in-memory index is still right; retry next time.
      this.dirty = true
      debug('search index not saved: %s', (error as Error).message)
    }
  }

  /** True when the file passes every filter given. */
  matches(path: string, filters: KeywordFilters): boolean {
    const entry = this.files.get(path)
    if (!entry) return false
    if (filters.prefix && !path.startsWith(filters.prefix)) return false
    if (filters.tags?.length && !filters.tags.every((tag) => entry.tags.includes(tag.toLowerCase()))) return false
    if (filters.since && (!entry.date || entry.date < filters.since)) return false
    if (filters.until && (!entry.date || entry.date > filters.until)) return false
    return true
  }

  /** BM25 ranking, best first, after the filters. */
  search(query: string, filters: KeywordFilters, limit: number): KeywordHit[] {
    const results: MiniResult[] = this.mini.search(query, {filter: (result) => this.matches(result.id as string, filters)})
    return results.slice(0, limit).map((r) => ({path: r.id as string, score: r.score, terms: r.terms}))
  }

  /** Every indexed path passing the filters (for the vector ranking). */
  paths(filters: KeywordFilters): string[] {
    return [...this.files.keys()].filter((path) => this.matches(path, filters))
  }
}

/**
 * The same keyword ranking over texts held in memory, for a store that is not a tree on disk (the server's file
 * store behind `/mcp`): the caller keeps it current with `set` and `delete`, by content hash.
 */
export class MemoryTextIndex {
  private readonly mini = new MiniSearch<MiniDoc>(MINI_OPTIONS)
  readonly files = new Map<string, {hash: string; title?: string; tags: string[]; date?: string}>()

  hashOf(path: string): string | undefined {
    return this.files.get(path)?.hash
  }

  set(path: string, text: string, hash: string, updatedAt: string): void {
    const doc = toSearchDocument(path, text)
    if (this.mini.has(path)) this.mini.discard(path)
    this.mini.add(miniDoc(doc))
    this.files.set(path, {hash, title: doc.title, tags: doc.tags, date: doc.date ?? updatedAt.slice(0, 10)})
  }

  delete(path: string): void {
    this.files.delete(path)
    if (this.mini.has(path)) this.mini.discard(path)
  }

  matches(path: string, filters: KeywordFilters): boolean {
    const entry = this.files.get(path)
    if (!entry) return false
    if (filters.prefix && !path.startsWith(filters.prefix)) return false
    if (filters.tags?.length && !filters.tags.every((tag) => entry.tags.includes(tag.toLowerCase()))) return false
    if (filters.since && (!entry.date || entry.date < filters.since)) return false
    if (filters.until && (!entry.date || entry.date > filters.until)) return false
    return true
  }

  search(query: string, filters: KeywordFilters, limit: number): KeywordHit[] {
    const results: MiniResult[] = this.mini.search(query, {filter: (result) => this.matches(result.id as string, filters)})
    return results.slice(0, limit).map((r) => ({path: r.id as string, score: r.score, terms: r.terms}))
  }
}
