/**
 * The built-in semantic ranking (docs/decisions/embeddings.md): the static model shipped with jarvis
 * (static-model.ts), each memory file cut into chunks of about 40 words whose vectors are kept beside the keyword
 * index in `.nexus/search/vectors.sqlite`, one row per file and model with the content hash it was made from. A
 * file is embedded again only when its hash changes; a file's score is its best chunk's cosine similarity. Beside the
 * vectors, the model's rows of the file's words, for the word-by-word match (`wordMatch`).
 *
 * Its own database, not a table of the keyword index: writing vectors must not move the index's data version,
 * which tells every other process to read the index's state again (keyword.ts).
 */
import {existsSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

import createDebug from 'debug'

import {openNexusRowDatabase, openRowDatabase, type RowDatabase, type RowStatement} from '../store/sqlite-open.js'
import {type SearchDocument, toSearchDocument} from './document.js'
import {wordsOf} from './fts.js'
import {readAll} from './keyword.js'
import {StaticModel} from './static-model.js'

const debug = createDebug('jarvis:search')

/** The built-in model's name: in `--json` answers, and the key of its vectors (a new model embeds everything once). */
export const BUILTIN_MODEL = 'jarvis-static-use-v1'
/** Its file, under the package's `assets/embeddings/`. */
const BUILTIN_MODEL_FILE = 'jarvis-static-use-v1.bin'
export const VECTORS_FILE = 'search/vectors.sqlite'
/** About this many words per chunk, cut at line ends (a longer line is cut between words). */
export const CHUNK_WORDS = 40
/** At most this many chunks per file: past them a file's words add nothing to its vectors. */
const MAX_CHUNKS = 64
/**
 * In the word-by-word match, a query word and a file's word this similar or less count as no match: below it the
 * model's neighbours are mostly noise (measured, docs/decisions/embeddings.md).
 */
export const WORD_MATCH_FLOOR = 0.5
/** Vectors written per transaction while a tree is embedded. */
const WRITE_BATCH = 500
const BUSY_TIMEOUT_MS = 30_000

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

/** A file's chunk vectors, quantized: one int8 row of `dims` and a scale per chunk; and its words' rows. */
interface FileVectors {
  hash: string
  scales: Float32Array
  rows: Int8Array
  /** Per chunk, what turns the dot product with its row into a cosine similarity (its scale over its norm). */
  factors: Float32Array
  words: Uint32Array
}

/** `FileVectors` from the stored scales and rows. PURE. */
function fileVectors(hash: string, scales: Float32Array, rows: Int8Array, dims: number, words: Uint32Array): FileVectors {
  const factors = new Float32Array(scales.length)
  for (let c = 0; c < scales.length; c++) {
    let sum = 0
    for (let i = c * dims; i < (c + 1) * dims; i++) sum += rows[i] * rows[i]
    factors[c] = sum > 0 ? 1 / Math.sqrt(sum) : 0
  }
  return {hash, scales, rows, factors, words}
}

function quantize(vectors: Float32Array[], dims: number): {scales: Float32Array; rows: Int8Array} {
  const scales = new Float32Array(vectors.length)
  const rows = new Int8Array(vectors.length * dims)
  vectors.forEach((vector, c) => {
    let max = 0
    for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(vector[i]))
    const scale = max / 127 || 1
    scales[c] = scale
    for (let i = 0; i < dims; i++) rows[c * dims + i] = Math.round(vector[i] / scale)
  })
  return {scales, rows}
}

const bytesOf = (view: Float32Array | Int8Array | Uint32Array) => Buffer.from(view.buffer, view.byteOffset, view.byteLength)
/** A copy of a blob's bytes, whole 4-byte units only (a blob's view need not be aligned). */
function aligned(blob: Uint8Array): ArrayBuffer {
  const copy = new Uint8Array(blob.byteLength - (blob.byteLength % 4))
  copy.set(blob.subarray(0, copy.length))
  return copy.buffer
}

