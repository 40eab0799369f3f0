/**
 * The SQLite index in `.nexus/search/index.sqlite`: what a new process finds after a kill, after edits made in
 * place (which change no directory), after files added and removed; and the ranking rules it keeps (field boosts,
 * prefix and fuzzy terms, more query words matched ranks higher).
 */
import {spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import {appendFile, mkdir, rm, utimes, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {INDEX_FILE, resetSearchCache, searchMemory} from '../../src/search/index.js'
import {KeywordIndex} from '../../src/search/keyword.js'
import {initTree} from '../../src/store/index.js'
import {assertBuilt, runJs} from '../hook/helpers.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {largeCorpus, writeCorpusFast} from './corpus.js'

const dirs: string[] = []
afterAll(async () => {
  resetSearchCache()
  await removeAll(dirs)
})

async function tree(files: Map<string, string>): Promise<string> {
  const dir = await tempDir('jarvis-search-index-')
  dirs.push(dir)
  const {root} = await initTree(dir, {})
  await writeCorpusFast(join(root, '.memory'), files)
  return root
}

const paths = async (root: string, query: string, options: Parameters<typeof searchMemory>[2] = {}) => (await searchMemory(root, query, {embeddings: false, limit: 10, ...options})).hits.map((hit) => hit.path)

/** Every file and folder of `.memory/` dated a day back, as in a tree that grew over months (no racy entries). */
async function ageTree(root: string, files: Iterable<string>): Promise<void> {
  const dayAgo = new Date(Date.now() - 86_400_000)
  const folders = new Set<string>([''])
  for (const path of files) {
    await utimes(join(root, '.memory', path), dayAgo, dayAgo)
    const parts = path.split('/')
    for (let i = 1; i < parts.length; i++) folders.add(parts.slice(0, i).join('/'))
  }
  for (const folder of folders) await utimes(join(root, '.memory', folder), dayAgo, dayAgo)
}

describe('ranking', () => {
  const files = new Map([
    ['notes/title.md', '# Walrus migration\n\nPlans for the spring.\n'],
    ['notes/body.md', '# Spring plans\n\nThe walrus migration starts in May.\n'],
    ['notes/tagged.md', '---\ntags: [walrus]\n---\n# Zoo budget\n\nNothing else here.\n'],
    ['walrus/path.md', '# Zoo map\n\nNothing else here either.\n'],
    ['notes/pgbouncer.md', '# Connection pooling\n\nWe run pgbouncer in transaction mode.\n'],
    ['notes/both.md', '# Kelp\n\nThe otter and the kelp forest.\n'],
    ['notes/one.md', '# Otters\n\nOtter otter otter otter.\n'],
  ])

  it('ranks a title match above a tag match, a tag match above a path match, a path match above a body match', async () => {
    const root = await tree(files)
    expect(await paths(root, 'walrus')).toEqual(['notes/title.md', 'notes/tagged.md', 'walrus/path.md', 'notes/body.md'])
  })

  it('finds words by their first 3+ letters, and by a typo in words of 5+ letters', async () => {
    const root = await tree(files)
    expect(await paths(root, 'pgbounc')).toEqual(['notes/pgbouncer.md'])
    expect(await paths(root, 'pgbuoncer')).toEqual(['notes/pgbouncer.md']) // 2 edits in 9 letters
    expect(await paths(root, 'pgbuoncr')).toEqual([]) // 3 edits: too far
    expect(await paths(root, 'pg')).toEqual([]) // too short for a prefix
    expect((await paths(root, 'walros'))[0]).toBe('notes/title.md') // 1 edit in 6 letters
    expect(await paths(root, 'walrsu')).toEqual([]) // 2 edits in 6 letters: more than 20 %
  })

  it('finds another form of a query word (same English stem) that is no prefix of it, below the word itself', async () => {
    const root = await tree(
      new Map([
        ['trips/hiking.md', '# Weekend\n\nWe went hiking in the hills.\n'],
        ['trips/hike.md', '# Weekend\n\nA long hike in the hills.\n'],
        ['trips/swim.md', '# Weekend\n\nWe went swimming.\n'],
        ['checks/verified.md', '# Webhooks\n\nEach payload is verified with the signing secret.\n'],
      ]),
    )
    // "hiking" is neither a prefix match nor within the typo distance of "hike": only its stem finds it.
    expect(await paths(root, 'hike')).toEqual(['trips/hike.md', 'trips/hiking.md'])
    expect(await paths(root, 'hiking')).toEqual(['trips/hiking.md', 'trips/hike.md'])
    expect(await paths(root, 'verify')).toEqual(['checks/verified.md'])
    expect(await paths(root, 'swimmer')).toEqual([]) // another stem
  })

  it('ranks a file matching more of the query words first, and an exact word above a prefix', async () => {
    const root = await tree(files)
    expect((await paths(root, 'otter kelp'))[0]).toBe('notes/both.md')
    const extra = await tree(new Map([['a/exact.md', '# Notes\n\nThe pool is heated.\n'], ['a/prefix.md', '# Notes\n\nThe pooling is heated.\n']]))
    expect(await paths(extra, 'pool')).toEqual(['a/exact.md', 'a/prefix.md'])
  })

  it('applies the filters before the limit', async () => {
    const root = await tree(files)
    expect(await paths(root, 'walrus', {tags: ['walrus']})).toEqual(['notes/tagged.md'])
    expect(await paths(root, 'walrus', {prefix: 'walrus/'})).toEqual(['walrus/path.md'])
    expect(await paths(root, 'walrus', {limit: 1})).toEqual(['notes/title.md'])
  })
})

describe('a new process', () => {
  it('finds an edit made in place, a new file and a removal, re-indexing only those', async () => {
    const files = largeCorpus(600)
    const root = await tree(files)
    await ageTree(root, files.keys())
    expect((await searchMemory(root, 'redis', {embeddings: false})).stats).toMatchObject({indexed: 600, rebuilt: true})
    resetSearchCache()
    expect((await searchMemory(root, 'redis', {embeddings: false})).stats).toMatchObject({indexed: 0, removed: 0, files: 600, rebuilt: false})

    const [edited, removed] = [...files.keys()].slice(100, 102)
    // An edit in place changes the file, not its folder: the folder's hint holds, the file's stat says it changed.
    await appendFile(join(root, '.memory', edited), '\nLater: the quokkaplatypus flag was removed.\n')
    await rm(join(root, '.memory', removed))
    await mkdir(join(root, '.memory', 'bulk', '00', 'fresh'), {recursive: true})
    await writeFile(join(root, '.memory', 'bulk', '00', 'fresh', 'new.md'), '# New\n\nThe quokkaplatypus rollout.\n')
    resetSearchCache()
    const after = await searchMemory(root, 'quokkaplatypus', {embeddings: false})
    expect(after.stats).toMatchObject({indexed: 2, removed: 1, files: 600, rebuilt: false})
    expect(after.hits.map((hit) => hit.path).sort()).toEqual(['bulk/00/fresh/new.md', edited].sort())
    expect(await paths(root, files.get(removed)!.split('\n').find((line) => line.startsWith('Note '))!)).not.toContain(removed)
  })

  it('finds a usable index after a search was killed while building it', async () => {
    assertBuilt()
    const files = largeCorpus(3000)
    const root = await tree(files)
    const child = spawn(process.execPath, [runJs, 'recall', 'pgbouncer'], {cwd: root, env: {...process.env, JARVIS_DIR: ''}, stdio: 'ignore'})
    const exited = new Promise((resolve) => child.on('exit', resolve))
    const index = join(root, '.nexus', INDEX_FILE)
    while (!existsSync(index) && child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 5))
    child.kill('SIGKILL') // mid-build: the database exists, the first transaction is not committed
    await exited
    expect(existsSync(index)).toBe(true)

    resetSearchCache()
    const after = await searchMemory(root, 'pgbouncer', {embeddings: false, limit: 3})
    // The killed transaction left nothing half-written: every file is indexed now, once.
    expect(after.stats).toMatchObject({indexed: 3000, removed: 0, files: 3000})
    expect(after.hits[0].path).toMatch(/run-pgbouncer-in-transaction-pooling-mode/)
  })

  it('rebuilds an index file that is not an index (torn by hand, or another program wrote there)', async () => {
    const files = largeCorpus(50)
    const root = await tree(files)
    await searchMemory(root, 'redis', {embeddings: false})
    resetSearchCache()
    await writeFile(join(root, '.nexus', INDEX_FILE), Buffer.alloc(8192, 7))
    const after = await searchMemory(root, 'redis', {embeddings: false})
    expect(after.stats).toMatchObject({indexed: 50, files: 50, rebuilt: true})
    expect(after.hits.length).toBeGreaterThan(0)
  })
})

describe('two processes', () => {
  it('refreshing the same index one after the other: each starts from what the other wrote, and nothing is lost', async () => {
    const files = largeCorpus(40)
    const root = await tree(files)
    await searchMemory(root, 'redis', {embeddings: false})
    resetSearchCache()
    // Two processes open the index at the same state…
    const [a, b] = await Promise.all([KeywordIndex.load(root), KeywordIndex.load(root)])
    try {
      // …then each sees a different new file: a writes first, b's ids and hints are then out of date.
      await writeFile(join(root, '.memory', 'from-a.md'), '# A\n\nThe axolotl note.\n')
      expect(await a.refresh()).toMatchObject({indexed: 1, files: 41})
      await writeFile(join(root, '.memory', 'from-b.md'), '# B\n\nThe axolotl memo.\n')
      expect(await b.refresh()).toMatchObject({indexed: 1, files: 42})
      expect(b.search('axolotl', {}, 10).map((hit) => hit.path).sort()).toEqual(['from-a.md', 'from-b.md'])
    } finally {
      a.close()
      b.close()
    }
    expect((await paths(root, 'axolotl')).sort()).toEqual(['from-a.md', 'from-b.md'])
    expect((await searchMemory(root, 'axolotl', {embeddings: false})).stats).toMatchObject({indexed: 0, files: 42})
  })
})
