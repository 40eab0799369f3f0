/**
 * The built-in semantic ranking (docs/decisions/embeddings.md): the static model shipped with jarvis
 * (static-model.ts), each memory file cut into chunks of about 40 words whose vectors are kept beside the keyword
 * index in `.nexus/search/vectors-<model>.bin` (vector-log.ts) with the content hash each file's were made from. A
 * file is embedded again only when its hash changes; a file's score is its best chunk's cosine similarity. Beside the
 * vectors, the model's rows of the file's words, for the word-by-word match (`wordMatch`).
 */
import {existsSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {crc32} from 'node:zlib'

import createDebug from 'debug'

import {nexusDir} from '../store/root.js'
import {openRowDatabase, removeNexusSqlite, type RowDatabase} from '../store/sqlite-open.js'
import {type SearchDocument, toSearchDocument} from './document.js'
import {wordsOf} from './fts.js'
import {readAll} from './keyword.js'
import {StaticModel} from './static-model.js'
import {appendLog, appendMark, encodeRecord, type FileVectors, logHeader, type LogCrc, type LogRead, type LogStamp, readLog, readLogInBackground, readRecords, recordOf, replaceLog, stampOf, vectorsOfRecord} from './vector-log.js'

const debug = createDebug('jarvis:search')

/** The built-in model's name: in `--json` answers, and the key of its vectors (a new model embeds everything once). */
export const BUILTIN_MODEL = 'jarvis-static-use-v1'
/** Its file, under the package's `assets/embeddings/`. */
const BUILTIN_MODEL_FILE = 'jarvis-static-use-v1.bin'
/** About this many words per chunk, cut at line ends (a longer line is cut between words). */
export const CHUNK_WORDS = 40
/** At most this many chunks per file: past them a file's words add nothing to its vectors. */
const MAX_CHUNKS = 64
/**
 * In the word-by-word match, a query word and a file's word this similar or less count as no match: below it the
 * model's neighbours are mostly noise (measured, docs/decisions/embeddings.md).
 */
export const WORD_MATCH_FLOOR = 0.5
/** Files embedded between two writes of their vectors while a tree is embedded. */
const WRITE_BATCH = 500

/** The folder of the package holding this module: the first parent with the model's asset (src/, dist/, dist/chunks/ alike). */
function assetPath(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'assets', 'embeddings', BUILTIN_MODEL_FILE)
    if (existsSync(candidate)) return candidate
    const parent = dirname(dir)
    if (parent === dir) break
    dir = parent
  }
  return undefined
}

let model: StaticModel | undefined

/** The built-in model, loaded at its first use in the process; undefined when the package lacks its file. */
export function builtinModel(): StaticModel | undefined {
  if (model) return model
  const path = assetPath()
  if (path === undefined) return undefined
  model = StaticModel.load(path)
  return model
}

/** The texts whose vectors stand for a file: its title and tags, then its body in chunks of about CHUNK_WORDS words. PURE. */
export function chunksOf(doc: Pick<SearchDocument, 'title' | 'tags' | 'body'>): string[] {
  const chunks: string[] = []
  const head = [doc.title ?? '', doc.tags.join(' ')].join(' ').trim()
  if (head) chunks.push(head)
  let current: string[] = []
  let count = 0
  const flush = () => {
    if (current.length > 0) chunks.push(current.join('\n'))
    current = []
    count = 0
  }
  for (const line of doc.body.split(/\r?\n/)) {
    const words = line.split(/\s+/).filter(Boolean)
    if (words.length === 0 || /^---\s*$/.test(line)) continue
    for (let from = 0; from < words.length; from += CHUNK_WORDS) {
      const part = words.slice(from, from + CHUNK_WORDS)
      if (count + part.length > CHUNK_WORDS) flush()
      current.push(part.join(' '))
      count += part.length
    }
    if (chunks.length >= MAX_CHUNKS) break
  }
  flush()
  return chunks.slice(0, MAX_CHUNKS)
}