/**
 * `words` came with the word-by-word match: a database made before has it added, and its rows (NULL there, as in
 * rows an older jarvis writes) count as stale, so their files are embedded again once.
 */
const SCHEMA = 'CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, path TEXT NOT NULL, hash TEXT NOT NULL, scales BLOB NOT NULL, rows BLOB NOT NULL, words BLOB, PRIMARY KEY (model, path)) WITHOUT ROWID'

function createSchema(db: RowDatabase): void {
  db.exec(SCHEMA)
  const columns = (db.prepare('PRAGMA table_info(vectors)').all() as unknown[][]).map((row) => row[1])
  if (!columns.includes('words')) db.exec('ALTER TABLE vectors ADD COLUMN words BLOB')
}

function openVectors(root: string): RowDatabase {
  try {
    const db = openNexusRowDatabase(root, VECTORS_FILE)
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
    db.exec('PRAGMA journal_mode = WAL')
    db.exec('PRAGMA synchronous = NORMAL')
    createSchema(db)
    return db
  } catch (error) {
    // A read-only or broken .nexus/ must not break search: the vectors live in memory for this process.
    debug('vectors cannot be kept on disk, keeping them in memory: %s', (error as Error).message)
    const db = openRowDatabase(':memory:')
    createSchema(db)
    return db
  }
}

/** One model's chunk vectors for one tree, read from disk at the first use and kept in memory. */
export class ChunkVectorStore {
  private readonly files = new Map<string, FileVectors>()
  /** Per word row, how many files hold it (the word-by-word match weighs a rare word more). */
  private readonly fileCounts = new Map<number, number>()
  private loaded = false
  /** The keyword index's generation the vectors were last brought up to date with (KeywordIndex.generation). */
  private syncedWith: number | undefined
  private readonly statements: {all: RowStatement; one: RowStatement; put: RowStatement; remove: RowStatement}

  constructor(
    readonly root: string,
    readonly model: StaticModel,
    readonly modelName: string,
    private readonly db: RowDatabase = openVectors(root),
  ) {
    this.statements = {
      all: db.prepare('SELECT path, hash, scales, rows, words FROM vectors WHERE model = ?'),
      one: db.prepare('SELECT hash, scales, rows, words FROM vectors WHERE model = ? AND path = ?'),
      put: db.prepare('INSERT OR REPLACE INTO vectors (model, path, hash, scales, rows, words) VALUES (?, ?, ?, ?, ?, ?)'),
      remove: db.prepare('DELETE FROM vectors WHERE model = ? AND path = ?'),
    }
  }

  close(): void {
    this.db.close()
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
    if (!this.loaded) {
      for (const [path, hash, scales, rows, words] of this.statements.all.all(this.modelName) as Array<[string, string, Uint8Array, Uint8Array, Uint8Array | null]>) {
        if (words !== null) this.set(path, this.stored(hash, scales, rows, words))
      }
      this.loaded = true
    }
    const gone = [...this.files.keys()].filter((path) => !current.has(path))
    let stale: Array<[string, string]> = []
    for (const [path, {hash}] of current) if (this.files.get(path)?.hash !== hash) stale.push([path, hash])
    if (stale.length > 0 && stale.length < this.files.size) {
      // Written by another process since this one read them: read, not embedded again.
      stale = stale.filter(([path, hash]) => {
        const row = this.statements.one.get(this.modelName, path) as [string, Uint8Array, Uint8Array, Uint8Array | null] | undefined
        if (row?.[0] !== hash || row[3] === null) return true
        this.set(path, this.stored(hash, row[1], row[2], row[3]))
        return false
      })
    }
    if (gone.length > 0) {
      this.write(() => {
        for (const path of gone) this.statements.remove.run(this.modelName, path)
      })
      for (const path of gone) this.set(path, undefined)
    }
    let embedded = 0
    for (let from = 0; from < stale.length; from += WRITE_BATCH) {
      const batch = stale.slice(from, from + WRITE_BATCH)
      const texts = await readAll(this.root, batch.map(([path]) => path))
      const made: Array<[string, FileVectors]> = []
      batch.forEach(([path, hash], i) => {
        const text = texts[i]
        if (text === null) return
        const doc = toSearchDocument(path, text)
        const vectors = chunksOf(doc).map((chunk) => this.model.embed(chunk))
        const {scales, rows} = quantize(vectors, this.model.dims)
        made.push([path, fileVectors(hash, scales, rows, this.model.dims, wordRowsOf(this.model, doc))])
      })
      this.write(() => {
        for (const [path, {hash, scales, rows, words}] of made) this.statements.put.run(this.modelName, path, hash, bytesOf(scales), bytesOf(rows), bytesOf(words))
      })
      for (const [path, vectors] of made) this.set(path, vectors)
      embedded += made.length
    }
    if (embedded > 0) debug('embedded %d file(s) with %s', embedded, this.modelName)
    return embedded
  }

