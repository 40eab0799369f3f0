/**
 * The tree watch behind the warm path (src/warm/tree-watch.ts), in this process: every search waits for the
 * watch to have seen the changes made before it; a watch that cannot vouch for the order of events (another
 * platform, a watch limit reached) rescans the tree at every search instead — slower, never a wrong answer.
 */
import {writeFileSync} from 'node:fs'
import {cp, mkdir, rename, rm, symlink} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, describe, expect, it} from 'vitest'

import {resetSearchCache, searchMemory} from '../../src/search/index.js'
import {initTree} from '../../src/store/index.js'
import {type FreshTree, watchTreeFresh} from '../../src/warm/tree-watch.js'
import {removeAll, tempDir} from '../helpers/world.js'

const watches: FreshTree[] = []
const dirs: string[] = []

afterEach(async () => {
  for (const watch of watches.splice(0)) await watch.close()
  resetSearchCache()
  await removeAll(dirs.splice(0))
})

async function tree(): Promise<{root: string; memory: string}> {
  const dir = await tempDir('jarvis-tree-watch-')
  dirs.push(dir)
  const {root} = await initTree(dir, {agent: 'claude'})
  return {root, memory: join(root, '.memory')}
}

const WORDS = ['lynx', 'heron', 'otter', 'badger', 'falcon', 'beaver', 'tapir', 'gecko', 'bison', 'moose']
const paths = async (root: string, query: string) => (await searchMemory(root, query, {embeddings: false})).hits.map((hit) => hit.path).sort()

describe.each([
  ['ordered (inotify and cookies)', true],
  ['unordered (a rescan per search)', false],
])('a tree watch, %s', (_name, ordered) => {
  it('each search sees the files written, moved and removed just before it, in new folders too', async () => {
    const {root, memory} = await tree()
    const watch = watchTreeFresh(root, {ordered})
    watches.push(watch)
    expect(watch.ordered()).toBe(ordered)
    for (let i = 0; i < 10; i++) {
      writeFileSync(join(memory, `n${i}.md`), `# N${i}\n\n${WORDS[i]}\n`)
      expect(await paths(root, WORDS[i])).toEqual([`n${i}.md`])
    }
    await mkdir(join(memory, 'a', 'b', 'c'), {recursive: true})
    writeFileSync(join(memory, 'a', 'b', 'c', 'deep.md'), '# Deep\n\nmarmot\n')
    expect(await paths(root, 'marmot')).toEqual(['a/b/c/deep.md'])
    // The new folder is watched: a later change inside it is found without a rescan.
    writeFileSync(join(memory, 'a', 'b', 'c', 'deep.md'), '# Deep\n\nwalrus\n')
    expect(await paths(root, 'walrus')).toEqual(['a/b/c/deep.md'])
    expect(await paths(root, 'marmot')).toEqual([])
    await rename(join(memory, 'a'), join(memory, 'z'))
    expect(await paths(root, 'walrus')).toEqual(['z/b/c/deep.md'])
    await rm(join(memory, 'z'), {recursive: true})
    expect(await paths(root, 'walrus')).toEqual([])
    // Backups and temp files are not memory files.
    writeFileSync(join(memory, 'n1.local.bak'), 'heron\n')
    expect(await paths(root, 'heron')).toEqual(['n1.md'])
    // Folders came and went: the watch still vouches for the order (it did not fall back to rescanning).
    expect(watch.ordered()).toBe(ordered)
  })

  it('a search after `.memory/` itself was replaced sees the new folder, and later edits in it', async () => {
    const {root, memory} = await tree()
    writeFileSync(join(memory, 'first.md'), '# First\n\nlynx\n')
    const watch = watchTreeFresh(root, {ordered})
    watches.push(watch)
    expect(await paths(root, 'lynx')).toEqual(['first.md'])
    // Moved away and restored as a copy: the watches follow the old folder.
    await rename(memory, `${memory}-old`)
    await cp(`${memory}-old`, memory, {recursive: true, preserveTimestamps: true})
    writeFileSync(join(memory, 'wombat.md'), '# Wombat\n\nwombat lives here\n')
    expect(await paths(root, 'wombat')).toEqual(['wombat.md'])
    writeFileSync(join(memory, 'first.md'), '# First\n\nheron\n')
    expect(await paths(root, 'heron')).toEqual(['first.md'])
    // A symlink pointed at another folder is a replacement too.
    const elsewhere = join(root, 'elsewhere')
    await mkdir(elsewhere)
    writeFileSync(join(elsewhere, 'kept.md'), '# Kept\n\notter\n')
    await rm(memory, {recursive: true})
    await symlink(elsewhere, memory)
    expect(await paths(root, 'otter')).toEqual(['kept.md'])
    expect(await paths(root, 'wombat')).toEqual([])
    writeFileSync(join(elsewhere, 'new.md'), '# New\n\nbadger\n')
    expect(await paths(root, 'badger')).toEqual(['new.md'])
  })
})