/** The model's rows of the words of a file (title, tags, body; stop words and words it does not hold left out), each once, ascending. */
export function wordRowsOf(model: StaticModel, doc: Pick<SearchDocument, 'title' | 'tags' | 'body'>): Uint32Array {
  const rows = new Set<number>()
  for (const text of [doc.title ?? '', ...doc.tags, doc.body]) {
    for (const word of wordsOf(text)) {
      const row = model.rowOf(word)
      if (row !== undefined) rows.add(row)
    }
  }
  return Uint32Array.from(rows).sort()
}

/** Per chunk, what turns the dot product of a unit query with its int8 row into a cosine similarity: 1 over the row's length. PURE. */
export function factorsOf(rows: Int8Array, dims: number): Float32Array {
  const factors = new Float32Array(rows.length / dims)
  for (let c = 0; c < factors.length; c++) {
    let sum = 0
    for (let i = c * dims; i < (c + 1) * dims; i++) sum += rows[i] * rows[i]
    factors[c] = sum > 0 ? 1 / Math.sqrt(sum) : 0
  }
  return factors
}

/** Each vector as int8 with its own scale (the scale drops out of a cosine, so only the rows are kept). PURE. */
function quantize(vectors: Float32Array[], dims: number): Int8Array {
  const rows = new Int8Array(vectors.length * dims)
  vectors.forEach((vector, c) => {
    let max = 0
    for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(vector[i]))
    const scale = max / 127 || 1
    for (let i = 0; i < dims; i++) rows[c * dims + i] = Math.round(vector[i] / scale)
  })
  return rows
}

/** A copy of a blob's bytes, whole 4-byte units only (a blob's view need not be aligned). */
function aligned(blob: Uint8Array): ArrayBuffer {
  const copy = new Uint8Array(blob.byteLength - (blob.byteLength % 4))
  copy.set(blob.subarray(0, copy.length))
  return copy.buffer
}

/** The log of `model`'s vectors under `.nexus/` (vector-log.ts). */
export function vectorsFileOf(model: string): string {
  return `search/vectors-${model.replace(/[^A-Za-z0-9._-]+/g, '_')}.bin`
}

export const VECTORS_FILE = vectorsFileOf(BUILTIN_MODEL)
/** Where jarvis kept these vectors before, one SQLite row per file: taken into the log once, then removed. */
export const LEGACY_VECTORS_FILE = 'search/vectors.sqlite'
/** A log holding this much more than its live records (replaced and removed files) is written again without them. */
const COMPACT_SLACK_BYTES = 1 << 20

/**
 * One model's chunk vectors for one tree, read from disk at the first use and kept in memory: the log of
 * vector-log.ts, read in one go, each file's vectors views into its bytes. New vectors and removals are appended to
 * it; it is written again whole when it was torn, of another model or format, or mostly dead records. A log that
 * cannot be written (a read-only `.nexus/`) leaves the vectors in memory for this process.
 *
 * Its own file, not a table of the keyword index: writing vectors must not move the index's data version, which
 * tells every other process to read the index's state again (keyword.ts).
 */
export class ChunkVectorStore {
  private readonly files = new Map<string, FileVectors>()
  /** The sum of the files' records' CRC-32s (mod 2³²): what a sync mark says of the records before it (LogMark). */
  private crcSum = 0
  /** The digest of the keyword index's manifest the vectors are known to be up to date with (a sync mark's). */
  private syncedManifest: number | undefined
  /** The sync mark read lacked the CRC-32 of the log before it (an older jarvis's), or it did not hold: one is appended. */
  private markUnvouched = false
  /** Per word row, how many files hold it (the word-by-word match weighs a rare word more). */
  private readonly fileCounts: Uint32Array
  private loaded = false
  /** The first load under way: calls made meanwhile wait for the same one. */
  private loading: Promise<void> | undefined
  /** The log's read started by prefetch, until the load takes it. */
  private ahead: Promise<{read: ReturnType<typeof readLog>} | {error: unknown}> | undefined
  /** The keyword index's generation the vectors were last brought up to date with (KeywordIndex.generation). */
  private syncedWith: number | undefined
  private readonly file: string
  /** The log as this process last read or wrote it: whether another replaced it since, and where to read on from. */
  private stamp: LogStamp | undefined
  /** The CRC-32 of the log as this process last read or wrote it (up to where), for the sync mark it appends. */
  private known: LogCrc | undefined
  /** Write the log whole at the next save: missing, torn, another model's, or holding an older jarvis's vectors. */
  private rewrite = false
  /** An older jarvis's `vectors.sqlite` was read: removed once the log is written. */
  private legacy = false
  /** False after a failed write: this process keeps its vectors in memory. */
  private writable = true

