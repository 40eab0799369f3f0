/**
 * The built-in semantic ranking: the static model shipped in the package (assets/embeddings/), the chunk vectors
 * kept in `.nexus/search/vectors-<model>.bin`, and the fusion with the keyword ranking. Real trees, real model.
 */
import {readdir, rm, utimes, writeFile} from 'node:fs/promises'
import {existsSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import fc from 'fast-check'
import {afterAll, afterEach, describe, expect, it, vi} from 'vitest'

import Database from 'better-sqlite3'

import {BUILTIN_MODEL, convexFusion, resetSearchCache, searchMemory, VECTORS_FILE} from '../../src/search/index.js'
import {KeywordIndex} from '../../src/search/keyword.js'
import {bestChunkScore, builtinModel, CHUNK_WORDS, ChunkVectorStore, chunksOf, LEGACY_VECTORS_FILE, queryInIntegers, screenedBest, WORD_MATCH_FLOOR} from '../../src/search/semantic.js'
import {encodeRecord, readRecords, vectorsData, type VectorsData, vectorsOfRecord} from '../../src/search/vector-log.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {corpusFiles, QUERIES, writeCorpus} from './corpus.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))
afterEach(() => {
  delete process.env.JARVIS_EMBEDDINGS
  resetSearchCache()
})

const HOLIDAY = 'notes/holiday-plans.md'

async function tree(): Promise<string> {
  const dir = await tempDir('jarvis-semantic-')
  dirs.push(dir)
  const {root} = await initTree(dir, {})
  const files = corpusFiles()
  files.set(HOLIDAY, '# Holiday plans\n\nWe fly to Lisbon in August and stay at a hotel near the beach for a week.\n')
  await writeCorpus(join(root, '.memory'), files)
  return root
}

