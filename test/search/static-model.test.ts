/**
 * The built-in model reads its words' table through byte hash tables and its weights row by row as they are used:
 * every answer must be the one of the whole file parsed into maps (`whole` below, the way it was read before).
 */
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {builtinModel} from '../../src/search/semantic.js'
import {StaticModel} from '../../src/search/static-model.js'

const FILE = join(import.meta.dirname, '..', '..', 'assets', 'embeddings', 'jarvis-static-use-v1.bin')

/** The model file parsed whole into maps of strings, and its embedding: the oracle. */
function whole(path: string) {
  const bytes = readFileSync(path)
  let at = 0
  const headerLength = bytes.readUInt32LE(at)
  at += 4
  const header = JSON.parse(bytes.toString('utf8', at, at + headerLength)) as {dims: number; words: number; pieces: number}
  at += headerLength
  const vocabLength = bytes.readUInt32LE(at)
  at += 4
  const vocab = bytes.toString('utf8', at, at + vocabLength).split('\n')
  at += vocabLength
  at += (4 - (at % 4)) % 4
  const floats = (count: number) => {
    const view = new Float32Array(bytes.buffer.slice(bytes.byteOffset + at, bytes.byteOffset + at + count * 4))
    at += count * 4
    return view
  }
  const entries = header.words + header.pieces
  const pieceScores = floats(header.pieces)
  const scales = floats(entries)
  const weights = new Int8Array(bytes.buffer, bytes.byteOffset + at, entries * header.dims)
  const rows = new Map<string, number>()
  for (let i = 0; i < header.words; i++) if (!rows.has(vocab[i])) rows.set(vocab[i], i)
  const pieceRows = new Map<string, number>()
  let longest = 1
  for (let i = 0; i < header.pieces; i++) {
    const piece = vocab[header.words + i].toLowerCase()
    const known = pieceRows.get(piece)
    if (known === undefined || pieceScores[known - header.words] < pieceScores[i]) pieceRows.set(piece, header.words + i)
    longest = Math.max(longest, piece.length)
  }
  const dims = header.dims
  const cut = (word: string): number[] => {
    const text = `\u2581${word}`
    const best = new Float64Array(text.length + 1).fill(-Infinity)
    const from = new Int32Array(text.length + 1)
    const rowAt = new Int32Array(text.length + 1).fill(-1)
    best[0] = 0
    for (let end = 1; end <= text.length; end++) {
      for (let start = Math.max(0, end - longest); start < end; start++) {
        if (best[start] === -Infinity) continue
        const row = pieceRows.get(text.slice(start, end))
        const score = row === undefined ? (end - start === 1 ? -30 : -Infinity) : pieceScores[row - header.words]
        if (best[start] + score > best[end]) {
          best[end] = best[start] + score
          from[end] = start
          rowAt[end] = row ?? -1
        }
      }
    }
    const out: number[] = []
    for (let end = text.length; end > 0; end = from[end]) if (rowAt[end] >= 0 && text.slice(from[end], end) !== '\u2581') out.push(rowAt[end])
    return out
  }
  const add = (sum: Float32Array, row: number, share: number) => {
    const scale = scales[row] * share
    for (let i = 0; i < dims; i++) sum[i] += weights[row * dims + i] * scale
  }
  const embed = (text: string): Float32Array => {
    const sum = new Float32Array(dims)
    let count = 0
    for (const [word] of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
      if (word.length > 40) continue
      const row = rows.get(word)
      if (row !== undefined) {
        add(sum, row, 1)
        count++
        continue
      }
      const pieces = cut(word)
      if (pieces.length === 0) continue
      for (const piece of pieces) add(sum, piece, 1 / pieces.length)
      count++
    }
    if (count === 0) return sum
    const norm = Math.sqrt(sum.reduce((total, x) => total + x * x, 0))
    return norm > 0 ? sum.map((x) => x / norm) : sum
  }
  const similarity = (a: number, b: number) => {
    if (a === b) return 1
    const length = (r: number) => Math.sqrt(weights.subarray(r * dims, (r + 1) * dims).reduce((total, x) => total + x * x, 0))
    let dot = 0
    for (let i = 0; i < dims; i++) dot += weights[a * dims + i] * weights[b * dims + i]
    const product = length(a) * length(b)
    return product > 0 ? dot / product : 0
  }
  // Lower-cased pieces that several cased pieces fold onto ("▁the" for "▁The" and "▁THE"): the likelier one stands for all.
  const folded = [...new Set(vocab.slice(header.words).map((piece) => piece.toLowerCase()))].filter((piece) => vocab.slice(header.words).filter((other) => other.toLowerCase() === piece).length > 1)
  return {vocab, words: header.words, rows, embed, similarity, folded}
}

const oracle = whole(FILE)

describe('the built-in model read on use', () => {
  it('finds the row of every word of its table, and none for its pieces or other words', () => {
    const model = StaticModel.load(FILE)
    for (const word of oracle.vocab.slice(0, oracle.words)) if (word.length <= 40) expect(model.rowOf(word)).toBe(oracle.rows.get(word))
    for (const other of [...oracle.vocab.slice(oracle.words), 'zzqxj', 'état', '東京', '']) expect(model.rowOf(other)).toBe(oracle.rows.get(other))
  })

  it('embeds a text as the whole table does: known words, cased and unknown ones cut into pieces, any script', () => {
    const model = StaticModel.load(FILE)
    const word = fc.oneof(fc.constantFrom(...oracle.vocab.slice(0, 2000), ...oracle.vocab.slice(oracle.words).map((piece) => piece.replace('\u2581', ''))), fc.string({minLength: 1, maxLength: 12}), fc.stringMatching(/^[a-z0-9éßıİΣς東京]{1,14}$/))
    fc.assert(
      fc.property(fc.array(word, {minLength: 1, maxLength: 12}), fc.boolean(), (words, upper) => {
        const text = words.join(' ')
        expect(model.embed(upper ? text.toUpperCase() : text)).toEqual(oracle.embed(upper ? text.toUpperCase() : text))
      }),
      {numRuns: 300},
    )
  })

  it('cuts words into the likelier of cased twin pieces', () => {
    const model = StaticModel.load(FILE)
    expect(oracle.folded.length).toBeGreaterThan(100)
    for (const piece of oracle.folded) {
      const bare = piece.replace('\u2581', '')
      for (const word of [bare, `qz${bare}`, `${bare}qz`]) expect(model.embed(word)).toEqual(oracle.embed(word))
    }
  })

  it("measures two rows' similarity as the whole table does, before and after every row is read", () => {
    const model = StaticModel.load(FILE)
    const pairs = fc.sample(fc.tuple(fc.nat(oracle.vocab.length - 1), fc.nat(oracle.vocab.length - 1)), 6000)
    // Past the rows read one by one, the rest is read at once: both sides of that switch are crossed here.
    for (const [a, b] of pairs) expect(model.similarity(a, b)).toBeCloseTo(oracle.similarity(a, b), 6)
  })

  it('is the model the search loads', () => {
    expect(builtinModel()!.embed('where do we go on vacation')).toEqual(oracle.embed('where do we go on vacation'))
  })
})
