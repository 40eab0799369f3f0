/**
 * search/: the memory-file index and ranking (docs/memory-files.md, seed 004 §5, §7, §9).
 *
 * Keyword ranking always (SQLite FTS5 BM25, prefix and fuzzy terms); when an embeddings provider is configured
 * the vector ranking too, fused with reciprocal rank fusion. The index is opened once per process, queried in
 * place, and brought up to date from content hashes on each search; see docs/decisions/search.md.
 */
import {performance} from 'node:perf_hooks'

import createDebug from 'debug'

import {BadInputError} from '../errors.js'
import {readMemoryFile} from '../store/tree.js'
import {headOf, sliceWhole} from '../schemas/shorten.js'
import {frontMatterProject, SUMMARY_CHARS, summaryOf, toSearchDocument} from './document.js'
import {embed, EMBED_MAX_CHARS, type EmbeddingsConfig, embeddingsFromEnv, EmbeddingsUnavailableError, VectorStore} from './embeddings.js'
import {BUILTIN_MIN_SPREAD, BUILTIN_WEIGHTS, convexFusion, MIN_SHARE_OF_BEST} from './fuse.js'
import {type KeywordFilters, KeywordIndex, MemoryTextIndex, processTerm, type RefreshStats} from './keyword.js'
import {BUILTIN_MODEL, builtinModel, ChunkVectorStore} from './semantic.js'
import {type IndexedListing, type WatchedTree, watchedTrees} from './watched.js'

export {embeddingsEndpoint, embeddingsFromEnv, type EmbeddingsConfig, vectorsFile} from './embeddings.js'
export {BUILTIN_WEIGHTS, convexFusion, KEYWORD_WEIGHT, reciprocalRankFusion, RRF_K} from './fuse.js'
export {BUILTIN_MODEL, VECTORS_FILE} from './semantic.js'
export {INDEX_FILE, MemoryTextIndex, type RefreshStats} from './keyword.js'

const debug = createDebug('jarvis:search')

export interface SearchHit {
  path: string
  title?: string
  score: number
  /** The lines that matched (1-based line numbers in the file), at most 3, each at most 200 characters. */
  snippet: {line: number; text: string}[]
}

export interface SearchOptions {
  /** Default 10. */
  limit?: number
  /** Only files carrying every one of these tags (front matter `tags`). */
  tags?: string[]
  /** Only files under this path (relative to `.memory/`). */
  prefix?: string
  /** Only files dated on or after: `2026-02-01`, an ISO date-time, or a duration back from `now` (`7d`, `2w`, `12h`). */
  since?: string
  /** Only files dated on or before (same forms). */
  until?: string
  /**
   * The semantic ranking: a remote provider; undefined for the default (JARVIS_EMBEDDINGS_URL / _MODEL / _KEY when
   * set, else the built-in model, unless JARVIS_EMBEDDINGS=off); false for keyword ranking only.
   */
  embeddings?: EmbeddingsConfig | false
  /** Default true: bring the index up to date with `.memory/` first. */
  refresh?: boolean
  now?: Date
}

export interface SearchStats extends RefreshStats {
  /** Files whose vectors were computed by this search (0 in keyword mode). */
  embedded: number
  /** Time spent ranking, after the refresh (ms). */
  queryMs: number
}

export interface SearchResult {
  hits: SearchHit[]
  mode: 'hybrid' | 'keyword'
  /** The embedding model of a hybrid ranking: BUILTIN_MODEL, or the remote provider's model. */
  model?: string
  /** One line when the results are keyword-only: why (no provider, or the provider failed). */
  note?: string
  stats: SearchStats
}

/** Ranked depth of each list before fusion. */
const FUSION_DEPTH = 50
const SNIPPET_LINES = 3
const SNIPPET_CHARS = 200

const indexes = new Map<string, Promise<KeywordIndex>>()
/** The indexes opened so far, to close them when the cache is reset. */
const opened = new Set<KeywordIndex>()
const vectorStores = new Map<string, Promise<VectorStore>>()
/** The built-in model's chunk vectors of each tree, opened once per process. */
const chunkStores = new Map<string, ChunkVectorStore>()