describe('search by meaning, with nothing configured', () => {
  it('finds a note that shares no word with the question, which the keyword ranking cannot', async () => {
    const root = await tree()
    const keyword = await searchMemory(root, 'where do we go on vacation', {embeddings: false})
    expect(keyword.hits.map((h) => h.path)).not.toContain(HOLIDAY)
    const result = await searchMemory(root, 'where do we go on vacation', {limit: 3})
    expect(result.mode).toBe('hybrid')
    expect(result.model).toBe(BUILTIN_MODEL)
    expect(result.note).toBeUndefined()
    expect(result.hits[0].path).toBe(HOLIDAY)
    expect(result.hits[0].snippet).toEqual([{line: 3, text: 'We fly to Lisbon in August and stay at a hotel near the beach for a week.'}])
  })

  it('answers nothing for words that no file holds, nor any word near them: a similarity alone is every file’s', async () => {
    const root = await tree()
    for (const query of ['xyzzyplugh', 'frobnicate the quux']) {
      const result = await searchMemory(root, query)
      expect(result.mode).toBe('hybrid')
      expect(result.hits, query).toEqual([])
    }
    // One word the tree holds is enough for the meaning to rank again.
    expect((await searchMemory(root, 'xyzzyplugh vacation', {limit: 3})).hits[0].path).toBe(HOLIDAY)
  })

  it('ranks a query whose every word is a typo by its keywords alone: the files its word pieces are near do not come along', async () => {
    const root = await tree()
    await writeFile(join(root, '.memory/notes/stripe-webhooks.md'), '# Stripe webhook verification\n\nStripe webhooks are verified with stripe.webhooks.constructEvent on the raw body.\n')
    for (let i = 1; i <= 6; i++) await writeFile(join(root, `.memory/notes/rename-${i}.md`), `# Rename helper${i}\n\nWe renamed helper${i} to util${i} in src/db_${i}.ts to keep the naming consistent.\n`)
    const keyword = await searchMemory(root, 'webhok verifcation', {embeddings: false})
    const result = await searchMemory(root, 'webhok verifcation')
    expect(result.mode).toBe('hybrid')
    expect(result.hits.map((h) => h.path)).toEqual(keyword.hits.map((h) => h.path))
    expect(result.hits[0].path).toBe('notes/stripe-webhooks.md')
    expect(result.hits.some((h) => h.path.startsWith('notes/rename-'))).toBe(false)
  })

  it('ranks the fixture questions at least as well as the keywords alone', async () => {
    const root = await tree()
    const recallAt5 = async (hybrid: boolean) => {
      let sum = 0
      for (const {query, expected} of QUERIES) {
        const {hits} = await searchMemory(root, query, {limit: 5, ...(hybrid ? {} : {embeddings: false})})
        sum += expected.filter((path) => hits.some((h) => h.path === path)).length / expected.length
      }
      return sum / QUERIES.length
    }
    expect(await recallAt5(true)).toBeGreaterThanOrEqual(await recallAt5(false))
  })

  it('keeps the vectors beside the index: a new process embeds nothing, an edit re-embeds that file only, a removal drops it', async () => {
    const root = await tree()
    const files = corpusFiles().size + 1
    const first = await searchMemory(root, 'database failover')
    expect(first.stats.embedded).toBe(files)
    expect(existsSync(join(root, '.nexus', VECTORS_FILE))).toBe(true)

    resetSearchCache() // a new process
    const again = await searchMemory(root, 'database failover')
    expect(again.stats.embedded).toBe(0)
    expect(again.hits).toEqual(first.hits)

    await writeFile(join(root, '.memory', HOLIDAY), '# Holiday plans\n\nA week of skiing in the Alps in February.\n')
    const edited = await searchMemory(root, 'skiing in the Alps', {limit: 3})
    expect(edited.stats.embedded).toBe(1)
    expect(edited.hits[0].path).toBe(HOLIDAY)

    await rm(join(root, '.memory', HOLIDAY))
    const removed = await searchMemory(root, 'skiing in the Alps', {limit: 3})
    expect(removed.stats.embedded).toBe(0)
    expect(removed.hits.map((h) => h.path)).not.toContain(HOLIDAY)
    resetSearchCache()
    expect((await searchMemory(root, 'skiing in the Alps')).stats.embedded).toBe(0)
  })

  it('a read of the vectors started ahead is read again when another process wrote to them meanwhile: nothing is embedded twice', async () => {
    const root = await tree()
    const model = builtinModel()!
    const hashes = new Map([...corpusFiles().keys(), HOLIDAY].map((path) => [path, {hash: path}]))
    const writer = new ChunkVectorStore(root, model, BUILTIN_MODEL)
    await writer.update(hashes)

    // A new process starts reading the vectors before its search checks the tree...
    const reader = new ChunkVectorStore(root, model, BUILTIN_MODEL)
    reader.prefetch()
    // ...while another one embeds an edited file and appends its vectors.
    await writeFile(join(root, '.memory', HOLIDAY), '# Holiday plans\n\nA week of skiing in the Alps in February.\n')
    hashes.set(HOLIDAY, {hash: 'skiing'})
    expect(await writer.update(hashes)).toBe(1)

    expect(await reader.update(hashes)).toBe(0)
    expect(reader.rank(model.embed('skiing in the Alps'), undefined, 1)[0].path).toBe(HOLIDAY)
    writer.close()
    reader.close()
  })

  /** The vectors of `root` as an older jarvis kept them: one SQLite row per file in `vectors.sqlite`, the log removed. */
  function toLegacyDatabase(root: string, withWords: boolean): void {
    const records: Array<[string, VectorsData]> = []
    const dims = builtinModel()!.dims
    readRecords(readFileSync(join(root, '.nexus', VECTORS_FILE)), 0, BUILTIN_MODEL, dims, (path, vectors) => {
      if (vectors) records.push([path, vectorsData(vectors, dims)])
    })
    const db = new Database(join(root, '.nexus', LEGACY_VECTORS_FILE))
    db.exec(`CREATE TABLE vectors (model TEXT NOT NULL, path TEXT NOT NULL, hash TEXT NOT NULL, scales BLOB NOT NULL, rows BLOB NOT NULL${withWords ? ', words BLOB' : ''}, PRIMARY KEY (model, path)) WITHOUT ROWID`)
    const put = db.prepare(`INSERT INTO vectors VALUES (?, ?, ?, ?, ?${withWords ? ', ?' : ''})`)
    const bytes = (view: ArrayBufferView) => Buffer.from(view.buffer, view.byteOffset, view.byteLength)
    for (const [path, {hash, factors, rows, words}] of records) {
      const scales = bytes(new Float32Array(factors.length).fill(0.01))
      put.run(BUILTIN_MODEL, path, hash, scales, bytes(rows), ...(withWords ? [bytes(words)] : []))
    }
    db.close()
    rmSync(join(root, '.nexus', VECTORS_FILE))
  }

  it('takes the vectors an older jarvis kept in vectors.sqlite, embedding nothing again, and removes that database', async () => {
    const root = await tree()
    const first = await searchMemory(root, 'database failover')
    resetSearchCache()
    toLegacyDatabase(root, true)

    const upgraded = await searchMemory(root, 'database failover')
    expect(upgraded.stats.embedded).toBe(0)
    expect(upgraded.hits).toEqual(first.hits)
    expect(existsSync(join(root, '.nexus', LEGACY_VECTORS_FILE))).toBe(false)
    resetSearchCache()
    expect((await searchMemory(root, 'database failover')).stats.embedded).toBe(0)
  })

  it('embeds each file once more when vectors.sqlite was kept by a jarvis without the word match, or cannot be read', async () => {
    const files = corpusFiles().size + 1
    for (const legacy of ['no words', 'garbage'] as const) {
      const root = await tree()
      const first = await searchMemory(root, 'database failover')
      resetSearchCache()
      if (legacy === 'no words') toLegacyDatabase(root, false)
      else {
        rmSync(join(root, '.nexus', VECTORS_FILE))
        writeFileSync(join(root, '.nexus', LEGACY_VECTORS_FILE), 'not a database at all')
      }
      const upgraded = await searchMemory(root, 'database failover')
      expect(upgraded.stats.embedded).toBe(files)
      expect(upgraded.hits).toEqual(first.hits)
      expect(existsSync(join(root, '.nexus', LEGACY_VECTORS_FILE))).toBe(false)
      resetSearchCache()
      expect((await searchMemory(root, 'database failover')).stats.embedded).toBe(0)
    }
  })

  it('a new process reads no index files for the vectors when the tree is as the last one left it; an edit is still embedded', async () => {
    const root = await tree()
    // Files a day old: settled, so the index keeps a manifest that a new process checks the tree against.
    const dayAgo = new Date(Date.now() - 86_400_000)
    const memory = join(root, '.memory')
    for (const path of ['', ...(await readdir(memory, {recursive: true}))]) await utimes(join(memory, path), dayAgo, dayAgo)
    const first = await searchMemory(root, 'where do we go on vacation', {limit: 3})
    resetSearchCache()
    expect((await searchMemory(root, 'where do we go on vacation', {limit: 3})).stats.embedded).toBe(0) // marks the vectors
    resetSearchCache()

    const index = await KeywordIndex.load(root)
    expect((await index.refresh()).indexed).toBe(0)
    expect(index.freshManifest).toBeDefined()
    const store = new ChunkVectorStore(root, builtinModel()!, BUILTIN_MODEL)
    const files = vi.spyOn(index, 'files', 'get')
    expect(await store.updateFrom(index)).toBe(0)
    expect(files).not.toHaveBeenCalled()
    expect(store.rank(builtinModel()!.embed('where do we go on vacation'), undefined, 1)[0].path).toBe(HOLIDAY)
    index.close()
    const again = await searchMemory(root, 'where do we go on vacation', {limit: 3})
    expect(again.hits).toEqual(first.hits)
    resetSearchCache()

    await writeFile(join(root, '.memory', HOLIDAY), '# Holiday plans\n\nA week of skiing in the Alps in February.\n')
    const edited = await searchMemory(root, 'skiing in the Alps', {limit: 3})
    expect(edited.stats.embedded).toBe(1)
    expect(edited.hits[0].path).toBe(HOLIDAY)
  })

  it('is keyword-only, and says so, with JARVIS_EMBEDDINGS=off or embeddings: false', async () => {
    const root = await tree()
    process.env.JARVIS_EMBEDDINGS = 'off'
    const off = await searchMemory(root, 'where do we go on vacation')
    expect(off.mode).toBe('keyword')
    expect(off.note).toBe('keyword search only: JARVIS_EMBEDDINGS=off')
    expect(off.model).toBeUndefined()
    expect(existsSync(join(root, '.nexus', VECTORS_FILE))).toBe(false)
    delete process.env.JARVIS_EMBEDDINGS
    const asked = await searchMemory(root, 'redis', {embeddings: false})
    expect(asked.mode).toBe('keyword')
    expect(asked.note).toBeUndefined()
  })
})

