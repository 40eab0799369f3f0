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
import {closeSync, fstatSync, openSync, readSync} from 'node:fs'

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

/** Rows of the weights read one by one; past this many, the rest are read at once (a tree being embedded needs most). */
const ROWS_READ_ONE_BY_ONE = 4096

const encoder = new TextEncoder()

/**
 * The lines of a vocabulary as a hash table over their UTF-8 bytes: a look-up finds a line's index without a string
 * made per line (39,369 strings and their map entries were a third of a search's model load, and kept the garbage
 * collector copying them). `prefer(candidate, held)` decides which of two equal lines keeps the entry.
 */
class ByteTable {
  private readonly slots: Int32Array
  private readonly mask: number
  /** Scratch for the bytes of a word looked up (a longer word is encoded apart). */
  private scratch = new Uint8Array(256)

  constructor(
    private readonly bytes: Uint8Array,
    /** Line `i` is `bytes[starts[i], starts[i + 1] - 1)` (the `- 1`: its newline). */
    private readonly starts: Uint32Array,
    private readonly first: number,
    count: number,
    prefer: (candidate: number, held: number) => boolean,
  ) {
    let size = 1
    while (size < count * 2) size <<= 1
    this.slots = new Int32Array(size).fill(-1)
    this.mask = size - 1
    for (let i = first; i < first + count; i++) {
      const from = starts[i]
      const to = starts[i + 1] - 1
      for (let slot = hashBytes(bytes, from, to) & this.mask; ; slot = (slot + 1) & this.mask) {
        const held = this.slots[slot]
        if (held === -1) {
          this.slots[slot] = i
          break
        }
        if (this.equal(held, bytes, from, to)) {
          if (prefer(i, held)) this.slots[slot] = i
          break
        }
      }
    }
  }

  /** The index of the line that is `text`, or undefined. */
  get(text: string): number | undefined {
    if (text.length * 3 > this.scratch.length) this.scratch = new Uint8Array(text.length * 3)
    const length = encoder.encodeInto(text, this.scratch).written
    for (let slot = hashBytes(this.scratch, 0, length) & this.mask; ; slot = (slot + 1) & this.mask) {
      const held = this.slots[slot]
      if (held === -1) return undefined
      if (this.equal(held, this.scratch, 0, length)) return held
    }
  }

  private equal(line: number, other: Uint8Array, from: number, to: number): boolean {
    const start = this.starts[line]
    if (this.starts[line + 1] - 1 - start !== to - from) return false
    for (let k = 0; k < to - from; k++) if (this.bytes[start + k] !== other[from + k]) return false
    return true
  }
}

/** FNV-1a of `bytes[from, to)`. PURE. */
function hashBytes(bytes: Uint8Array, from: number, to: number): number {
  let hash = 0x811c9dc5
  for (let k = from; k < to; k++) hash = Math.imul(hash ^ bytes[k], 0x01000193)
  return hash >>> 0
}

/** Where each line of `bytes` starts, and one past the end (as if it ended with a newline). PURE. */
function lineStarts(bytes: Uint8Array, lines: number): Uint32Array | undefined {
  const starts = new Uint32Array(lines + 1)
  let line = 1
  for (let k = 0; k < bytes.length; k++) {
    if (bytes[k] !== 0x0a) continue
    if (line === lines) return undefined
    starts[line++] = k + 1
  }
  if (line !== lines) return undefined
  starts[lines] = bytes.length + 1
  return starts
}

/** The length in UTF-16 code units of the UTF-8 text `bytes[from, to)`. PURE. */
function utf16Length(bytes: Uint8Array, from: number, to: number): number {
  let length = 0
  for (let k = from; k < to; k++) {
    const byte = bytes[k]
    if ((byte & 0xc0) !== 0x80) length += byte >= 0xf0 ? 2 : 1
  }
  return length
}

