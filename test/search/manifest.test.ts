/**
 * The manifest: a new process checks a settled tree with one lstat per folder and file against one row of the
 * index, instead of reading every row of `files` and scanning. Every change a user can make must still be found
 * by the next process: an edit in place, a file replaced under the same size and mtime, a new file, a new folder,
 * a removal.
 */
import {mkdir, rename, rm, stat, utimes, writeFile} from 'node:fs/promises'
import {join, resolve} from 'node:path'

import Database from 'better-sqlite3'
import {afterAll, afterEach, beforeEach, describe, expect, it} from 'vitest'

import {INDEX_FILE, resetSearchCache, searchMemory} from '../../src/search/index.js'
import {KeywordIndex} from '../../src/search/keyword.js'
import {type FsBinding, resetFileStat} from '../../src/store/file-stat.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))
beforeEach(() => resetSearchCache())
afterEach(() => resetFileStat(true))

const DAY_AGO = new Date(Date.now() - 86_400_000)

/** Every file and folder of `.memory/` dated a day back: a tree that grew long ago, settled for the racy-git rule. */
async function settle(memory: string, paths: string[]): Promise<void> {
  const folders = new Set([''])
  for (const path of paths) {
    await utimes(join(memory, path), DAY_AGO, DAY_AGO)
    const parts = path.split('/')
    for (let i = 1; i < parts.length; i++) folders.add(parts.slice(0, i).join('/'))
  }
  for (const folder of [...folders].sort().reverse()) await utimes(join(memory, folder), DAY_AGO, DAY_AGO)
}

/** The manifest row of the index, read as another program would (its count of folders), or undefined. */
function manifestFolders(root: string): number | undefined {
  const db = new Database(join(root, '.nexus', INDEX_FILE), {readonly: true})
  try {
    return (db.prepare('SELECT dirs FROM manifest').get() as {dirs: number} | undefined)?.dirs
  } finally {
    db.close()
  }
}

/** A search as a new process makes it. */
async function searchAsNewProcess(root: string, query: string) {
  resetSearchCache()
  return searchMemory(root, query, {embeddings: false})
}

async function settledTree() {
  const dir = await tempDir('jarvis-search-manifest-')
  dirs.push(dir)
  const {root} = await initTree(dir, {})
  const memory = join(root, '.memory')
  const paths: string[] = []
  for (let i = 0; i < 12; i++) {
    const path = `notes/${i % 3}/note-${i}.md`
    await mkdir(join(memory, 'notes', String(i % 3)), {recursive: true})
    await writeFile(join(memory, path), `# Note ${i}\n\nThe harbour crane number ${i} was serviced.\n`)
    paths.push(path)
  }
  await settle(memory, paths)
  // Built, then refreshed once more now that every entry is older than its check: the manifest is written.
  expect((await searchAsNewProcess(root, 'harbour')).stats).toMatchObject({indexed: 12, files: 12})
  await searchAsNewProcess(root, 'harbour')
  expect(manifestFolders(root)).toBe(5) // .memory, notes, notes/0, notes/1, notes/2
  return {root, memory, paths}
}

describe('the manifest check of a settled tree', () => {
  it('answers from the index without re-indexing when nothing changed', async () => {
    const {root} = await settledTree()
    const result = await searchAsNewProcess(root, 'crane serviced')
    expect(result.stats).toMatchObject({indexed: 0, removed: 0, files: 12, rebuilt: false})
    expect(result.hits).toHaveLength(10)
  })

  it('finds an edit made in place (same size, new mtime), in the next process', async () => {
    const {root, memory, paths} = await settledTree()
    const path = paths[4]
    const before = await stat(join(memory, path))
    // Same length, one word swapped: only the file's mtime tells.
    await writeFile(join(memory, path), `# Note 4\n\nThe harbour quokka number 4 was serviced.\n`.replace('quokka', 'quokk').padEnd(Number(before.size), 'x'))
    expect((await stat(join(memory, path))).size).toBe(before.size)
    const result = await searchAsNewProcess(root, 'quokk')
    expect(result.stats).toMatchObject({indexed: 1, files: 12})
    expect(result.hits.map((h) => h.path)).toEqual([path])
  })

  it('finds a file replaced by another of the same size and mtime (a new inode)', async () => {
    const {root, memory, paths} = await settledTree()
    const path = paths[7]
    const full = join(memory, path)
    const before = await stat(full)
    const replacement = `# Note 7\n\nThe harbour wombat number 7 was serviced.\n`.slice(0, Number(before.size)).padEnd(Number(before.size), 'x')
    await writeFile(join(memory, 'notes', 'incoming.tmp'), replacement)
    await utimes(join(memory, 'notes', 'incoming.tmp'), before.atime, before.mtime)
    await rename(join(memory, 'notes', 'incoming.tmp'), full)
    // Its folder's mtime back to what the index recorded: only the inode tells.
    await utimes(join(memory, 'notes', '1'), DAY_AGO, DAY_AGO)
    await utimes(join(memory, 'notes'), DAY_AGO, DAY_AGO)
    const result = await searchAsNewProcess(root, 'wombat')
    expect(result.hits.map((h) => h.path)).toEqual([path])
  })

  it('finds a new file, a new folder and a removal', async () => {
    const {root, memory, paths} = await settledTree()
    await writeFile(join(memory, 'notes', '2', 'new.md'), '# New\n\nThe lighthouse keeper called.\n')
    await mkdir(join(memory, 'fresh'))
    await writeFile(join(memory, 'fresh', 'deep.md'), '# Deep\n\nThe lighthouse lamp was replaced.\n')
    await rm(join(memory, paths[0]))
    const result = await searchAsNewProcess(root, 'lighthouse')
    expect(result.stats).toMatchObject({indexed: 2, removed: 1, files: 13})
    expect(result.hits.map((h) => h.path).sort()).toEqual(['fresh/deep.md', 'notes/2/new.md'])
    expect((await searchAsNewProcess(root, 'crane')).hits.map((h) => h.path)).not.toContain(paths[0])
  })

  it('is not written while an entry is too recent to prove anything (racy git)', async () => {
    const {root, memory} = await settledTree()
    await writeFile(join(memory, 'notes', '0', 'just-now.md'), '# Just now\n\nThe tugboat docked.\n')
    expect((await searchAsNewProcess(root, 'tugboat')).hits.map((h) => h.path)).toEqual(['notes/0/just-now.md'])
    expect(manifestFolders(root)).toBeUndefined()
  })
})