  constructor(
    readonly root: string,
    readonly model: StaticModel,
    readonly modelName: string,
  ) {
    this.file = join(nexusDir(root), vectorsFileOf(modelName))
    this.fileCounts = new Uint32Array(model.wordCount)
  }

  /** Nothing is held open between calls: kept for the callers that close what they opened. */
  close(): void {}

  /**
   * `update` from the keyword index of the tree: skipped, without reading the index's files, when the index's
   * manifest (`freshManifest`, unchanged since a refresh checked it against the tree) is the one the vectors were last
   * brought up to date with — in this process or, by the log's sync mark, in another. After an update against a
   * checked manifest, the mark is appended.
   */
  async updateFrom(index: {readonly files: ReadonlyMap<string, {hash: string}>; readonly generation: number; readonly freshManifest: number | undefined}): Promise<number> {
    const manifest = index.freshManifest
    await this.loadOnce()
    if (manifest !== undefined && manifest === this.syncedManifest) {
      // So that the next process checks one checksum, not one per record: once, and only with a CRC-32 to give.
      if (this.markUnvouched && this.known !== undefined && this.writable) this.appendMark(manifest)
      return 0
    }
    const embedded = await this.update(index.files, index.generation)
    if (manifest !== undefined && this.writable && !this.rewrite) {
      this.syncedManifest = manifest
      this.appendMark(manifest)
    }
    return embedded
  }

  private appendMark(manifest: number): void {
    this.markUnvouched = false
    try {
      const appended = appendMark(this.file, {manifest, files: this.files.size, crcSum: this.crcSum}, this.known)
      if (appended) this.known = appended.known
    } catch (error) {
      debug('vectors sync mark not saved: %s', (error as Error).message)
    }
  }

  /**
   * Brings the vectors up to date with `current` (path → content hash, every file of the index): files gone are
   * dropped, and files with no vector for their hash are read and embedded (another process may have written them
   * meanwhile: those are read instead). Returns how many files were embedded.
   */
  async update(current: ReadonlyMap<string, {hash: string}>, generation?: number): Promise<number> {
    if (generation !== undefined && generation === this.syncedWith) return 0
    const embedded = await this.updateNow(current)
    this.syncedWith = generation
    return embedded
  }

  private async updateNow(current: ReadonlyMap<string, {hash: string}>): Promise<number> {
    const first = await this.loadOnce()
    this.syncedManifest = undefined
    const staleOf = () => [...current].filter(([path, {hash}]) => this.files.get(path)?.hash !== hash).map(([path, {hash}]): [string, string] => [path, hash])
    // What other processes appended since this one read the log: the vectors it lacks are read, not embedded again;
    // and where the log's last word on a file is no longer what this process keeps for it (another process, whose
    // tree was older, removed it or wrote an older version's vectors), this process's vectors are appended again,
    // or a new process would find the file missing from the log and embed it again.
    const behind = first ? [] : this.catchUp(current)
    const stale = staleOf()
    const gone = [...this.files.keys()].filter((path) => !current.has(path))
    for (const path of gone) this.keep(path, undefined)
    await this.save([...gone.map((path) => encodeRecord(path, undefined)), ...behind.map((vectors) => recordOf(vectors))])
    let embedded = 0
    for (let from = 0; from < stale.length; from += WRITE_BATCH) {
      const batch = stale.slice(from, from + WRITE_BATCH)
      const texts = await readAll(this.root, batch.map(([path]) => path))
      const records: Uint8Array[] = []
      batch.forEach(([path, hash], i) => {
        const text = texts[i]
        if (text === null) return
        const doc = toSearchDocument(path, text)
        const rows = quantize(chunksOf(doc).map((chunk) => this.model.embed(chunk)), this.model.dims)
        const record = encodeRecord(path, {hash, factors: factorsOf(rows, this.model.dims), rows, words: wordRowsOf(this.model, doc)})
        records.push(record)
        this.keep(path, vectorsOfRecord(record, this.model.dims))
      })
      await this.save(records)
      embedded += records.length
    }
    if (embedded > 0) debug('embedded %d file(s) with %s', embedded, this.modelName)
    let live = 0
    for (const {length} of this.files.values()) live += length
    if (this.rewrite || (this.stamp !== undefined && this.stamp.size > 2 * live + COMPACT_SLACK_BYTES)) await this.compact()
    return embedded
  }

