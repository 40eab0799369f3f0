import {readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi} from 'vitest'

import {recallMemory} from '../../src/ops/recall.js'
import {BUILTIN_MODEL, INDEX_FILE, RECALL_MAX_CHARS, resetSearchCache, searchMemory} from '../../src/search/index.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {corpusFiles, QUERIES, writeCorpus} from './corpus.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

async function tree(files = corpusFiles()): Promise<string> {
  const dir = await tempDir('jarvis-search-')
  dirs.push(dir)
  const {root} = await initTree(dir, {})
  await writeCorpus(join(root, '.memory'), files)
  return root
}

/** The floor keyword recall@5 must stay above on the fixture corpus (measured: see the printed figure). */
const RECALL_FLOOR = 0.85

describe('keyword search quality', () => {
  let root: string
  beforeAll(async () => {
    root = await tree()
  })

  it(`finds the expected files in the top 5 for ${QUERIES.length} queries over ${corpusFiles().size} files (recall@5 ≥ ${RECALL_FLOOR})`, async () => {
    expect(corpusFiles().size).toBeGreaterThanOrEqual(200)
    expect(QUERIES.length).toBeGreaterThanOrEqual(30)
    let sum = 0
    const misses: string[] = []
    for (const {query, expected} of QUERIES) {
      const {hits, mode} = await searchMemory(root, query, {limit: 5, embeddings: false})
      expect(mode).toBe('keyword')
      const top = hits.map((h) => h.path)
      const found = expected.filter((path) => top.includes(path)).length
      sum += found / Math.min(expected.length, 5)
      if (found < expected.length) misses.push(`${query} → ${top.join(', ')}`)
    }
    const recallAt5 = sum / QUERIES.length
    console.log(`search: keyword recall@5 = ${recallAt5.toFixed(3)} over ${QUERIES.length} queries, ${corpusFiles().size} files${misses.length ? `\n  misses:\n  ${misses.join('\n  ')}` : ''}`)
    expect(recallAt5).toBeGreaterThanOrEqual(RECALL_FLOOR)
  })

  it('gives the matched lines as snippets, with their line numbers', async () => {
    const {hits} = await searchMemory(root, 'pgbouncer pooling', {limit: 1, embeddings: false})
    expect(hits[0].path).toBe('decisions/postgres/run-pgbouncer-in-transaction-pooling-mode.md')
    expect(hits[0].title).toBe('Decision: Run pgbouncer in transaction pooling mode')
    const text = (await readFile(join(root, '.memory', hits[0].path), 'utf8')).split('\n')
    expect(hits[0].snippet.length).toBeGreaterThan(0)
    expect(hits[0].snippet.length).toBeLessThanOrEqual(3)
    for (const {line, text: snippet} of hits[0].snippet) {
      expect(text[line - 1].trim()).toBe(snippet)
      expect(snippet.toLowerCase()).toMatch(/pgbouncer|pooling/)
    }
  })

  it('filters by tag, path prefix and date', async () => {
    const byTag = await searchMemory(root, 'failures timeouts', {limit: 50, tags: ['security'], embeddings: false})
    expect(byTag.hits.length).toBeGreaterThan(0)
    expect(byTag.hits.every((h) => /\/(ssh|auth)[/-]|\/(ssh|auth)\.md|-(ssh|auth)|ssh-|auth-/.test(h.path))).toBe(true)
    const byPrefix = await searchMemory(root, 'postgres', {limit: 50, prefix: '.memory/bugs/', embeddings: false})
    expect(byPrefix.hits.length).toBeGreaterThan(0)
    expect(byPrefix.hits.every((h) => h.path.startsWith('bugs/'))).toBe(true)
    const bySince = await searchMemory(root, 'episode', {limit: 100, prefix: 'episodes/', since: '2026-05-01', embeddings: false})
    expect(bySince.hits.length).toBeGreaterThan(0)
    expect(bySince.hits.every((h) => h.path.slice('episodes/'.length, 'episodes/'.length + 10) >= '2026-05-01')).toBe(true)
    const all = await searchMemory(root, 'episode', {limit: 100, prefix: 'episodes/', embeddings: false})
    expect(all.hits.length).toBeGreaterThan(bySince.hits.length)
    await expect(searchMemory(root, 'x', {since: 'last tuesday', embeddings: false})).rejects.toThrow(/--since/)
    await expect(searchMemory(root, '   ', {embeddings: false})).rejects.toThrow(/empty/)
  })

  it('still finds a file whose front matter is malformed, by its whole text', async () => {
    const files = new Map([['notes/broken.md', '---\ntitle: [unclosed\n---\nThe axolotl migration plan.\n']])
    const broken = await tree(files)
    const {hits} = await searchMemory(broken, 'axolotl', {embeddings: false})
    expect(hits.map((h) => h.path)).toEqual(['notes/broken.md'])
  })

  it('finds a word inside Japanese, Chinese or Korean text, and a Latin word whatever its accents, as the event log does', async () => {
    const files = new Map([
      ['notes/deploy-ja.md', '# デプロイ\n\nデプロイは火曜日に行います。\n'],
      ['notes/office-fr.md', '# Bureau\n\nLe café est au 3ème étage.\n'],
      ['notes/other.md', '# Other\n\nThe cafeteria closes at noon; deploys are on Monday.\n'],
    ])
    const folded = await tree(files)
    const paths = async (query: string) => (await searchMemory(folded, query, {embeddings: false})).hits.map((h) => h.path)
    expect(await paths('火曜日')).toEqual(['notes/deploy-ja.md'])
    // (cafeteria matches as a prefix, after it)
    expect(await paths('cafe')).toEqual(['notes/office-fr.md', 'notes/other.md'])
    expect(await paths('ÉTAGE')).toEqual(['notes/office-fr.md'])
    expect(await paths('会議')).toEqual([])
  })

  it('is hybrid with the built-in model when no provider is configured (test/search/semantic.test.ts)', async () => {
    const result = await searchMemory(root, 'redis', {embeddings: undefined})
    if (process.env.JARVIS_EMBEDDINGS_URL) return
    expect(result.mode).toBe('hybrid')
    expect(result.model).toBe(BUILTIN_MODEL)
    expect(result.note).toBeUndefined()
  })
})