/** The tree's index, loaded once per process. */
function indexFor(root: string): Promise<KeywordIndex> {
  let index = indexes.get(root)
  if (!index) {
    index = KeywordIndex.load(root)
    void index.then((loaded) => opened.add(loaded), () => {})
    indexes.set(root, index)
    index.catch(() => indexes.delete(root))
  }
  return index
}

function vectorsFor(root: string, model: string): Promise<VectorStore> {
  const key = `${root}\0${model}`
  let store = vectorStores.get(key)
  if (!store) {
    store = VectorStore.load(root, model)
    vectorStores.set(key, store)
    store.catch(() => vectorStores.delete(key))
  }
  return store
}

/** Closes and forgets the in-process indexes (tests: simulate a new process). */
export function resetSearchCache(): void {
  for (const index of opened) index.close()
  opened.clear()
  indexes.clear()
  vectorStores.clear()
  for (const store of chunkStores.values()) store.close()
  chunkStores.clear()
}

/** Brings the index of `root` up to date and says how many files were (re-)indexed. */
export async function refreshSearchIndex(root: string): Promise<RefreshStats> {
  return (await indexFor(root)).refresh()
}

export interface SearchIndexWatch {
  /** A file under `.memory/` was added, changed or removed (its path relative to `.memory/`). */
  changed(path: string): void
  /** Something the watcher cannot describe path by path (a directory added or removed, a watcher error, ready). */
  rescan(): void
  /** Brings the index up to date with what the watcher reported (everything, after a `rescan()`), as a search would. */
  refresh(): Promise<RefreshStats>
  /** Back to a full scan at every search (each watched refresh was written to the index when it ran). */
  stop(): Promise<void>
}

/**
 * For a long-lived process (`jarvis mcp`) that watches `.memory/` itself: from now on a search of `root` re-reads
 * only the files the watcher reported since the last search, instead of scanning the whole tree (0.4 s at 10,000
 * files). The first search after this call, and after every `rescan()`, still scans everything. `settle`, when
 * given, is awaited before each search: it proves the watcher has reported every change made before it.
 */
export function watchSearchIndex(root: string, options: {settle?: () => Promise<boolean>} = {}): SearchIndexWatch {
  const state: WatchedTree = {
    changed: new Set(),
    rescan: true,
    settle: options.settle,
    async list(accept, limit) {
      const index = await indexFor(root)
      await refreshBeforeSearch(root, index)
      return index.listing(accept, limit).map(({path, size, mtimeMs, listing}) => ({path, size, mtimeMs, ...listing}))
    },
  }
  watchedTrees.set(root, state)
  return {
    changed: (path) => void state.changed.add(path),
    rescan: () => void (state.rescan = true),
    refresh: async () => refreshBeforeSearch(root, await indexFor(root)),
    async stop() {
      if (watchedTrees.get(root) === state) watchedTrees.delete(root)
    },
  }
}

/** The refresh before a search: the watched paths only when a watcher keeps the tree, else a full scan. */
async function refreshBeforeSearch(root: string, index: KeywordIndex): Promise<RefreshStats> {
  const watched = watchedTrees.get(root)
  if (!watched) return index.refresh()
  if (watched.settle && !(await watched.settle())) watched.rescan = true
  // Taken before the refresh starts: what the watcher reports meanwhile is read by the next search.
  const paths = [...watched.changed]
  watched.changed.clear()
  if (watched.rescan) {
    watched.rescan = false
    try {
      const stats = await index.refresh()
      // The paths marked too are read whatever the scan's hints said of their folders (warm/tree-watch.ts `arrived`).
      if (paths.length === 0) return stats
      const marked = await index.refreshPaths(paths)
      return {...marked, indexed: stats.indexed + marked.indexed, removed: stats.removed + marked.removed, rebuilt: stats.rebuilt}
    } catch (error) {
      watched.rescan = true
      for (const path of paths) watched.changed.add(path)
      throw error
    }
  }
  if (paths.length === 0) {
    // A refresh started by an earlier search may still be writing paths reported before this search was asked.
    await index.idle()
    return {indexed: 0, removed: 0, files: index.files.size, rebuilt: false}
  }
  try {
    return await index.refreshPaths(paths)
  } catch (error) {
    for (const path of paths) watched.changed.add(path)
    throw error
  }
}

