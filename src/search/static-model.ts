/**
 * The built-in embedding model: a static one (a vector per word, docs/decisions/embeddings.md). A text's vector is
 * the mean of its words' vectors, each word weighted by how rare it is (the weights are in the vectors already);
 * a word the table does not hold is cut into the sentence encoder's own word pieces (the most likely cut under its
 * unigram model) and counts as the mean of theirs. No runtime, no download: one file of the package, read once.
 *
 * The file (little-endian): u32 header length, the header (JSON: version, dims, words, pieces), u32 vocabulary
 * length, the vocabulary (UTF-8, one entry a line: the words, then the pieces), padding to 4 bytes, a float32
 * log-probability per piece, a float32 scale per entry, and an int8 row of `dims` per entry.
 */
import {readFileSync} from 'node:fs'

/** Words of a text as the model reads them: letters and digits, lower-cased. */
const WORD = /[\p{L}\p{N}]+/gu
/** SentencePiece's mark of a word's start. */
const WORD_START = '\u2581'
/** Longest word looked up in the tables; longer ones (hashes, base64) carry no meaning the model knows. */
const MAX_WORD_CHARS = 40
/** A piece the unigram model never saw is this unlikely (log-probability), so that known pieces win. */
const UNKNOWN_PIECE = -30

export interface StaticModelHeader {
  version: number
  dims: number
  words: number
  pieces: number
}

export class StaticModel {
  private readonly rows = new Map<string, number>()
  private readonly pieceRows = new Map<string, number>()
  private readonly pieceScores: Float32Array
  private readonly scales: Float32Array
  private readonly weights: Int8Array
  private readonly longestPiece: number
  /** Words already cut into pieces (a text repeats its rare words). */
  private readonly cuts = new Map<string, number[]>()
  /** Whole words of the table: their rows are 0 to wordCount - 1 (pieces come after). */
  readonly wordCount: number
  /** Per entry, the length of its int8 row, computed when first needed (NaN until then). */
  private norms: Float32Array | undefined
  readonly dims: number

  private constructor(bytes: Buffer) {
    let at = 0
    const headerLength = bytes.readUInt32LE(at)
    at += 4
    const header = JSON.parse(bytes.toString('utf8', at, at + headerLength)) as StaticModelHeader
    at += headerLength
    if (header.version !== 1) throw new Error(`embedding model of version ${header.version}, this jarvis reads version 1`)
    if (!(header.dims > 0 && header.dims % 4 === 0)) throw new Error(`embedding model: ${header.dims} dimensions, a multiple of 4 expected`)
    this.dims = header.dims
    this.wordCount = header.words
    const vocabLength = bytes.readUInt32LE(at)
    at += 4
    const vocab = bytes.toString('utf8', at, at + vocabLength).split('\n')
    at += vocabLength
    at += (4 - (at % 4)) % 4
    const entries = header.words + header.pieces
    if (vocab.length !== entries) throw new Error(`embedding model: ${vocab.length} vocabulary entries, ${entries} expected`)
    const floats = (count: number) => {
      const view = new Float32Array(bytes.buffer.slice(bytes.byteOffset + at, bytes.byteOffset + at + count * 4))
      at += count * 4
      return view
    }
    this.pieceScores = floats(header.pieces)
    this.scales = floats(entries)
    this.weights = new Int8Array(bytes.buffer, bytes.byteOffset + at, entries * header.dims)
    if (at + entries * header.dims > bytes.length) throw new Error('embedding model: the file is cut short')
    for (let i = 0; i < header.words; i++) if (!this.rows.has(vocab[i])) this.rows.set(vocab[i], i)
    let longest = 1
    for (let i = 0; i < header.pieces; i++) {
      const piece = vocab[header.words + i].toLowerCase()
      const known = this.pieceRows.get(piece)
      // Cased pieces fold onto one lower-cased entry: the likelier one stands for both.
      if (known === undefined || this.pieceScores[known - header.words] < this.pieceScores[i]) this.pieceRows.set(piece, header.words + i)
      longest = Math.max(longest, piece.length)
    }
    this.longestPiece = longest
  }