  /**
   * Starts reading the log on the thread pool, for a first search whose own thread checks the tree meanwhile (a new
   * process: one `lstat` per file and folder); the load takes what it read. Nothing once the vectors are loaded.
   */
  prefetch(): void {
    if (this.loaded || this.loading !== undefined || this.ahead !== undefined) return
    this.ahead = readLogInBackground(this.file).then(
      (read) => ({read}),
      (error: unknown) => ({error}),
    )
  }

  /** Loads the vectors at the first call; true when this call did. */
  private async loadOnce(): Promise<boolean> {
    if (this.loaded) return false
    const first = this.loading === undefined
    this.loading ??= this.load().then(
      () => void (this.loaded = true),
      (error: unknown) => {
        // Tried again by the next call, as before the load was shared.
        this.loading = undefined
        throw error
      },
    )
    await this.loading
    return first
  }

  /** Reads the log (or, with none, an older jarvis's database): the last record of each path wins. */
  private async load(): Promise<void> {
    let read: ReturnType<typeof readLog>
    try {
      const ahead = await this.ahead
      this.ahead = undefined
      if (ahead !== undefined && 'error' in ahead) throw ahead.error
      // Read ahead, and grown or replaced since (another process wrote to it): read again.
      read = ahead === undefined || !sameLog(ahead.read?.stamp, stampOf(this.file)) ? readLog(this.file) : ahead.read
    } catch (error) {
      debug('vectors unreadable, embedding again: %s', (error as Error).message)
    }
    if (read === undefined) {
      this.rewrite = true
      this.readLegacy()
      return
    }
    const result = readRecords(read.bytes, 0, this.modelName, this.model.dims, (path, vectors) => this.keep(path, vectors))
    this.stamp = {ino: read.stamp.ino, size: result.end}
    this.known = result.crc === undefined || result.torn ? undefined : {ino: read.stamp.ino, end: result.end, crc: result.crc}
    const {mark} = result
    if (mark !== undefined && mark.files === this.files.size && mark.crcSum === this.crcSum) {
      this.syncedManifest = mark.manifest
      this.markUnvouched = !result.vouched
    }
    if (result.foreign || result.torn) {
      debug('vectors log %s, written again', result.foreign ? 'of another model or format' : `torn at byte ${result.end}`)
      this.rewrite = true
    }
  }

  /**
   * What other processes appended to the log since this one read it (all of it when one replaced it): the vectors
   * of `current`'s hashes that this process lacks are taken. Returns the vectors this process keeps for `current`
   * whose file the log's last record no longer gives them to (removed, another hash, or left out of a log written
   * anew): the records to append again.
   */
  private catchUp(current: ReadonlyMap<string, {hash: string}>): FileVectors[] {
    try {
      const now = stampOf(this.file)
      if (now === undefined || (this.stamp !== undefined && now.ino === this.stamp.ino && now.size <= this.stamp.size)) return []
      const from = this.stamp !== undefined && now.ino === this.stamp.ino ? this.stamp.size : 0
      const read = readLog(this.file, from)
      if (read === undefined) return []
      /** Per file met, whether its last record read gives it the vectors of its hash in `current`. */
      const lastAgrees = new Map<string, boolean>()
      const result = readRecords(read.bytes, from, this.modelName, this.model.dims, (path, vectors) => {
        const agrees = vectors !== undefined && current.get(path)?.hash === vectors.hash
        lastAgrees.set(path, agrees)
        if (agrees && this.files.get(path)?.hash !== vectors.hash) this.keep(path, vectors)
      })
      this.stamp = {ino: read.stamp.ino, size: from + result.end}
      this.known = this.knownAfterCatchUp(read, from, result)
      if (result.foreign || result.torn) this.rewrite = true
      const behind: FileVectors[] = []
      for (const path of from === 0 ? this.files.keys() : lastAgrees.keys()) {
        const vectors = this.files.get(path)
        if (vectors !== undefined && lastAgrees.get(path) !== true && current.get(path)?.hash === vectors.hash) behind.push(vectors)
      }
      return behind
    } catch (error) {
      debug('vectors of other processes not read: %s', (error as Error).message)
      return []
    }
  }