  private stored(hash: string, scales: Uint8Array, rows: Uint8Array, words: Uint8Array): FileVectors {
    return fileVectors(hash, new Float32Array(aligned(scales)), new Int8Array(new Uint8Array(rows).buffer), this.model.dims, new Uint32Array(aligned(words)))
  }

  /** Keeps (or, undefined, drops) a file's vectors, and the count of files holding each word. */
  private set(path: string, vectors: FileVectors | undefined): void {
    const before = this.files.get(path)
    if (before) for (const row of before.words) this.fileCounts.set(row, (this.fileCounts.get(row) ?? 1) - 1)
    if (vectors === undefined) this.files.delete(path)
    else {
      this.files.set(path, vectors)
      for (const row of vectors.words) this.fileCounts.set(row, (this.fileCounts.get(row) ?? 0) + 1)
    }
  }

  /** A failed write loses nothing but time: the vectors stay in memory and are made again by the next process. */
  private write(body: () => void): void {
    try {
      this.db.immediate(body)
    } catch (error) {
      debug('vectors not saved: %s', (error as Error).message)
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
      const count = this.fileCounts.get(row) ?? 0
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
        for (const row of file.words) {
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
   * vector): the best `limit`, best first, then those of `also` that are not among them.
   */
  rank(query: Float32Array, accept: ((path: string) => boolean) | undefined, limit: number, also: ReadonlySet<string> = new Set()): Array<{path: string; score: number}> {
    const dims = this.model.dims
    const top: Array<{path: string; score: number}> = []
    const extra: Array<{path: string; score: number}> = []
    let floor = -Infinity
    for (const [path, file] of this.files) {
      if (accept && !accept(path)) continue
      const {rows, factors} = file
      let best = -Infinity
      for (let c = 0, from = 0; c < factors.length; c++, from += dims) {
        let dot = 0
        for (let i = 0; i < dims; i += 4) dot += query[i] * rows[from + i] + query[i + 1] * rows[from + i + 1] + query[i + 2] * rows[from + i + 2] + query[i + 3] * rows[from + i + 3]
        const score = dot * factors[c]
        if (score > best) best = score
      }
      if (best === -Infinity) continue
      if (best > floor) {
        top.push({path, score: best})
        // Kept short: sorted and cut back to `limit` whenever it doubles; the cut's last score is the new floor.
        if (top.length >= 2 * limit) {
          top.sort(byScore)
          for (const dropped of top.splice(limit)) if (also.has(dropped.path)) extra.push(dropped)
          floor = top[top.length - 1].score
        }
      } else if (also.has(path)) extra.push({path, score: best})
    }
    top.sort(byScore)
    for (const dropped of top.splice(limit)) if (also.has(dropped.path)) extra.push(dropped)
    return [...top, ...extra]
  }
}

const byScore = (a: {path: string; score: number}, b: {path: string; score: number}) => b.score - a.score || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)