  static load(path: string): StaticModel {
    return new StaticModel(readFileSync(path))
  }

  /** The text's vector (unit length; all zeros when no word of it is known). */
  embed(text: string): Float32Array {
    const sum = new Float32Array(this.dims)
    let count = 0
    for (const match of text.toLowerCase().matchAll(WORD)) {
      const word = match[0]
      if (word.length > MAX_WORD_CHARS) continue
      const row = this.rows.get(word)
      if (row !== undefined) {
        this.add(sum, row, 1)
        count++
        continue
      }
      const pieces = this.cut(word)
      if (pieces.length === 0) continue
      for (const piece of pieces) this.add(sum, piece, 1 / pieces.length)
      count++
    }
    if (count === 0) return sum
    let norm = 0
    for (let i = 0; i < sum.length; i++) norm += sum[i] * sum[i]
    norm = Math.sqrt(norm)
    if (norm > 0) for (let i = 0; i < sum.length; i++) sum[i] /= norm
    return sum
  }

  /** The row of a whole word the table holds (lower-cased), or undefined: no pieces, no partial words. */
  rowOf(word: string): number | undefined {
    return word.length > MAX_WORD_CHARS ? undefined : this.rows.get(word)
  }

  /** The cosine similarity of two entries' vectors (1 for the same row). */
  similarity(a: number, b: number): number {
    if (a === b) return 1
    const dims = this.dims
    let dot = 0
    for (let i = 0, x = a * dims, y = b * dims; i < dims; i++) dot += this.weights[x + i] * this.weights[y + i]
    const length = this.norm(a) * this.norm(b)
    return length > 0 ? dot / length : 0
  }

  private norm(row: number): number {
    const norms = (this.norms ??= new Float32Array(this.scales.length).fill(Number.NaN))
    if (Number.isNaN(norms[row])) {
      let sum = 0
      for (let i = row * this.dims; i < (row + 1) * this.dims; i++) sum += this.weights[i] * this.weights[i]
      norms[row] = Math.sqrt(sum)
    }
    return norms[row]
  }

  private add(sum: Float32Array, row: number, share: number): void {
    const scale = this.scales[row] * share
    const from = row * this.dims
    for (let i = 0; i < this.dims; i++) sum[i] += this.weights[from + i] * scale
  }

  /** The most likely cut of `word` into pieces (Viterbi over the unigram model's log-probabilities), as rows. */
  private cut(word: string): number[] {
    const known = this.cuts.get(word)
    if (known) return known
    const text = WORD_START + word
    const best = new Float64Array(text.length + 1).fill(-Infinity)
    const from = new Int32Array(text.length + 1)
    const rowAt = new Int32Array(text.length + 1).fill(-1)
    best[0] = 0
    for (let end = 1; end <= text.length; end++) {
      for (let start = Math.max(0, end - this.longestPiece); start < end; start++) {
        if (best[start] === -Infinity) continue
        const row = this.pieceRows.get(text.slice(start, end))
        // A single character the model has no piece for still passes, at a high cost (and adds no vector).
        const score = row === undefined ? (end - start === 1 ? UNKNOWN_PIECE : -Infinity) : this.pieceScores[row - this.wordCount]
        if (best[start] + score > best[end]) {
          best[end] = best[start] + score
          from[end] = start
          rowAt[end] = row ?? -1
        }
      }
    }
    const rows: number[] = []
    for (let end = text.length; end > 0; end = from[end]) if (rowAt[end] >= 0 && text.slice(from[end], end) !== WORD_START) rows.push(rowAt[end])
    if (this.cuts.size > 50_000) this.cuts.clear()
    this.cuts.set(word, rows)
    return rows
  }
}
