/**
 * The warm search index of an MCP session: with a watcher registered, a search re-reads only the files the
 * watcher reported (no scan of `.memory/`), and the tree watch of `jarvis mcp` reports what changes on disk.
 */
import {mkdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, afterEach, describe, expect, it} from 'vitest'

import {watchMemory, type MemoryWatch} from '../../src/mcp/watch.js'
import {resetSearchCache, searchMemory, watchSearchIndex, type SearchIndexWatch} from '../../src/search/index.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'

const dirs: string[] = []
const watches: Array<SearchIndexWatch | MemoryWatch> = []
afterEach(async () => {
  for (const watch of watches.splice(0)) await ('close' in watch ? watch.close() : watch.stop())
  resetSearchCache()
})
afterAll(async () => removeAll(dirs))

async function tree(): Promise<{root: string; memory: string}> {
  const dir = await tempDir('jarvis-mcp-watch-')
  dirs.push(dir)
  const {root} = await initTree(dir, {})
  const memory = join(root, '.memory')
  await mkdir(join(memory, 'notes'), {recursive: true})
  await writeFile(join(memory, 'notes', 'a.md'), '# A\n\nThe heron fishes at dawn.\n')
  await writeFile(join(memory, 'notes', 'b.md'), '# B\n\nThe otter sleeps.\n')
  return {root, memory}
}

describe('search index kept by a watcher', () => {
  it('scans once, then re-reads only the reported paths: an unreported change is not seen, a reported one is', async () => {
    const {root, memory} = await tree()
    const watch = watchSearchIndex(root)
    watches.push(watch)
    const first = await searchMemory(root, 'heron', {embeddings: false})
    expect(first.stats).toMatchObject({files: 2, indexed: 2})
    expect(first.hits.map((hit) => hit.path)).toEqual(['notes/a.md'])

    // Nothing reported: no scan at all, so a change nobody reported is not seen (proof that nothing was re-scanned).
    await writeFile(join(memory, 'notes', 'b.md'), '# B\n\nThe otter caught a heron.\n')
    const quiet = await searchMemory(root, 'heron', {embeddings: false})
    expect(quiet.stats).toMatchObject({indexed: 0, removed: 0, files: 2})
    expect(quiet.hits.map((hit) => hit.path)).toEqual(['notes/a.md'])

    // Reported: that file alone is re-read.
    watch.changed('notes/b.md')
    const reported = await searchMemory(root, 'heron', {embeddings: false})
    expect(reported.stats).toMatchObject({indexed: 1, removed: 0, files: 2})
    expect(reported.hits.map((hit) => hit.path).sort()).toEqual(['notes/a.md', 'notes/b.md'])

    // A reported removal drops the file; a rescan picks up anything.
    await rm(join(memory, 'notes', 'a.md'))
    watch.changed('notes/a.md')
    const removed = await searchMemory(root, 'heron', {embeddings: false})
    expect(removed.stats).toMatchObject({removed: 1, files: 1})
    await writeFile(join(memory, 'notes', 'c.md'), '# C\n\nA heron again.\n')
    watch.rescan()
    expect((await searchMemory(root, 'heron', {embeddings: false})).hits.map((hit) => hit.path).sort()).toEqual(['notes/b.md', 'notes/c.md'])

    // Without the watcher, every search scans the tree again.
    await watch.stop()
    await writeFile(join(memory, 'notes', 'd.md'), '# D\n\nheron\n')
    expect((await searchMemory(root, 'heron', {embeddings: false})).hits.map((hit) => hit.path)).toContain('notes/d.md')
  })

  it('the watcher of jarvis mcp reports additions, changes and removals on disk to the index', async () => {
    const {root, memory} = await tree()
    const watch = await watchMemory(root)
    watches.push(watch)
    // The one full scan was made when the session started (or is made by this search, if that one is still running).
    expect((await searchMemory(root, 'heron', {embeddings: false})).stats.files).toBe(2)
    expect((await searchMemory(root, 'heron', {embeddings: false})).stats).toMatchObject({indexed: 0, removed: 0})
    const until = async (query: string, expected: string[]) => {
      let paths: string[] = []
      for (let attempt = 0; attempt < 60; attempt++) {
        const result = await searchMemory(root, query, {embeddings: false})
        paths = result.hits.map((hit) => hit.path).sort()
        if (JSON.stringify(paths) === JSON.stringify(expected)) return result
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      throw new Error(`search for ${query} still finds ${JSON.stringify(paths)}, expected ${JSON.stringify(expected)}`)
    }
    await writeFile(join(memory, 'notes', 'b.md'), '# B\n\nThe otter met the heron.\n')
    const changed = await until('heron', ['notes/a.md', 'notes/b.md'])
    expect(changed.stats.files).toBe(2)
    await mkdir(join(memory, 'episodes', '2026-01-01'), {recursive: true})
    await writeFile(join(memory, 'episodes', '2026-01-01', 'e.md'), '# E\n\nheron sighting\n')
    await until('heron', ['episodes/2026-01-01/e.md', 'notes/a.md', 'notes/b.md'])
    await rm(join(memory, 'notes', 'a.md'))
    await until('heron', ['episodes/2026-01-01/e.md', 'notes/b.md'])
    // Backups and temp files are not memory files.
    await writeFile(join(memory, 'notes', 'b.local.bak'), 'heron backup\n')
    expect((await until('heron', ['episodes/2026-01-01/e.md', 'notes/b.md'])).hits).toHaveLength(2)
  })
})