describe('a long-lived process whose manifest holds while another process re-indexed', () => {
  it('names each hit by the path the index holds now, even when an id was given to another file', async () => {
    const dir = await tempDir('jarvis-search-manifest-ids-')
    dirs.push(dir)
    const {root} = await initTree(dir, {})
    const memory = join(root, '.memory')
    const write = async (path: string, text: string) => {
      await writeFile(join(memory, path), text)
      await utimes(join(memory, path), DAY_AGO, DAY_AGO)
      await utimes(memory, DAY_AGO, DAY_AGO)
    }
    await write('a.md', '# A\n\nThe anchor chain.\n')
    await write('c.md', '# C\n\nThe capstan turns.\n') // the highest id
    const opened: KeywordIndex[] = []
    const open = async () => {
      const index = await KeywordIndex.load(root)
      opened.push(index)
      return index
    }
    try {
      await (await open()).refresh()
      const longLived = await open()
      await longLived.refresh() // the manifest holds: no row of files is read
      expect(longLived.search('capstan', {}, 5).map((h) => h.path)).toEqual(['c.md'])
      // Other processes: c.md goes, then d.md comes and, the highest id being free again, gets c.md's id.
      await rm(join(memory, 'c.md'))
      await utimes(memory, DAY_AGO, new Date(DAY_AGO.getTime() + 1000))
      await (await open()).refresh()
      await write('d.md', '# D\n\nThe capstan was replaced by a winch.\n')
      await utimes(memory, DAY_AGO, new Date(DAY_AGO.getTime() + 2000))
      await (await open()).refresh()
      await longLived.refresh()
      expect(longLived.search('capstan', {}, 5).map((h) => h.path)).toEqual(['d.md'])
    } finally {
      for (const index of opened) index.close()
    }
  })
})

describe('the manifest check\'s lstat of each folder and file', () => {
  it('asks Node\'s binding for every folder and file (no fs.Stats and its four Dates per entry)', async () => {
    const {root, memory} = await settledTree()
    const real = (process as unknown as {binding(name: string): FsBinding}).binding('fs')
    const asked: string[] = []
    resetFileStat({
      lstat(path, bigint, request, throwIfNoEntry) {
        asked.push(path)
        return real.lstat(path, bigint, request, throwIfNoEntry)
      },
    })
    const cwd = process.cwd()
    expect((await searchAsNewProcess(root, 'crane')).stats).toMatchObject({indexed: 0, files: 12})
    // Named from inside .memory/ where the process may move there (back where it was after), else absolute.
    expect(process.cwd()).toBe(cwd)
    const full = asked.map((path) => resolve(memory, path))
    for (const folder of ['', 'notes', 'notes/0', 'notes/1', 'notes/2']) expect(full).toContain(join(memory, folder))
    expect(full.filter((path) => path.endsWith('.md'))).toHaveLength(12)
  })

  it('finds a folder replaced by a file of its name, and a new folder, through the binding and through fs.lstatSync alone', async () => {
    for (const binding of [true, false]) {
      resetFileStat(binding)
      const {root, memory, paths} = await settledTree()
      // notes/2 becomes a file: its folder's entries go, a file of its name comes.
      await rm(join(memory, 'notes', '2'), {recursive: true})
      await writeFile(join(memory, 'notes', '2'), 'not a note')
      await mkdir(join(memory, 'notes', '1', 'deeper'))
      await writeFile(join(memory, 'notes', '1', 'deeper', 'gull.md'), '# Gull\n\nThe gull landed on the crane.\n')
      const result = await searchAsNewProcess(root, 'gull')
      expect(result.hits.map((h) => h.path)).toEqual(['notes/1/deeper/gull.md'])
      // The file notes/2 is indexed too (a memory file needs no .md).
      expect(result.stats).toMatchObject({indexed: 2, removed: paths.filter((path) => path.startsWith('notes/2/')).length, files: 10})
    }
  })

  it('finds an edit in place of the same size, through fs.lstatSync alone', async () => {
    resetFileStat(false)
    const {root, memory, paths} = await settledTree()
    const path = paths[5]
    const before = await stat(join(memory, path))
    await writeFile(join(memory, path), '# Note 5\n\nThe harbour puffin number 5 was serviced.\n'.slice(0, Number(before.size)).padEnd(Number(before.size), 'x'))
    const result = await searchAsNewProcess(root, 'puffin')
    expect(result.hits.map((h) => h.path)).toEqual([path])
  })
})
