/**
 * The built-in model's vectors on disk (src/search/vector-log.ts, ChunkVectorStore): an append-only log read in one
 * go. Whatever happened to it — edits, removals, two processes writing, a torn or corrupt write, another model's
 * file — what a new process reads ranks exactly as vectors made from scratch would. Real trees, real model.
 */
import {spawn} from 'node:child_process'
import {createHash} from 'node:crypto'
import {existsSync, mkdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {crc32} from 'node:zlib'

import fc from 'fast-check'
import {afterAll, describe, expect, it} from 'vitest'

import {resetSearchCache, searchMemory} from '../../src/search/index.js'
import {KeywordIndex} from '../../src/search/keyword.js'
import {BUILTIN_MODEL, builtinModel, ChunkVectorStore, VECTORS_FILE} from '../../src/search/semantic.js'
import {encodeMark} from '../../src/search/vector-log.js'
import {initTree} from '../../src/store/index.js'
import {assertBuilt, runJs} from '../hook/helpers.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {largeCorpus, writeCorpusFast} from './corpus.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

const model = builtinModel()!
const QUERIES = ['database failover replica', 'holiday beach hotel', 'release checklist deploy']
const WORDS = ['database', 'failover', 'replica', 'holiday', 'beach', 'hotel', 'release', 'checklist', 'deploy', 'coffee', 'garden', 'invoice']

type Tree = Map<string, string>

async function emptyRoot(): Promise<string> {
  const root = await tempDir('jarvis-vector-log-')
  dirs.push(root)
  mkdirSync(join(root, '.memory'), {recursive: true})
  mkdirSync(join(root, '.nexus'), {recursive: true})
  return root
}

/** Writes `tree` into `root`'s `.memory/` (removing what it no longer holds) and answers its path → hash map. */
function writeTree(root: string, tree: Tree, before: Tree = new Map()): Map<string, {hash: string}> {
  for (const path of before.keys()) if (!tree.has(path)) rmSync(join(root, '.memory', path))
  for (const [path, text] of tree) {
    mkdirSync(dirname(join(root, '.memory', path)), {recursive: true})
    writeFileSync(join(root, '.memory', path), text)
  }
  return new Map([...tree].map(([path, text]) => [path, {hash: createHash('sha256').update(text).digest('hex')}]))
}

/** Cuts the log at `file` short, or flips a byte of it, at `where` (0 to 1) of its length. */
function damageLog(file: string, where: number, damage: 'cut' | 'flip'): void {
  const bytes = readFileSync(file)
  const at = Math.min(bytes.length - 1, Math.floor(where * bytes.length))
  if (damage === 'cut') truncateSync(file, at)
  else {
    bytes[at] ^= 0x5a
    writeFileSync(file, bytes)
  }
}

/** The CRC-32 field of each record of a log (after its header). */
function readRecordCrcs(bytes: Buffer): number[] {
  const crcs: number[] = []
  for (let at = 16 + ((bytes.readUInt32LE(12) + 3) & ~3); at < bytes.length; at += bytes.readUInt32LE(at)) crcs.push(bytes.readUInt32LE(at + 4))
  return crcs
}

const rankings = (store: ChunkVectorStore) => QUERIES.map((query) => store.rank(model.embed(query), undefined, Infinity))
const wordScores = (store: ChunkVectorStore, tree: Tree) => QUERIES.map((query) => [...store.wordMatch(query, tree.keys())].sort())

/** What vectors made from nothing rank like, for `tree`. */
async function fromScratch(tree: Tree): Promise<{rankings: ReturnType<typeof rankings>; words: ReturnType<typeof wordScores>}> {
  const root = await emptyRoot()
  const store = new ChunkVectorStore(root, model, BUILTIN_MODEL)
  await store.update(writeTree(root, tree))
  return {rankings: rankings(store), words: wordScores(store, tree)}
}

const text = fc.array(fc.constantFrom(...WORDS), {minLength: 0, maxLength: 12}).map((words) => `# Note\n\n${words.join(' ')}\n`)
const PATHS = ['a.md', 'b.md', 'notes/c.md', 'notes/d.md']
/** One step: a file written (added or changed) or removed, then one of two processes brings its vectors up to date. */
const step = fc.record({path: fc.constantFrom(...PATHS), text: fc.option(text, {nil: undefined}), process: fc.constantFrom(0, 1), restart: fc.boolean(), viaIndex: fc.boolean()})

/**
 * The keyword index as ChunkVectorStore.updateFrom sees it, for `current`: its files, and a manifest digest that
 * (like the real manifest, whose stats change with every edit) differs whenever the tree does.
 */
const indexOf = (current: Map<string, {hash: string}>, generation: number) => ({
  files: current,
  generation,
  freshManifest: crc32(JSON.stringify([...current].sort())),
})

describe('the vectors log', () => {
  it('after any edits and removals, by two processes, with or without sync marks, a new process reads what embedding from scratch gives, and embeds nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, {minLength: 1, maxLength: 12}), async (steps) => {
        const root = await emptyRoot()
        const processes = [new ChunkVectorStore(root, model, BUILTIN_MODEL), new ChunkVectorStore(root, model, BUILTIN_MODEL)]
        let tree: Tree = new Map()
        let current = writeTree(root, tree)
        for (const [i, {path, text: content, process, restart, viaIndex}] of steps.entries()) {
          const next = new Map(tree)
          if (content === undefined) next.delete(path)
          else next.set(path, content)
          current = writeTree(root, next, tree)
          tree = next
          if (restart) processes[process] = new ChunkVectorStore(root, model, BUILTIN_MODEL)
          if (viaIndex) await processes[process].updateFrom(indexOf(current, i))
          else await processes[process].update(current)
        }
        const fresh = new ChunkVectorStore(root, model, BUILTIN_MODEL)
        expect(await fresh.updateFrom(indexOf(current, steps.length))).toBe(0)
        const scratch = await fromScratch(tree)
        expect(rankings(fresh)).toEqual(scratch.rankings)
        expect(wordScores(fresh, tree)).toEqual(scratch.words)
      }),
      {numRuns: 30},
    )
  })

  it('a file another process removed, written back as it was, is in the log again: a new process embeds nothing', async () => {
    // The property above found it: the first process still held the file's vectors for the same text, so it had
    // nothing to embed, and the log's last record of the file was the other process's removal.
    const root = await emptyRoot()
    const [first, other] = [new ChunkVectorStore(root, model, BUILTIN_MODEL), new ChunkVectorStore(root, model, BUILTIN_MODEL)]
    const note: Tree = new Map([['notes/d.md', '# Note\n\ndatabase failover\n']])
    let current = writeTree(root, note)
    expect(await first.update(current)).toBe(1)
    current = writeTree(root, new Map(), note)
    await other.update(current)
    current = writeTree(root, note, new Map())
    expect(await first.update(current)).toBe(0)
    expect(await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(current)).toBe(0)
  })

  it('reads each path back as written, a leading U+FEFF and other non-ASCII names included: a new process embeds nothing', async () => {
    // A TextDecoder drops a leading byte order mark: the file's vectors were read under another name, and embedded again.
    const root = await emptyRoot()
    const tree: Tree = new Map([
      ['\uFEFFbom.md', '# Bom\n\ndatabase failover\n'],
      ['notes/café-über.md', '# Café\n\nholiday beach hotel\n'],
      ['plain.md', '# Plain\n\nrelease checklist\n'],
    ])
    const current = writeTree(root, tree)
    expect(await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(current)).toBe(3)
    const again = new ChunkVectorStore(root, model, BUILTIN_MODEL)
    expect(await again.update(current)).toBe(0)
    expect(rankings(again)[0].map((hit) => hit.path).sort()).toEqual([...tree.keys()].sort())
  })

  it('embeds only what changed: a new file, an edited one; a removed file is dropped', async () => {
    const root = await emptyRoot()
    const tree: Tree = new Map([
      ['a.md', '# A\n\ndatabase failover\n'],
      ['b.md', '# B\n\nholiday beach\n'],
    ])
    expect(await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(writeTree(root, tree))).toBe(2)
    const next: Tree = new Map([
      ['a.md', '# A\n\ndatabase failover replica\n'],
      ['c.md', '# C\n\nrelease checklist\n'],
    ])
    const store = new ChunkVectorStore(root, model, BUILTIN_MODEL)
    const current = writeTree(root, next, tree)
    expect(await store.update(current)).toBe(2)
    expect(rankings(store)[1].map((hit) => hit.path).sort()).toEqual(['a.md', 'c.md'])
    expect(await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(current)).toBe(0)
  })

  it('a torn or corrupt log is not trusted: what it cannot vouch for is embedded again, the rest read, the log written anew', async () => {
    const tree: Tree = new Map(PATHS.map((path, i) => [path, `# Note ${i}\n\n${WORDS.slice(i, i + 6).join(' ')}\n`]))
    const scratch = await fromScratch(tree)
    await fc.assert(
      fc.asyncProperty(fc.double({min: 0, max: 1, noNaN: true}), fc.constantFrom('cut', 'flip'), async (where, damage) => {
        const root = await emptyRoot()
        const current = writeTree(root, tree)
        await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(current)
        const file = join(root, '.nexus', VECTORS_FILE)
        damageLog(file, where, damage)
        const reader = new ChunkVectorStore(root, model, BUILTIN_MODEL)
        const embedded = await reader.update(current)
        expect(embedded).toBeGreaterThanOrEqual(1)
        expect(rankings(reader)).toEqual(scratch.rankings)
        expect(wordScores(reader, tree)).toEqual(scratch.words)
        expect(await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(current)).toBe(0)
      }),
      {numRuns: 25},
    )
  })

  it('a sync mark carries the CRC-32 of the log before it; damage anywhere before or in it is still found', async () => {
    const tree: Tree = new Map(PATHS.map((path, i) => [path, `# Note ${i}\n\n${WORDS.slice(i, i + 6).join(' ')}\n`]))
    const scratch = await fromScratch(tree)
    await fc.assert(
      fc.asyncProperty(fc.double({min: 0, max: 1, noNaN: true}), fc.constantFrom('cut', 'flip'), fc.boolean(), async (where, damage, twoWriters) => {
        const root = await emptyRoot()
        const current = writeTree(root, tree)
        const half = new Map([...current].slice(0, 2))
        // One process's marks, or two processes' records and marks one after the other in the same log.
        if (twoWriters) await new ChunkVectorStore(root, model, BUILTIN_MODEL).updateFrom(indexOf(half, 0))
        await new ChunkVectorStore(root, model, BUILTIN_MODEL).updateFrom(indexOf(current, 1))
        const file = join(root, '.nexus', VECTORS_FILE)
        const bytes = readFileSync(file)
        const mark = bytes.subarray(bytes.length - 40)
        expect([mark.readUInt32LE(0), mark.readUInt32LE(16), mark.readUInt32LE(20)]).toEqual([40, 0xfffffffe, 4])
        expect(mark.readUInt32LE(36)).toBe(crc32(bytes.subarray(0, bytes.length - 40)))
        damageLog(file, where, damage)
        const reader = new ChunkVectorStore(root, model, BUILTIN_MODEL)
        await reader.updateFrom(indexOf(current, 2))
        expect(rankings(reader)).toEqual(scratch.rankings)
        expect(wordScores(reader, tree)).toEqual(scratch.words)
        expect(await new ChunkVectorStore(root, model, BUILTIN_MODEL).updateFrom(indexOf(current, 3))).toBe(0)
      }),
      {numRuns: 40},
    )
  })

  it("an older jarvis's sync mark, without the log's CRC-32, or a mark whose CRC-32 is wrong, still vouches for the files it counts", async () => {
    for (const logCrc of [undefined, 12345]) {
      const root = await emptyRoot()
      const tree: Tree = new Map([
        ['a.md', '# A\n\ndatabase failover\n'],
        ['b.md', '# B\n\nholiday beach\n'],
      ])
      const current = writeTree(root, tree)
      await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(current)
      const file = join(root, '.nexus', VECTORS_FILE)
      // The records' CRC-32s, as the mark sums them (the second uint32 of each record).
      const records = readRecordCrcs(readFileSync(file))
      const index = indexOf(current, 0)
      writeFileSync(file, Buffer.concat([readFileSync(file), encodeMark({manifest: index.freshManifest, files: 2, crcSum: (records[0] + records[1]) >>> 0, ...(logCrc === undefined ? {} : {logCrc})})]))
      const before = readFileSync(file)
      const {ino} = statSync(file)
      const reader = new ChunkVectorStore(root, model, BUILTIN_MODEL)
      // Vouched for by the mark: not compared with the index's files (which hold no file at all here).
      expect(await reader.updateFrom({...index, files: new Map()})).toBe(0)
      expect(rankings(reader)).toEqual((await fromScratch(tree)).rankings)
      // Read, not taken for a torn record (the log is not written again), and followed by a mark with the CRC-32.
      const after = readFileSync(file)
      expect(statSync(file).ino).toBe(ino)
      expect(after.subarray(0, before.length).equals(before)).toBe(true)
      expect(after.length).toBe(before.length + 40)
      expect(after.readUInt32LE(after.length - 4)).toBe(crc32(before))
      expect(await new ChunkVectorStore(root, model, BUILTIN_MODEL).updateFrom({...index, files: new Map()})).toBe(0)
      expect(readFileSync(file).length).toBe(after.length)
    }
  })

  it("another model's or format's log is replaced, not read", async () => {
    const root = await emptyRoot()
    const tree: Tree = new Map([['a.md', '# A\n\ndatabase failover\n']])
    const current = writeTree(root, tree)
    await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(current)
    const file = join(root, '.nexus', VECTORS_FILE)
    const bytes = readFileSync(file)
    bytes.writeUInt32LE(99, 4) // a format this jarvis does not know
    writeFileSync(file, bytes)
    expect(await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(current)).toBe(1)
    expect(await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(current)).toBe(0)
  })

  it('where .nexus/ cannot be written, keeps the vectors in memory: the process embeds once, the next one again', async () => {
    const root = await emptyRoot()
    writeFileSync(join(root, '.nexus', 'search'), 'not a folder') // no log can be read or written under it
    const tree: Tree = new Map([
      ['a.md', '# A\n\ndatabase failover\n'],
      ['b.md', '# B\n\nholiday beach\n'],
    ])
    const current = writeTree(root, tree)
    const store = new ChunkVectorStore(root, model, BUILTIN_MODEL)
    expect(await store.update(current)).toBe(2)
    expect(rankings(store)).toEqual((await fromScratch(tree)).rankings)
    const edited = writeTree(root, new Map([...tree, ['b.md', '# B\n\nrelease checklist\n']]), tree)
    expect(await store.update(edited)).toBe(1)
    expect(await new ChunkVectorStore(root, model, BUILTIN_MODEL).update(edited)).toBe(2)
  })

  it('a .nexus/ removed while a process keeps its vectors is not made again: they stay in memory, the index opens nowhere', async () => {
    const root = await emptyRoot()
    const tree: Tree = new Map([['a.md', '# A\n\ndatabase failover\n']])
    const store = new ChunkVectorStore(root, model, BUILTIN_MODEL)
    await store.update(writeTree(root, tree))
    // As `rm -rf` of the tree does while a watch runs in it: `.nexus/` goes first, then the root.
    rmSync(join(root, '.nexus'), {recursive: true})
    const edited = writeTree(root, new Map([['a.md', '# A\n\nrelease checklist\n']]), tree)
    expect(await store.update(edited)).toBe(1)
    expect(existsSync(join(root, '.nexus'))).toBe(false)
    rmSync(root, {recursive: true})
    const index = await KeywordIndex.load(root)
    index.close()
    expect(existsSync(root)).toBe(false)
  })

  /** Two trees holding the same files: one the test works on, one embedded from scratch to compare with. */
  async function twoTrees(files: Map<string, string>): Promise<string[]> {
    return Promise.all(
      [0, 1].map(async () => {
        const dir = await tempDir('jarvis-vector-log-')
        dirs.push(dir)
        const {root} = await initTree(dir, {})
        await writeCorpusFast(join(root, '.memory'), files)
        return root
      }),
    )
  }

  it('after a recall killed (-9) while it embedded the tree, the next one keeps what was saved, embeds the rest, and ranks as from scratch', async () => {
    assertBuilt()
    const [killed, scratch] = await twoTrees(largeCorpus(1200))
    const child = spawn(process.execPath, [runJs, 'recall', 'pgbouncer'], {cwd: killed, env: {...process.env, JARVIS_DIR: '', JARVIS_WARM: 'off'}, stdio: 'ignore'})
    const exited = new Promise((resolve) => child.on('exit', resolve))
    const log = join(killed, '.nexus', VECTORS_FILE)
    const size = () => statSync(log, {throwIfNoEntry: false})?.size ?? 0
    // The first batch of 500 files written: the rest is being embedded.
    while (size() < 100_000 && child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 5))
    child.kill('SIGKILL')
    await exited

    resetSearchCache()
    const after = await searchMemory(killed, 'connection pooling for postgres', {limit: 10})
    expect(after.stats.embedded).toBeGreaterThan(0) // killed mid-way…
    expect(after.stats.embedded).toBeLessThan(1200) // …after a batch was saved
    resetSearchCache()
    const fromScratch = await searchMemory(scratch, 'connection pooling for postgres', {limit: 10})
    expect(fromScratch.stats.embedded).toBe(1200)
    expect(after.hits).toEqual(fromScratch.hits)
    resetSearchCache()
    expect((await searchMemory(killed, 'connection pooling for postgres')).stats.embedded).toBe(0)
  })

  it('two recalls embedding the same tree at once, each writing the log, leave vectors that rank as from scratch', async () => {
    assertBuilt()
    const [shared, scratch] = await twoTrees(largeCorpus(1100))
    // The keyword index built first, so that both processes go on to embed at the same time.
    await searchMemory(shared, 'pgbouncer', {embeddings: false})
    resetSearchCache()
    const run = () =>
      new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, [runJs, 'recall', 'pgbouncer'], {cwd: shared, env: {...process.env, JARVIS_DIR: '', JARVIS_WARM: 'off'}, stdio: 'ignore'})
        child.on('exit', resolve)
      })
    expect(await Promise.all([run(), run()])).toEqual([0, 0])

    const after = await searchMemory(shared, 'connection pooling for postgres', {limit: 10})
    resetSearchCache()
    const fromScratch = await searchMemory(scratch, 'connection pooling for postgres', {limit: 10})
    expect(after.hits).toEqual(fromScratch.hits)
    // Every file, not only the top 10: the vectors read from the shared log are those made from scratch.
    const ranked = async (root: string) => {
      const index = await KeywordIndex.load(root)
      await index.refresh()
      const store = new ChunkVectorStore(root, model, BUILTIN_MODEL)
      await store.updateFrom(index)
      index.close()
      return rankings(store)
    }
    expect(await ranked(shared)).toEqual(await ranked(scratch))
  })
})