describe('chunks', () => {
  it('are the title and tags, then the body in pieces of at most CHUNK_WORDS words cut at line ends', () => {
    const words = (n: number, w: string) => Array.from({length: n}, () => w).join(' ')
    const body = [words(10, 'alpha'), words(25, 'beta'), '', words(30, 'gamma'), words(100, 'delta')].join('\n')
    const chunks = chunksOf({title: 'Release checklist', tags: ['deploy'], body})
    expect(chunks[0]).toBe('Release checklist deploy')
    expect(chunks.slice(1).map((c) => c.split(/\s+/).length)).toEqual([35, 30, 40, 40, 20])
    for (const chunk of chunks) expect(chunk.split(/\s+/).length).toBeLessThanOrEqual(CHUNK_WORDS)
    expect(chunksOf({tags: [], body: ''})).toEqual([])
  })
})

describe('word-by-word match', () => {
  it('scores each query word by its closest word in the file: itself, a near word, or nothing, a rare word more', async () => {
    const dir = await tempDir('jarvis-word-match-')
    dirs.push(dir)
    const {root} = await initTree(dir, {})
    const files = new Map([
      ['trip.md', '# Weekend\n\nWe went hiking in the hills.\n'],
      ['post.md', '# Post\n\nThe email arrived late.\n'],
      ['food.md', '# Food\n\nPasta with tomato sauce and hiking boots.\n'],
      ['other.md', '# Other\n\nNothing to see.\n'],
    ])
    await writeCorpus(join(root, '.memory'), files)
    const model = builtinModel()!
    const store = new ChunkVectorStore(root, model, BUILTIN_MODEL)
    await store.update(new Map([...files.keys()].map((path) => [path, {hash: path}])))
    const row = (word: string) => model.rowOf(word)!
    const mailToEmail = model.similarity(row('mail'), row('email'))
    expect(mailToEmail).toBeGreaterThan(WORD_MATCH_FLOOR)
    expect(model.similarity(row('mail'), row('hiking'))).toBeLessThan(WORD_MATCH_FLOOR)

    const scores = store.wordMatch('the hiking mail', files.keys())
    // idf over the 4 files: "hiking" is in 2 of them, "mail" in none; "the" is a stop word.
    const idf = (count: number) => Math.log(1 + (4 - count + 0.5) / (count + 0.5))
    expect(scores.get('trip.md')).toBeCloseTo(idf(2))
    expect(scores.get('post.md')).toBeCloseTo(idf(0) * mailToEmail)
    expect(scores.get('other.md')).toBe(0)
    expect(store.wordMatch('zzqx', files.keys()).size).toBe(0) // no word the model holds
    store.close()
  })
})