  /**
   * The log's CRC-32 after reading `read` from `from`: carried on over what this process did not append itself (its
   * own appends, which `stamp` does not count, are read again here), taken whole from a log read whole.
   */
  private knownAfterCatchUp(read: {bytes: Uint8Array; stamp: LogStamp}, from: number, result: LogRead): LogCrc | undefined {
    const {ino} = read.stamp
    if (result.torn) return undefined
    if (from === 0) return result.crc === undefined ? undefined : {ino, end: result.end, crc: result.crc}
    const known = this.known
    if (known?.ino !== ino || known.end < from || known.end > from + result.end) return undefined
    return {ino, end: from + result.end, crc: crc32(read.bytes.subarray(known.end - from, result.end), known.crc)}
  }

  /**
   * The vectors an older jarvis kept in `vectors.sqlite` (one row per file, with a `words` column since the word
   * match): taken as they are, so an upgrade embeds nothing again. Rows without words, or a database that cannot be
   * read, are embedded again.
   */
  private readLegacy(): void {
    const file = join(nexusDir(this.root), LEGACY_VECTORS_FILE)
    if (!existsSync(file)) return
    this.legacy = true
    const dims = this.model.dims
    let db: RowDatabase | undefined
    try {
      db = openRowDatabase(file)
      const rows = db.prepare('SELECT path, hash, rows, words FROM vectors WHERE model = ? AND words IS NOT NULL').all(this.modelName)
      for (const [path, hash, blob, words] of rows as Array<[string, string, Uint8Array, Uint8Array]>) {
        if (blob.byteLength % dims !== 0) continue
        const rows = new Int8Array(new Uint8Array(blob).buffer)
        this.keep(path, vectorsOfRecord(encodeRecord(path, {hash, factors: factorsOf(rows, dims), rows, words: new Uint32Array(aligned(words))}), dims))
      }
      debug('took the vectors of %d file(s) from %s', rows.length, LEGACY_VECTORS_FILE)
    } catch (error) {
      debug('%s unreadable, embedding again: %s', LEGACY_VECTORS_FILE, (error as Error).message)
    } finally {
      try {
        db?.close()
      } catch {
        // a database that failed to open has nothing to close
      }
    }
  }

  /** Keeps (or, undefined, drops) a file's vectors, and the count of files holding each word. */
  private keep(path: string, vectors: FileVectors | undefined): void {
    const counts = this.fileCounts
    const before = this.files.get(path)
    if (before) {
      const {u32} = before.seg
      for (let k = before.wordsAt; k < before.wordsAt + before.words; k++) counts[u32[k]]--
      this.crcSum = (this.crcSum - before.crc) >>> 0
    }
    if (vectors === undefined) this.files.delete(path)
    else {
      this.files.set(path, vectors)
      this.crcSum = (this.crcSum + vectors.crc) >>> 0
      const {u32} = vectors.seg
      for (let k = vectors.wordsAt; k < vectors.wordsAt + vectors.words; k++) counts[u32[k]]++
    }
  }

  /** Appends `records` to the log, or writes it whole (see `rewrite`). A failed write loses nothing but time. */
  private async save(records: Uint8Array[]): Promise<void> {
    if (!this.writable || records.length === 0) return
    try {
      const appended = this.rewrite ? false : appendLog(this.file, records, this.known)
      if (appended) this.known = appended.known
      else await this.compact()
    } catch (error) {
      debug('vectors not saved: %s', (error as Error).message)
      this.writable = false
    }
  }