export class StaticModel {
  /** The whole words, by their row (the first of equal lines). */
  private readonly rows: ByteTable
  /** The pieces lower-cased, by their row (the likelier of cased twins): made at the first word the table lacks. */
  private pieceTable: ByteTable | undefined
  private readonly pieceScores: Float32Array
  private readonly scales: Float32Array
  /**
   * Every entry's int8 row, read from the file as they are first needed (`loaded`): a search needs the rows of its
   * query's words and of its best files' words, not the 10 MB of the table.
   */
  private readonly weights: Int8Array
  private readonly loaded: Uint8Array
  private rowsRead = 0
  /** The open file the rows are read from, and where they start in it; undefined once all are read. */
  private fd: number | undefined
  private readonly weightsAt: number
  private longestPiece = 1
  /** Words already cut into pieces (a text repeats its rare words). */
  private readonly cuts = new Map<string, number[]>()
  /** Whole words of the table: their rows are 0 to wordCount - 1 (pieces come after). */
  readonly wordCount: number
  /** Per entry, the length of its int8 row, computed when first needed (NaN until then). */
  private norms: Float32Array | undefined
  readonly dims: number
  private readonly pieceCount: number
  private readonly vocab: Uint8Array
  private readonly starts: Uint32Array

  private constructor(head: Uint8Array, fd: number, fileSize: number) {
    const view = new DataView(head.buffer, head.byteOffset, head.byteLength)
    let at = 0
    const headerLength = view.getUint32(at, true)
    at += 4
    const header = JSON.parse(new TextDecoder().decode(head.subarray(at, at + headerLength))) as StaticModelHeader
    at += headerLength
    if (header.version !== 1) throw new Error(`embedding model of version ${header.version}, this jarvis reads version 1`)
    if (!(header.dims > 0 && header.dims % 4 === 0)) throw new Error(`embedding model: ${header.dims} dimensions, a multiple of 4 expected`)
    this.dims = header.dims
    this.wordCount = header.words
    this.pieceCount = header.pieces
    const vocabLength = view.getUint32(at, true)
    at += 4
    const entries = header.words + header.pieces
    this.vocab = head.subarray(at, at + vocabLength)
    const starts = lineStarts(this.vocab, entries)
    if (starts === undefined) throw new Error(`embedding model: ${entries} vocabulary entries expected`)
    this.starts = starts
    at += vocabLength
    at += (4 - (at % 4)) % 4
    // The head was read into a buffer of its own at offset 0, so the file's 4-byte alignment holds here.
    this.pieceScores = new Float32Array(head.buffer, head.byteOffset + at, header.pieces)
    at += header.pieces * 4
    this.scales = new Float32Array(head.buffer, head.byteOffset + at, entries)
    at += entries * 4
    if (at + entries * header.dims > fileSize) throw new Error('embedding model: the file is cut short')
    this.weightsAt = at
    this.weights = new Int8Array(entries * header.dims)
    this.loaded = new Uint8Array(entries)
    this.fd = fd
    this.rows = new ByteTable(this.vocab, starts, 0, header.words, () => false)
  }

  /**
   * Reads the file's header, vocabulary and scales (~0.5 MB); the rows of the weights are read on use from the file
   * held open (the same file throughout, whatever replaces it on disk meanwhile).
   */
  static load(path: string): StaticModel {
    const fd = openSync(path, 'r')
    try {
      const size = fstatSync(fd).size
      // Its header says how long the rest of the head is: the vocabulary's length follows the header's JSON.
      const headerLength = uint32At(readAt(fd, 0, 4), 0)
      const headerAndLength = readAt(fd, 4, headerLength + 4)
      const header = JSON.parse(new TextDecoder().decode(headerAndLength.subarray(0, headerLength))) as StaticModelHeader
      let headBytes = 4 + headerLength + 4 + uint32At(headerAndLength, headerLength)
      headBytes += (4 - (headBytes % 4)) % 4
      headBytes += (header.pieces + header.words + header.pieces) * 4
      return new StaticModel(readAt(fd, 0, headBytes), fd, size)
    } catch (error) {
      closeSync(fd)
      throw error
    }
  }

  /** Row `row`'s weights are in `weights` (read now when they were not). */
  private need(row: number): void {
    if (this.loaded[row] === 1) return
    if (++this.rowsRead > ROWS_READ_ONE_BY_ONE) return this.readAll()
    const dims = this.dims
    readInto(this.fd!, this.weights, row * dims, dims, this.weightsAt + row * dims)
    this.loaded[row] = 1
  }

