import {appendFile, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {INDEX_FILE, resetSearchCache, searchMemory} from '../../src/search/index.js'
import {INDEXED_BODY_CHARS} from '../../src/search/keyword.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {largeCorpus, writeCorpusFast} from './corpus.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

describe('incremental index over 10,000 files', () => {
  it('re-indexes only the one file that was edited, in this process and the next', async () => {
    const dir = await tempDir('jarvis-search-10k-')
    dirs.push(dir)
    const {root} = await initTree(dir, {})
    const files = largeCorpus(10_000)
    await writeCorpusFast(join(root, '.memory'), files)

    const built = await searchMemory(root, 'pgbouncer', {embeddings: false})
    expect(built.stats).toMatchObject({indexed: 10_000, files: 10_000, rebuilt: true})

    const edited = [...files.keys()][4321]
    await appendFile(join(root, '.memory', edited), '\nLater: the quokkaplatypus flag was removed.\n')
    const updated = await searchMemory(root, 'quokkaplatypus', {embeddings: false})
    expect(updated.stats).toMatchObject({indexed: 1, removed: 0, files: 10_000})
    expect(updated.hits.map((h) => h.path)).toEqual([edited])

    resetSearchCache() // the next process loads the saved index: nothing to re-index
    const reloaded = await searchMemory(root, 'quokkaplatypus', {embeddings: false})
    expect(reloaded.stats).toMatchObject({indexed: 0, files: 10_000, rebuilt: false})
    expect(reloaded.hits.map((h) => h.path)).toEqual([edited])
  })
})

describe('a large file in the memory', () => {
  it('is indexed by its first 64 KiB only, so the index stays small', async () => {
    const dir = await tempDir('jarvis-search-large-')
    dirs.push(dir)
    const {root} = await initTree(dir, {})
    // 2 MiB of words that occur once each (a log, a dump), then one word past the indexed part.
    const words = Array.from({length: 180_000}, (_, i) => `tok${i.toString(36)}x`).join(' ')
    await writeFile(join(root, '.memory', 'dump.md'), `# Dump\n\nstartword ${words}\nfarawayword\n`)
    await writeFile(join(root, '.memory', 'note.md'), '# Note\n\nThe pgbouncer rollout is on Tuesday.\n')

    const first = await searchMemory(root, 'startword', {embeddings: false})
    expect(first.hits.map((h) => h.path)).toEqual(['dump.md'])
    expect((await searchMemory(root, 'pgbouncer', {embeddings: false})).hits.map((h) => h.path)).toEqual(['note.md'])
    expect((await searchMemory(root, 'farawayword', {embeddings: false})).hits).toEqual([])
    // The whole file's words would make a multi-megabyte index; its first 64 KiB make a small one.
    // (The index is SQLite in WAL mode: what a process wrote may still be in the -wal file beside it.)
    const sizes = await Promise.all(['', '-wal'].map(async (suffix) => (await stat(join(root, '.nexus', INDEX_FILE + suffix)).catch(() => ({size: 0}))).size))
    expect(sizes[0] + sizes[1]).toBeLessThan(8 * INDEXED_BODY_CHARS)
  })
})