  /** Writes the log whole: the header and one record per file kept. */
  private async compact(): Promise<void> {
    if (!this.writable) return
    try {
      const records: Uint8Array[] = []
      for (const vectors of this.files.values()) records.push(recordOf(vectors))
      const written = await replaceLog(this.file, logHeader(this.modelName, this.model.dims), records)
      this.stamp = written.stamp
      this.known = written.known
      this.rewrite = false
      if (this.legacy) removeNexusSqlite(this.root, LEGACY_VECTORS_FILE)
      this.legacy = false
    } catch (error) {
      debug('vectors not saved: %s', (error as Error).message)
      this.writable = false
    }
  }

  /**
   * The word-by-word match of `query` against each of `paths` ("late interaction" with the model's word vectors, as
   * in ColBERT's MaxSim, here with static vectors): each query word the model holds (stop words left out) finds its
   * most similar word in the file — 1 for the word itself, its cosine similarity above WORD_MATCH_FLOOR for a
   * neighbour ("hike" and "trail", "mail" and "email"), else 0 — weighted by how rare it is among the files (BM25's
   * idf); the file's score is the sum. Unlike a chunk's mean vector it keeps each query word apart, so a rare word
   * that matches is not drowned by the rest. Files with no vectors are left out.
   */
  wordMatch(query: string, paths: Iterable<string>): Map<string, number> {
    const model = this.model
    const total = this.files.size
    const queryRows = [...new Set(wordsOf(query).map((word) => model.rowOf(word)).filter((row): row is number => row !== undefined))]
    const weights = queryRows.map((row) => {
      const count = this.fileCounts[row] ?? 0
      return Math.log(1 + (total - count + 0.5) / (count + 0.5))
    })
    // Each query word's similarity to each word row met, computed once per query.
    const seen = queryRows.map(() => new Map<number, number>())
    const scores = new Map<string, number>()
    if (queryRows.length === 0) return scores
    for (const path of paths) {
      const file = this.files.get(path)
      if (file === undefined) continue
      let score = 0
      queryRows.forEach((queryRow, q) => {
        let best = 0
        const known = seen[q]
        const {u32} = file.seg
        for (let k = file.wordsAt; k < file.wordsAt + file.words; k++) {
          const row = u32[k]
          let similarity = known.get(row)
          if (similarity === undefined) known.set(row, (similarity = model.similarity(queryRow, row)))
          if (similarity > best) best = similarity
          if (best === 1) break
        }
        if (best > WORD_MATCH_FLOOR) score += weights[q] * best
      })
      scores.set(path, score)
    }
    return scores
  }

  /**
   * The files with a vector that `accept` takes, scored by their best chunk's cosine similarity to `query` (a unit
   * vector): the best `limit`, best first (equal scores by path), then those of `also` that are not among them.
   *
   * A new process runs this loop in V8's interpreter for most of its one search, where every floating-point value is
   * a heap object: scored in floats, 10,000 files made ~15 MB of garbage. So each file is first screened with the query
   * in integers (queryInIntegers: small integers are not heap objects), and scored in floats only when its screened
   * score, widened by how far the integer query can be off, could pass the floor: the answer is the floats' own.
   */
  rank(query: Float32Array, accept: ((path: string) => boolean) | undefined, limit: number, also: ReadonlySet<string> = new Set()): Array<{path: string; score: number}> {
    const dims = this.model.dims
    const screen = queryInIntegers(query)
    const top: Array<{path: string; score: number}> = []
    const extra: Array<{path: string; score: number}> = []
    // The last of the best `limit` at the latest cut: a file must rank before it (byScore) to be kept.
    let floor: {path: string; score: number} = {path: '', score: -Infinity}
    // forEach, not for-of: no [path, file] pair per file.
    this.files.forEach((file, path) => {
      if (accept && !accept(path)) return
      if (floor.score !== -Infinity && !also.has(path) && screenedBest(screen, file, dims) < floor.score) return
      const best = bestChunkScore(query, file, dims)
      if (best === -Infinity) return
      const hit = {path, score: best}
      if (byScore(hit, floor) < 0) {
        top.push(hit)
        // Kept short: sorted and cut back to `limit` whenever it doubles; the cut's last one is the new floor.
        if (top.length >= 2 * limit) {
          top.sort(byScore)
          for (const dropped of top.splice(limit)) if (also.has(dropped.path)) extra.push(dropped)
          floor = top[top.length - 1]
        }
      } else if (also.has(path)) extra.push(hit)
    })
    top.sort(byScore)
    for (const dropped of top.splice(limit)) if (also.has(dropped.path)) extra.push(dropped)
    return [...top, ...extra]
  }
}