describe('ranking by the best chunk', () => {
  /** A unit vector of `dims` floats, as the model's embed gives. */
  const unitVector = (dims: number) =>
    fc.array(fc.float({min: -1, max: 1, noNaN: true}), {minLength: dims, maxLength: dims}).map((values) => {
      const length = Math.hypot(...values) || 1
      return Float32Array.from(values, (value) => value / length)
    })

  it('screens no file out that the floats would score above the floor: the integer query bounds every chunk from above', () => {
    const file = (dims: number) =>
      fc
        .array(fc.tuple(fc.array(fc.integer({min: -128, max: 127}), {minLength: dims, maxLength: dims}), fc.float({min: Math.fround(1e-4), max: 1, noNaN: true})), {minLength: 1, maxLength: 5})
        .map((chunks) => vectorsOfRecord(encodeRecord('a.md', {hash: 'h', factors: Float32Array.from(chunks, ([, factor]) => factor), rows: Int8Array.from(chunks.flatMap(([row]) => row)), words: new Uint32Array(0)}), dims))
    fc.assert(
      fc.property(
        fc.integer({min: 1, max: 96}).chain((quarter) => fc.tuple(unitVector(quarter * 4), file(quarter * 4))),
        ([query, vectors]) => {
          const exact = bestChunkScore(query, vectors, query.length)
          expect(screenedBest(queryInIntegers(query), vectors, query.length)).toBeGreaterThanOrEqual(exact)
        },
      ),
      {numRuns: 300},
    )
  })

  it('gives the answer of scoring every file in floats, for any query, depth and set of files kept beside the best', async () => {
    const root = await tree()
    const model = builtinModel()!
    const store = new ChunkVectorStore(root, model, BUILTIN_MODEL)
    const files = corpusFiles()
    await store.update(new Map([...files.keys()].map((path) => [path, {hash: path}])))
    const paths = [...files.keys()]
    // Every file scored in floats: no floor is ever set when every file is kept.
    const everyFile = (query: Float32Array) => store.rank(query, undefined, Infinity)
    const words = [...new Set([...files.values()].join(' ').toLowerCase().match(/[a-z]+/g) ?? [])]
    const query = fc.oneof(
      fc.array(fc.constantFrom(...words), {minLength: 1, maxLength: 6}).map((picked) => model.embed(picked.join(' '))),
      unitVector(model.dims),
    )
    fc.assert(
      fc.property(query, fc.integer({min: 1, max: 12}), fc.subarray(paths, {maxLength: 20}), (vector, limit, kept) => {
        const all = everyFile(vector)
        const ranked = store.rank(vector, undefined, limit, new Set(kept))
        const top = all.slice(0, limit)
        expect(ranked.slice(0, top.length)).toEqual(top)
        const inTop = new Set(top.map((hit) => hit.path))
        const byPath = (a: {path: string}, b: {path: string}) => (a.path < b.path ? -1 : 1)
        expect(ranked.slice(top.length).sort(byPath)).toEqual(all.filter((hit) => kept.includes(hit.path) && !inTop.has(hit.path)).sort(byPath))
      }),
      {numRuns: 200},
    )
    expect(paths.length).toBeGreaterThan(24)
    store.close()
  })
})