  /** Reads every row not read yet, in one go, and closes the file. */
  private readAll(): void {
    // The rows read already are read again: the same bytes of the same open file.
    readInto(this.fd!, this.weights, 0, this.weights.length, this.weightsAt)
    this.loaded.fill(1)
    closeSync(this.fd!)
    this.fd = undefined
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

  /** The table of the lower-cased pieces, made at its first use. */
  private pieces(): ByteTable {
    if (this.pieceTable) return this.pieceTable
    // Lower-cased as one text: no line changes its count of newlines, so line i is still piece i.
    const text = new TextDecoder().decode(this.vocab.subarray(this.starts[this.wordCount])).toLowerCase()
    const bytes = encoder.encode(text)
    const starts = lineStarts(bytes, this.pieceCount)
    if (starts === undefined) throw new Error('embedding model: its pieces changed lines when lower-cased')
    for (let i = 0; i < this.pieceCount; i++) this.longestPiece = Math.max(this.longestPiece, utf16Length(bytes, starts[i], starts[i + 1] - 1))
    // Cased pieces fold onto one lower-cased entry: the likelier one stands for both (the first, when as likely).
    this.pieceTable = new ByteTable(bytes, starts, 0, this.pieceCount, (candidate, held) => this.pieceScores[held] < this.pieceScores[candidate])
    return this.pieceTable
  }

  /** The cosine similarity of two entries' vectors (1 for the same row). */
  similarity(a: number, b: number): number {
    if (a === b) return 1
    this.need(a)
    this.need(b)
    const dims = this.dims
    let dot = 0
    for (let i = 0, x = a * dims, y = b * dims; i < dims; i++) dot += this.weights[x + i] * this.weights[y + i]
    const length = this.norm(a) * this.norm(b)
    return length > 0 ? dot / length : 0
  }

  private norm(row: number): number {
    const norms = (this.norms ??= new Float32Array(this.scales.length).fill(Number.NaN))
    if (Number.isNaN(norms[row])) {
      this.need(row)
      let sum = 0
      for (let i = row * this.dims; i < (row + 1) * this.dims; i++) sum += this.weights[i] * this.weights[i]
      norms[row] = Math.sqrt(sum)
    }
    return norms[row]
  }

  private add(sum: Float32Array, row: number, share: number): void {
    this.need(row)
    const scale = this.scales[row] * share
    const from = row * this.dims
    for (let i = 0; i < this.dims; i++) sum[i] += this.weights[from + i] * scale
  }

  /** The most likely cut of `word` into pieces (Viterbi over the unigram model's log-probabilities), as rows. */
  private cut(word: string): number[] {
    const known = this.cuts.get(word)
    if (known) return known
    const pieces = this.pieces()
    const text = WORD_START + word
    const best = new Float64Array(text.length + 1).fill(-Infinity)
    const from = new Int32Array(text.length + 1)
    const rowAt = new Int32Array(text.length + 1).fill(-1)
    best[0] = 0
    for (let end = 1; end <= text.length; end++) {
      for (let start = Math.max(0, end - this.longestPiece); start < end; start++) {
        if (best[start] === -Infinity) continue
        const piece = pieces.get(text.slice(start, end))
        const row = piece === undefined ? undefined : this.wordCount + piece
        // A single character the model has no piece for still passes, at a high cost (and adds no vector).
        const score = piece === undefined ? (end - start === 1 ? UNKNOWN_PIECE : -Infinity) : this.pieceScores[piece]
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

/** `length` bytes of the file at `fd` from `position`, in a buffer of their own. */
function readAt(fd: number, position: number, length: number): Uint8Array {
  const bytes = new Uint8Array(new ArrayBuffer(length))
  readInto(fd, bytes, 0, length, position)
  return bytes
}

/** Fills `into[offset, offset + length)` with the file's bytes from `position`; a file that ends first is cut short (an error). */
function readInto(fd: number, into: Uint8Array | Int8Array, offset: number, length: number, position: number): void {
  for (let got = 0; got < length; ) {
    const n = readSync(fd, into, offset + got, length - got, position + got)
    if (n === 0) throw new Error('embedding model: the file is cut short')
    got += n
  }
}

const uint32At = (bytes: Uint8Array, at: number) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(at, true)