/** Whether two stamps of the log (undefined: none) are of the same file at the same size. */
function sameLog(a: LogStamp | undefined, b: LogStamp | undefined): boolean {
  return a === undefined ? b === undefined : b !== undefined && a.ino === b.ino && a.size === b.size
}

/** A file's best chunk score: each chunk's int8 row · the query, times the chunk's scale. -Infinity: no chunk. */
export function bestChunkScore(query: Float32Array, file: FileVectors, dims: number): number {
  const {i8: rows, f32: factors} = file.seg
  const {factorsAt, chunks} = file
  let best = -Infinity
  for (let c = 0, from = file.rowsAt; c < chunks; c++, from += dims) {
    let dot = 0
    for (let i = 0; i < dims; i += 4) dot += query[i] * rows[from + i] + query[i + 1] * rows[from + i + 1] + query[i + 2] * rows[from + i + 2] + query[i + 3] * rows[from + i + 3]
    const score = dot * factors[factorsAt + c]
    if (score > best) best = score
  }
  return best
}

/** The query scaled to integers, and by how much each chunk's dot product with it can differ from the floats'. */
interface IntegerQuery {
  values: Int32Array
  scale: number
  /** The most |Σ qᵢ·rᵢ − Σ round(qᵢ·scale)·rᵢ / scale| can be over a row of int8 values: ½ · 128 · dims / scale. */
  slack: number
}

/** Integers below 2³⁰ stay small integers to V8: a dot product of `dims` int8 values with the scaled query must too. */
export function queryInIntegers(query: Float32Array): IntegerQuery {
  const dims = query.length
  let largest = 0
  for (let i = 0; i < dims; i++) largest = Math.max(largest, Math.abs(query[i]))
  // |Σ qᵢ·rᵢ| ≤ dims · 128 · max|qᵢ|·scale < 2³⁰.
  const scale = largest === 0 ? 1 : Math.floor((2 ** 30 - 1) / (dims * 128 * largest))
  const values = new Int32Array(dims)
  for (let i = 0; i < dims; i++) values[i] = Math.round(query[i] * scale)
  return {values, scale, slack: (64 * dims) / scale}
}

/**
 * An upper bound of bestChunkScore from the integer query: each chunk's integer dot product, scaled back, widened by
 * the query's rounding (`slack`) and a margin for the floats' own rounding, times the chunk's scale. The loop is
 * bestChunkScore's on purpose, not shared with it: one function taking both array types would make V8's optimized
 * code handle both, slower for each.
 */
export function screenedBest({values, scale, slack}: IntegerQuery, file: FileVectors, dims: number): number {
  const {i8: rows, f32: factors} = file.seg
  const {factorsAt, chunks} = file
  let best = -Infinity
  for (let c = 0, from = file.rowsAt; c < chunks; c++, from += dims) {
    let dot = 0
    for (let i = 0; i < dims; i += 4) dot += values[i] * rows[from + i] + values[i + 1] * rows[from + i + 1] + values[i + 2] * rows[from + i + 2] + values[i + 3] * rows[from + i + 3]
    const factor = factors[factorsAt + c]
    const bound = (dot / scale) * factor + (slack + 1e-6) * Math.abs(factor)
    if (bound > best) best = bound
  }
  return best
}

const byScore = (a: {path: string; score: number}, b: {path: string; score: number}) => b.score - a.score || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)