describe('fusion', () => {
  it('weighs the keyword score most, and lets a file found by meaning alone in', () => {
    const fused = convexFusion(
      [
        {path: 'a', score: 10},
        {path: 'b', score: 5},
      ],
      [
        {path: 'c', score: 0.9},
        {path: 'b', score: 0.5},
        {path: 'a', score: 0.1},
      ],
    )
    expect(fused.map((f) => f.path)).toEqual(['a', 'b', 'c'])
    expect(fused[0].score).toBeCloseTo(0.6)
    expect(fused[1].score).toBeCloseTo(0.6 * 0.5 + 0.4 * 0.5)
    expect(fused[2].score).toBeCloseTo(0.4)
  })

  it('adds the word match with its own weight, over the same candidates', () => {
    const fused = convexFusion(
      [{path: 'a', score: 10}],
      [
        {path: 'a', score: 0.2},
        {path: 'b', score: 0.1},
      ],
      0.4,
      {scores: new Map([['a', 1], ['b', 4], ['elsewhere', 8]]), weight: 0.3},
    )
    expect(fused.map((f) => f.path)).toEqual(['a', 'b'])
    expect(fused[0].score).toBeCloseTo(0.4 + 0.3 + 0.3 * (1 / 8))
    expect(fused[1].score).toBeCloseTo(0.3 * (4 / 8))
  })

  it('scales similarities over at least the given range: a hair’s difference stays a hair', () => {
    const keyword = [{path: 'pooling.md', score: 3}]
    const semantic = [
      {path: 'other.md', score: 0.298},
      {path: 'pooling.md', score: 0.286},
    ]
    expect(convexFusion(keyword, semantic, 0.4, undefined, 0).find((f) => f.path === 'other.md')!.score).toBeCloseTo(0.6)
    expect(convexFusion(keyword, semantic, 0.4, undefined, 0.2).find((f) => f.path === 'other.md')!.score).toBeCloseTo(0.6 * (0.012 / 0.2))
    // A wide range is scaled as before.
    expect(convexFusion(keyword, [{path: 'pooling.md', score: 0.6}, {path: 'other.md', score: 0.1}], 0.4, undefined, 0.2)[0].score).toBeCloseTo(1)
  })
})