const DURATION = /^(\d+)\s*([hdw])$/

function dateFilter(value: string | undefined, now: Date, flag: string): string | undefined {
  if (value === undefined || value === '') return undefined
  const duration = DURATION.exec(value.trim())
  if (duration) {
    const hours = Number(duration[1]) * ({h: 1, d: 24, w: 168} as const)[duration[2] as 'h' | 'd' | 'w']
    return new Date(now.getTime() - hours * 3_600_000).toISOString().slice(0, 10)
  }
  const date = new Date(value)
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(date.getTime())) throw new BadInputError(`${flag} "${value}": use a date (2026-02-01), an ISO date-time, or a duration such as 7d`, {[flag.replace(/^-+/, '')]: value})
  return value.slice(0, 10)
}

function filtersOf(options: SearchOptions): KeywordFilters {
  const now = options.now ?? new Date()
  const prefix = options.prefix?.trim().replace(/^\.\//, '').replace(/^\.memory\//, '').replace(/^\/+/, '')
  return {
    tags: options.tags?.map((t) => t.trim()).filter(Boolean),
    prefix: prefix || undefined,
    since: dateFilter(options.since, now, '--since'),
    until: dateFilter(options.until, now, '--until'),
  }
}

/** Up to 3 lines holding the most query terms; a hit found only by its vector gets its first prose line. */
function snippetOf(text: string, terms: string[]): {line: number; text: string}[] {
  const lines = text.split(/\r?\n/)
  const needles = [...new Set(terms.map((t) => t.toLowerCase()))].filter(Boolean)
  const scored: Array<{line: number; count: number; at: number}> = []
  lines.forEach((raw, i) => {
    if (!raw.trim() || /^---\s*$/.test(raw)) return
    const lower = raw.toLowerCase()
    let count = 0
    let at = -1
    for (const needle of needles) {
      const pos = lower.indexOf(needle)
      if (pos >= 0) {
        count++
        if (at < 0 || pos < at) at = pos
      }
    }
    if (count > 0) scored.push({line: i, count, at})
  })
  let chosen = scored.sort((a, b) => b.count - a.count || a.line - b.line).slice(0, SNIPPET_LINES)
  if (chosen.length === 0) {
    const bodyStart = lines[0]?.trim() === '---' ? lines.findIndex((l, i) => i > 0 && l.trim() === '---') + 1 : 0
    const first = lines.findIndex((l, i) => i >= bodyStart && l.trim() !== '' && !l.startsWith('#'))
    chosen = first >= 0 ? [{line: first, count: 0, at: 0}] : []
  }
  return chosen
    .sort((a, b) => a.line - b.line)
    .map(({line, at}) => {
      const raw = lines[line].trim()
      if (raw.length <= SNIPPET_CHARS) return {line: line + 1, text: raw}
      const start = Math.max(0, Math.min(at - 40, raw.length - SNIPPET_CHARS))
      return {line: line + 1, text: `${start > 0 ? '…' : ''}${sliceWhole(raw, start, start + SNIPPET_CHARS - 2).trim()}…`}
    })
}

/**
 * The built-in model's similarity alone, with not one word of the query in any file (by keyword, or word by word:
 * the word itself or a near neighbour), is about the same for every file: a typo, a code name the tree does not hold.
 * Ranked by it, every file would be an answer; none is. A remote model's similarity says more, and stands alone.
 */
function unmatched(keyword: ReadonlyArray<unknown>, words: ReadonlyMap<string, number> | undefined): boolean {
  if (words === undefined || keyword.length > 0) return false
  for (const score of words.values()) if (score > 0) return false
  return true
}

function queryTerms(query: string): string[] {
  return query.split(/[\s\p{P}]+/u).map((t) => processTerm(t)).filter((t): t is string => Boolean(t))
}

/** Where a search's semantic ranking comes from. */
type SemanticProvider = {kind: 'remote'; config: EmbeddingsConfig} | {kind: 'builtin'} | {kind: 'off'; note?: string}

/** `JARVIS_EMBEDDINGS=off`: keyword ranking only, unless a remote provider is given explicitly. */
export function builtinEmbeddingsOff(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.JARVIS_EMBEDDINGS?.trim().toLowerCase() === 'off'
}

function semanticProvider(given: EmbeddingsConfig | false | undefined): SemanticProvider {
  if (given === false) return {kind: 'off'}
  const config = given ?? embeddingsFromEnv()
  if (config) return {kind: 'remote', config}
  if (builtinEmbeddingsOff()) return {kind: 'off', note: 'keyword search only: JARVIS_EMBEDDINGS=off'}
  return {kind: 'builtin'}
}

/**
 * The files passing the filters scored by the provider's similarity to `query`: the best FUSION_DEPTH, best first,
 * then the `also` files (the keyword candidates) not among them. The files are embedded first. The built-in model
 * also scores those files by its word-by-word match (ChunkVectorStore.wordMatch).
 */
async function semanticRanking(
  root: string,
  index: KeywordIndex,
  provider: Exclude<SemanticProvider, {kind: 'off'}>,
  query: string,
  filters: KeywordFilters,
  also: ReadonlySet<string>,
): Promise<{ranked: Array<{path: string; score: number}>; words?: Map<string, number>; embedded: number}> {
  if (provider.kind === 'remote') {
    const store = await vectorsFor(root, provider.config.model)
    const embedded = await embedStale(root, index, store, provider.config)
    const [queryVector] = await embed(provider.config, [query])
    const all = store.rank(queryVector, index.paths(filters), Infinity)
    return {ranked: [...all.slice(0, FUSION_DEPTH), ...all.slice(FUSION_DEPTH).filter((h) => also.has(h.path))], embedded}
  }
  const store = builtinStore(root)
  if (store === undefined) throw new EmbeddingsUnavailableError(`the built-in model is missing from this install (${BUILTIN_MODEL})`)
  const embedded = await store.updateFrom(index)
  const unfiltered = !filters.prefix && !filters.tags?.length && !filters.since && !filters.until
  const ranked = store.rank(store.model.embed(query), unfiltered ? undefined : (path) => index.matches(path, filters), FUSION_DEPTH, also)
  return {ranked, words: store.wordMatch(query, ranked.map((hit) => hit.path)), embedded}
}

function builtinStore(root: string): ChunkVectorStore | undefined {
  let store = chunkStores.get(root)
  if (store === undefined) {
    const model = builtinModel()
    if (model === undefined) return undefined
    store = new ChunkVectorStore(root, model, BUILTIN_MODEL)
    chunkStores.set(root, store)
  }
  return store
}

/**
 * For a long-lived process (`jarvis mcp`, `sync --watch`): loads the built-in model and the tree's vectors, and
 * embeds what changed, before the first search asks (which would otherwise pay for it). Keyword-only setups do
 * nothing. Never throws: a search would report the same problem in its note.
 */
export async function prepareSemanticSearch(root: string): Promise<void> {
  try {
    const provider = semanticProvider(undefined)
    if (provider.kind !== 'builtin') return
    const index = await indexFor(root)
    await refreshBeforeSearch(root, index)
    await builtinStore(root)?.updateFrom(index)
  } catch (error) {
    debug('semantic search not prepared: %s', (error as Error).message)
  }
}

/**
 * Searches the memory files of the tree at `root`: keyword ranking, fused with the vector ranking when an
 * embeddings provider is configured and answers. Never fails because of the provider: keyword results + `note`.
 */
export async function searchMemory(root: string, query: string, options: SearchOptions = {}): Promise<SearchResult> {
  return (await searchWithTexts(root, query, options)).result
}

/** `searchMemory`, and the text of each hit as it was read for its snippet. */
async function searchWithTexts(root: string, query: string, options: SearchOptions): Promise<{result: SearchResult; texts: Map<string, string>; index: KeywordIndex}> {
  if (!query.trim()) throw new BadInputError('the search query is empty')
  const limit = options.limit ?? 10
  if (!Number.isInteger(limit) || limit < 1) throw new BadInputError(`--limit must be a positive integer, got ${limit}`)
  const filters = filtersOf(options)
  const index = await indexFor(root)
  const provider = semanticProvider(options.embeddings)
  // A first search in this process: the vectors are read on the thread pool while this thread checks the tree.
  if (provider.kind === 'builtin' && options.refresh !== false) builtinStore(root)?.prefetch()
  const refresh = options.refresh === false ? {indexed: 0, removed: 0, files: index.files.size, rebuilt: false} : await refreshBeforeSearch(root, index)
  const started = performance.now()

  const keyword = index.search(query, filters, Math.max(limit, FUSION_DEPTH))
  const termsOf = new Map(keyword.map((hit) => [hit.path, hit.terms]))
  let mode: SearchResult['mode'] = 'keyword'
  let model: string | undefined
  let note: string | undefined
  let embedded = 0
  let ranked: Array<{path: string; score: number}> = keyword.map(({path, score}) => ({path, score}))

  if (provider.kind === 'off') {
    note = provider.note
  } else {
    try {
      // Fused over the candidates of either list: the keyword top FUSION_DEPTH and the semantic one.
      const semantic = await semanticRanking(root, index, provider, query, filters, new Set(keyword.map((h) => h.path)))
      embedded = semantic.embedded
      // A score of 0 is a file the keywords do not match that is the least similar candidate: not an answer; nor is
      // one far below the best (MIN_SHARE_OF_BEST); nor any, when no word of the query is found (unmatched).
      const fused = semantic.words
        ? convexFusion(keyword, semantic.ranked, BUILTIN_WEIGHTS.keyword, {scores: semantic.words, weight: BUILTIN_WEIGHTS.words}, BUILTIN_MIN_SPREAD)
        : convexFusion(keyword, semantic.ranked)
      // And when the built-in model holds no word of the query whole (typos: "webhok verifcation"), its vector is made
      // of word pieces and as near every file: the keyword ranking alone, or the files it ranks on noise come along.
      if (unmatched(keyword, semantic.words)) ranked = []
      else if (semantic.words?.size === 0) ranked = keyword.map(({path, score}) => ({path, score}))
      else ranked = fused.filter((h) => h.score > 0 && h.score >= fused[0].score * MIN_SHARE_OF_BEST)
      mode = 'hybrid'
      model = provider.kind === 'builtin' ? BUILTIN_MODEL : provider.config.model
    } catch (error) {
      if (!(error instanceof EmbeddingsUnavailableError)) throw error
      note = `keyword search only: the embeddings provider failed (${error.message})`
      debug(note)
    }
  }

  const terms = queryTerms(query)
  const hits: SearchHit[] = []
  const top = ranked.slice(0, limit)
  // Read at once: each read checks every path component for symlinks, and one after the other they were most of a warm search.
  const texts = await Promise.all(top.map(({path}) => readMemoryFile(root, path)))
  const read = new Map<string, string>()
  for (const [i, {path, score}] of top.entries()) {
    const text = texts[i]
    if (text === null) continue
    read.set(path, text)
    hits.push({path, title: index.metaOf(path)?.title, score: Number(score.toPrecision(6)), snippet: snippetOf(text, [...(termsOf.get(path) ?? []), ...terms])})
  }
  const stats: SearchStats = {...refresh, embedded, queryMs: Number((performance.now() - started).toFixed(2))}
  return {result: {hits, mode, ...(model ? {model} : {}), ...(note ? {note} : {}), stats}, texts: read, index}
}

/** A hit with what its text says: title, tags, body and one-line summary (as `toSearchDocument` and `summaryOf` give them). */
export interface SearchedDocument {
  hit: SearchHit
  title?: string
  tags: string[]
  body: string
  summary: string
  /** The project its front matter names (`project: shop`), if any. */
  project?: string
}

/**
 * `searchMemory`'s hits with their documents, for a caller that weighs each hit's text (an agent's prompt): what the
 * index made of each text when it indexed it, so that no front matter is parsed again; a text that changed since
 * is parsed here.
 */
export async function searchDocuments(root: string, query: string, options: SearchOptions = {}): Promise<{result: SearchResult; documents: SearchedDocument[]}> {
  const {result, texts, index} = await searchWithTexts(root, query, options)
  const documents = result.hits.map((hit): SearchedDocument => {
    const text = texts.get(hit.path)!
    const stored = options.refresh === false ? undefined : index.documentOf(hit.path, text)
    if (stored) return {hit, ...stored, project: frontMatterProject(text.slice(0, text.length - stored.body.length))}
    const doc = toSearchDocument(hit.path, text)
    return {hit, title: doc.title, tags: doc.tags, body: doc.body, summary: summaryOf(doc), project: doc.project}
  })
  return {result, documents}
}

/** Embeds the files whose vector is missing or was made from other content; saves what was computed, even on failure. */
async function embedStale(root: string, index: KeywordIndex, store: VectorStore, provider: EmbeddingsConfig): Promise<number> {
  const current = new Map([...index.files].map(([path, entry]) => [path, entry.hash]))
  const stale = store.stale(current)
  if (stale.length === 0) return 0
  let done = 0
  try {
    const inputs: string[] = []
    const paths: string[] = []
    for (const path of stale) {
      const text = await readMemoryFile(root, path)
      if (text === null) continue
      const doc = toSearchDocument(path, text)
      inputs.push([doc.title, doc.tags.join(' '), doc.body].filter(Boolean).join('\n').slice(0, EMBED_MAX_CHARS))
      paths.push(path)
    }
    await embed(provider, inputs, (vectors, from) => {
      vectors.forEach((vector, i) => store.set(paths[from + i], current.get(paths[from + i])!, vector))
      done += vectors.length
    })
  } finally {
    if (done > 0) await store.save().catch((error) => debug('vectors not saved: %s', (error as Error).message))
  }
  return done
}

/**
 * For `jarvis memory search`: the memory-file hits to merge with the event-log hits. Same ranking and result
 * as `searchMemory`; kept as its own name so the memory command does not depend on recall's defaults.
 */
export async function searchMemoryFiles(root: string, query: string, options: SearchOptions = {}): Promise<SearchResult> {
  return searchMemory(root, query, options)
}

export type {IndexedListing} from './watched.js'

/**
 * The files `accept` takes, sorted by path, at most `limit`, with what `memory ls` shows of each, from the search
 * index of a tree this process watches (watchSearchIndex): the files the watcher reported are brought in first, and
 * the index is the tree. Undefined for a tree it does not watch: the listing is then made from the files and the
 * listing cache (files/list.ts), which costs a new process less than opening the index.
 */
export async function listIndexedFiles(root: string, accept: (path: string) => boolean, limit: number): Promise<IndexedListing[] | undefined> {
  return watchedTrees.get(root)?.list(accept, limit)
}

export const RECALL_MAX_HITS = 10
export const RECALL_SUMMARY_CHARS = SUMMARY_CHARS
/** The whole block never exceeds this many characters: it goes into every system prompt. */
export const RECALL_MAX_CHARS = 1600

export interface RecallResult {
  block: string
  hits: SearchHit[]
  mode: SearchResult['mode']
  /** The embedding model of a hybrid ranking (SearchResult.model). */
  model?: string
  note?: string
}

export function checkRecallLimit(limit: number | undefined): number {
  const checked = limit ?? 3
  if (!Number.isInteger(checked) || checked < 1 || checked > RECALL_MAX_HITS) throw new BadInputError(`--limit must be between 1 and ${RECALL_MAX_HITS}, got ${checked}`)
  return checked
}

/** A summary in the block is never cut shorter than this to make room for more files. */
const RECALL_MIN_SUMMARY_CHARS = 48

/** `text` cut to at most `max` characters, on a word boundary when one is near, with an ellipsis. PURE. */
function cutSummary(text: string, max: number): string {
  if (text.length <= max) return text
  const cut = headOf(text, max - 1)
  const space = cut.lastIndexOf(' ')
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd()}…`
}

/**
 * The block itself, from ranked hits and their texts (or their summaries, `summaryOf` of the text, as the index
 * keeps them): what `recall` answers, for any store. Every hit asked for is shown: when the full summaries would
 * pass RECALL_MAX_CHARS they are shortened alike (never below RECALL_MIN_SUMMARY_CHARS), and only then are the
 * last hits left out. PURE.
 */
export function recallBlock(entries: Array<{hit: SearchHit} & ({text: string} | {summary: string})>): {block: string; hits: SearchHit[]} {
  const header = '[MEMORY CONTEXT]'
  const all = entries.map((given) => {
    const {hit} = given
    const summary = ('summary' in given ? given.summary : summaryOf(toSearchDocument(hit.path, given.text), RECALL_SUMMARY_CHARS)) || hit.title || ''
    return {hit, summary: summary.replace(/[“”]/g, '"')}
  })
  const render = (list: typeof all, max: number) => list.map(({hit, summary}) => `- ${hit.path}\n  Summary: “${cutSummary(summary, max)}”`)
  const fits = (list: typeof all, max: number) => render(list, max).reduce((length, entry) => length + entry.length + 1, header.length) <= RECALL_MAX_CHARS
  let shown = all
  while (shown.length > 0 && !fits(shown, RECALL_MIN_SUMMARY_CHARS)) shown = shown.slice(0, -1)
  // The longest summary length at which the shown hits fit (the full length when they already do).
  let max = RECALL_SUMMARY_CHARS
  if (!fits(shown, max)) {
    let low = RECALL_MIN_SUMMARY_CHARS
    while (low < max - 1) {
      const mid = Math.floor((low + max) / 2)
      if (fits(shown, mid)) low = mid
      else max = mid
    }
    max = low
  }
  const lines = [header, ...render(shown, max)]
  if (shown.length === 0) lines.push('(no memory file matches)')
  return {block: lines.join('\n'), hits: shown.map(({hit}) => hit)}
}

/**
 * Keyword search over an in-memory index (MemoryTextIndex: the server's file store), with the same filters,
 * ranking and snippets as `searchMemory` on a tree. `textsOf` gives the texts of the ranked paths.
 */
export async function searchTexts(
  index: MemoryTextIndex,
  query: string,
  textsOf: (paths: string[]) => Promise<Map<string, string>>,
  options: Pick<SearchOptions, 'limit' | 'tags' | 'prefix' | 'since' | 'until' | 'now'> = {},
): Promise<SearchHit[]> {
  if (!query.trim()) throw new BadInputError('the search query is empty')
  const limit = options.limit ?? 10
  if (!Number.isInteger(limit) || limit < 1) throw new BadInputError(`--limit must be a positive integer, got ${limit}`)
  const terms = queryTerms(query)
  const ranked = index.search(query, filtersOf(options), limit)
  const texts = await textsOf(ranked.map((hit) => hit.path))
  const hits: SearchHit[] = []
  for (const {path, score, terms: matched} of ranked) {
    const text = texts.get(path)
    if (text === undefined) continue
    hits.push({path, title: index.metaOf(path)?.title, score: Number(score.toPrecision(6)), snippet: snippetOf(text, [...matched, ...terms])})
  }
  return hits
}