describe('the index in .nexus/', () => {
  it('is saved, reused by the next process, updated for edits and deletions, and rebuilt when corrupt', async () => {
    const root = await tree()
    const first = await searchMemory(root, 'redis', {embeddings: false})
    expect(first.stats).toMatchObject({indexed: 220, files: 220, rebuilt: true})
    expect((await readFile(join(root, '.nexus', INDEX_FILE))).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0')

    resetSearchCache() // a new process: loads the saved index, re-indexes nothing
    const second = await searchMemory(root, 'redis', {embeddings: false})
    expect(second.stats).toMatchObject({indexed: 0, removed: 0, files: 220, rebuilt: false})
    expect(second.hits.map((h) => h.path)).toEqual(first.hits.map((h) => h.path))

    const edited = 'configs/redis.md'
    await writeFile(join(root, '.memory', edited), '---\ntitle: Redis configuration\n---\nThe zanzibar eviction knob.\n')
    await rm(join(root, '.memory', 'configs/redis-staging.md'))
    const third = await searchMemory(root, 'zanzibar', {embeddings: false})
    expect(third.stats).toMatchObject({indexed: 1, removed: 1, files: 219})
    expect(third.hits.map((h) => h.path)).toEqual([edited])
    resetSearchCache()
    expect((await searchMemory(root, 'zanzibar', {embeddings: false})).stats.indexed).toBe(0)

    resetSearchCache() // the process ends, then its index file is torn by hand
    await writeFile(join(root, '.nexus', INDEX_FILE), 'SQLite format 3\0 and then nothing')
    const rebuilt = await searchMemory(root, 'zanzibar', {embeddings: false})
    expect(rebuilt.stats).toMatchObject({indexed: 219, rebuilt: true})
    expect(rebuilt.hits.map((h) => h.path)).toEqual([edited])
  })
})

describe('recall', () => {
  // Keyword ranking only, as JARVIS_EMBEDDINGS=off gives it: the block's shape, not the model, is under test here.
  beforeEach(() => vi.stubEnv('JARVIS_EMBEDDINGS', 'off'))
  afterEach(() => vi.unstubAllEnvs())

  it('prints the seed 004 §7 block: path and a one-line summary per hit, the line that answers the query', async () => {
    const root = await tree()
    const {block, hits} = await recallMemory({dir: root, query: 'runner_exec auth failures'})
    expect(hits.length).toBe(3)
    const lines = block.split('\n')
    expect(lines[0]).toBe('[MEMORY CONTEXT]')
    expect(lines.length).toBe(1 + 2 * hits.length)
    hits.forEach((hit, i) => {
      expect(lines[1 + 2 * i]).toBe(`- ${hit.path}`)
      expect(lines[2 + 2 * i]).toMatch(/^ {2}Summary: “.+”$/)
    })
    expect(lines[1]).toBe('- bugs/ssh/runner-exec-auth-failures-after-the-key-rotation.md')
    expect(lines[2]).toBe('  Summary: “Symptom: runner_exec auth failures after the key rotation.”')
  })

  it('is bounded: long summaries are cut to one line, the block to RECALL_MAX_CHARS, and every hit asked for is shown', async () => {
    const files = new Map<string, string>()
    for (let i = 0; i < 12; i++) files.set(`notes/long-${i}.md`, `---\nsummary: ${'walrus '.repeat(200)}\n---\n${'walrus migration notes '.repeat(50)}\n`)
    const root = await tree(files)
    const {block, hits} = await recallMemory({dir: root, query: 'walrus', limit: 10})
    expect(block.length).toBeLessThanOrEqual(RECALL_MAX_CHARS)
    // Ten full summaries do not fit in the block: they are shortened alike rather than files left out.
    expect(hits.length).toBe(10)
    expect(hits.length).toBe(block.split('\n').filter((l) => l.startsWith('- ')).length)
    for (const line of block.split('\n').filter((l) => l.startsWith('  Summary'))) expect(line.length).toBeLessThanOrEqual(180)
    await expect(recallMemory({dir: root, query: 'walrus', limit: 11})).rejects.toThrow(/between 1 and 10/)
    const none = await recallMemory({dir: root, query: 'nonexistentterm'})
    expect(none.block).toBe('[MEMORY CONTEXT]\n(no memory file matches)')
  })
})
