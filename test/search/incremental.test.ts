import {appendFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {resetSearchCache, searchMemory} from '../../src/search/index.js'
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
