/**
 * The built-in semantic ranking (docs/decisions/embeddings.md): the static model shipped with jarvis
 * (static-model.ts), each memory file cut into chunks of about 40 words whose vectors are kept beside the keyword
 * index in `.nexus/search/vectors.sqlite`, one row per file and model with the content hash it was made from. A
 * file is embedded again only when its hash changes; a file's score is its best chunk's cosine similarity.
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

/** A file's chunk vectors, quantized: one int8 row of `dims` and a scale per chunk. */
interface FileVectors {
  hash: string
  scales: Float32Array
  rows: Int8Array
  /** Per chunk, what turns the dot product with its row into a cosine similarity (its scale over its norm). */
  factors: Float32Array
}

/** `FileVectors` from the stored scales and rows. PURE. */
function fileVectors(hash: string, scales: Float32Array, rows: Int8Array, dims: number): FileVectors {
  const factors = new Float32Array(scales.length)
  for (let c = 0; c < scales.length; c++) {
    let sum = 0
    for (let i = c * dims; i < (c + 1) * dims; i++) sum += rows[i] * rows[i]
    factors[c] = sum > 0 ? 1 / Math.sqrt(sum) : 0
  }
  return {hash, scales, rows, factors}
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

const bytesOf = (view: Float32Array | Int8Array) => Buffer.from(view.buffer, view.byteOffset, view.byteLength)
function float32s(blob: Uint8Array): Float32Array {
  const copy = new Uint8Array(blob.byteLength - (blob.byteLength % 4))
  copy.set(blob.subarray(0, copy.length))
  return new Float32Array(copy.buffer)
}

const SCHEMA = 'CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, path TEXT NOT NULL, hash TEXT NOT NULL, scales BLOB NOT NULL, rows BLOB NOT NULL, PRIMARY KEY (model, path)) WITHOUT ROWID'

function openVectors(root: string): RowDatabase {
  try {
    const db = openNexusRowDatabase(root, VECTORS_FILE)
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
    db.exec('PRAGMA journal_mode = WAL')
    db.exec('PRAGMA synchronous = NORMAL')
    db.exec(SCHEMA)
    return db
  } catch (error) {
    // A read-only or broken .nexus/ must not break search: the vectors live in memory for this process.
    debug('vectors cannot be kept on disk, keeping them in memory: %s', (error as Error).message)
    const db = openRowDatabase(':memory:')
    db.exec(SCHEMA)
    return db
  }
}

/** One model's chunk vectors for one tree, read from disk at the first use and kept in memory. */
export class ChunkVectorStore {
  private readonly files = new Map<string, FileVectors>()
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
      all: db.prepare('SELECT path, hash, scales, rows FROM vectors WHERE model = ?'),
      one: db.prepare('SELECT hash, scales, rows FROM vectors WHERE model = ? AND path = ?'),
      put: db.prepare('INSERT OR REPLACE INTO vectors (model, path, hash, scales, rows) VALUES (?, ?, ?, ?, ?)'),
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
      for (const [path, hash, scales, rows] of this.statements.all.all(this.modelName) as Array<[string, string, Uint8Array, Uint8Array]>) this.files.set(path, this.stored(hash, scales, rows))
      this.loaded = true
    }
    const gone = [...this.files.keys()].filter((path) => !current.has(path))
    let stale: Array<[string, string]> = []
    for (const [path, {hash}] of current) if (this.files.get(path)?.hash !== hash) stale.push([path, hash])
    if (stale.length > 0 && stale.length < this.files.size) {
      // Written by another process since this one read them: read, not embedded again.
      stale = stale.filter(([path, hash]) => {
        const row = this.statements.one.get(this.modelName, path) as [string, Uint8Array, Uint8Array] | undefined
        if (row?.[0] !== hash) return true
        this.files.set(path, this.stored(hash, row[1], row[2]))
        return false
      })
    }
    if (gone.length > 0) {
      this.write(() => {
        for (const path of gone) this.statements.remove.run(this.modelName, path)
      })
      for (const path of gone) this.files.delete(path)
    }
    let embedded = 0
    for (let from = 0; from < stale.length; from += WRITE_BATCH) {
      const batch = stale.slice(from, from + WRITE_BATCH)
      const texts = await readAll(this.root, batch.map(([path]) => path))
      const made: Array<[string, FileVectors]> = []
      batch.forEach(([path, hash], i) => {
        const text = texts[i]
        if (text === null) return
        const vectors = chunksOf(toSearchDocument(path, text)).map((chunk) => this.model.embed(chunk))
        const {scales, rows} = quantize(vectors, this.model.dims)
        made.push([path, fileVectors(hash, scales, rows, this.model.dims)])
      })
      this.write(() => {
        for (const [path, {hash, scales, rows}] of made) this.statements.put.run(this.modelName, path, hash, bytesOf(scales), bytesOf(rows))
      })
      for (const [path, vectors] of made) this.files.set(path, vectors)
      embedded += made.length
    }
    if (embedded > 0) debug('embedded %d file(s) with %s', embedded, this.modelName)
    return embedded
  }

  private stored(hash: string, scales: Uint8Array, rows: Uint8Array): FileVectors {
    return fileVectors(hash, float32s(scales), new Int8Array(new Uint8Array(rows).buffer), this.model.dims)
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
