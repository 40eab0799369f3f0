/**
 * `memory ls` with its listing cache (`.nexus/listing-cache.json`): whatever happened to the files between two
 * listings (an edit in place of the same size with its old mtime put back, a file added, removed or renamed over
 * another), the listing is the one a listing without the cache gives, byte for byte; a cache that is torn, foreign or
 * out of shape is not used; listings at the same moment do not break each other; a `.nexus/` that cannot take the
 * cache still lists.
 *
 * The clock: an entry stands for a file only when the file's last change is 2 s older than the entry's check (the
 * racy rule). Most tests set the clock of this process an hour ahead, so that every entry written stands at once and
 * only the stat (size, mtime, ctime, inode) guards it: the strictest case for the cache. Each change of a file is
 * made only once the file system's clock has moved past the last change made (`nextTick`), as it has between two
 * real calls: two changes in one clock granule are what the racy rule is for, and it is tested on its own.
 */
import {existsSync, lstatSync, readFileSync} from 'node:fs'
import {mkdir, readFile, rename, rm, stat, utimes, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import fc from 'fast-check'
import {afterAll, afterEach, describe, expect, it, vi} from 'vitest'

import {listFiles} from '../../src/files/list.js'
import {memoryLs} from '../../src/ops/memory-ls.js'
import {initTree} from '../../src/store/index.js'
import {LISTING_CACHE_FILE} from '../../src/store/listing-cache.js'
import {removeAll, tempDir} from '../helpers/world.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))
afterEach(() => vi.useRealTimers())

/** This process's clock an hour ahead: every entry the cache writes stands at once (see the module comment). */
function clockAhead(): void {
  vi.useFakeTimers({toFake: ['Date']})
  vi.setSystemTime(Date.now() + 3_600_000)
}

async function newTree(): Promise<{root: string; memory: string; probe: string}> {
  const dir = await tempDir('jarvis-list-cache-')
  dirs.push(dir)
  const {root} = await initTree(dir, {})
  return {root, memory: join(root, '.memory'), probe: join(dir, 'clock-probe')}
}

/** The ctime of what `path` holds now (0: nothing). */
const ctimeOf = (path: string) => lstatSync(path, {throwIfNoEntry: false})?.ctimeMs ?? 0

/**
 * Waits until the file system's clock is past `after` (a ctime): a file written next gets a later ctime. Condition,
 * not a guess: it writes a file beside the tree until its ctime moves past (a clock granule, a few ms at most).
 */
async function nextTick(probe: string, after: number): Promise<void> {
  for (;;) {
    await writeFile(probe, String(Math.random()))
    if ((await stat(probe)).ctimeMs > after) return
  }
}

const uncached = (root: string, prefix?: string, limit?: number) => listFiles(root, prefix, limit, {cache: false})
const json = (value: unknown) => JSON.stringify(value)

/** Texts of one length but the last (most edits keep the size), with other titles and tags, and front matter that does not parse. */
const TEXTS = [
  ...[
    '---\ntitle: Alpha\ntags: [one]\n---\nAlpha body.\n',
    '---\ntitle: Bravo\ntags: [two]\n---\nBravo body.\n',
    '---\ntitle: [Charlie\ntags: x\n---\nCharlie b.\n',
    '# Delta heading only, no front matter at all.\n',
    '---\ntags: [three, four]\n---\nEcho body here\n',
  ].map((text, _, all) => text.padEnd(Math.max(...all.map((t) => t.length)), ' ')),
  '---\ntitle: Foxtrot, shorter\n---\n',
]
const PATHS = ['a.md', 'b.md', 'notes/c.md', 'notes/d.md', 'notes/deep/e.md', 'z.json']

type Op =
  | {kind: 'write'; path: string; text: number; keepMtime: boolean}
  | {kind: 'remove'; path: string}
  | {kind: 'rename'; from: string; to: string}
  | {kind: 'list'; prefix?: string; limit?: number}

const pathArb = fc.constantFrom(...PATHS)
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({kind: fc.constant('write' as const), path: pathArb, text: fc.nat({max: TEXTS.length - 1}), keepMtime: fc.boolean()}),
  fc.record({kind: fc.constant('remove' as const), path: pathArb}),
  fc.record({kind: fc.constant('rename' as const), from: pathArb, to: pathArb}),
  fc.record({kind: fc.constant('list' as const), prefix: fc.option(fc.constantFrom('', 'notes/', 'notes/deep', 'b'), {nil: undefined}), limit: fc.option(fc.integer({min: 1, max: 4}), {nil: undefined})}),
)

let mtimes = 0

/** Applies a change to the files (none when there is no file to remove or rename). */
async function apply(memory: string, probe: string, op: Exclude<Op, {kind: 'list'}>): Promise<void> {
  const full = (path: string) => join(memory, ...path.split('/'))
  const touched = op.kind === 'rename' ? [full(op.from), full(op.to)] : [full(op.path)]
  if (op.kind !== 'write' && !existsSync(touched[0])) return
  await nextTick(probe, Math.max(...touched.map(ctimeOf)))
  if (op.kind === 'write') {
    const before = lstatSync(full(op.path), {throwIfNoEntry: false})
    await mkdir(dirname(full(op.path)), {recursive: true})
    // In place: the same inode, the same size when the text has the old one's length; its old mtime put back when asked
    // (every mtime here is set to a whole millisecond, so that putting it back gives the very same number).
    await writeFile(full(op.path), TEXTS[op.text])
    const mtime = op.keepMtime && before ? before.mtime : new Date(Date.UTC(2026, 0, 1) + ++mtimes * 1000)
    await utimes(full(op.path), mtime, mtime)
  } else if (op.kind === 'remove') {
    await rm(full(op.path))
  } else if (op.from !== op.to) {
    await mkdir(dirname(full(op.to)), {recursive: true})
    await rename(full(op.from), full(op.to))
  }
}

describe('memory ls with its listing cache', () => {
  it('lists what a listing without the cache lists, whatever changed in between (fast-check)', async () => {
    clockAhead()
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(pathArb, fc.nat({max: TEXTS.length - 1})), {maxLength: 6}), fc.array(opArb, {minLength: 1, maxLength: 24}), async (initial, ops) => {
        const {root, memory, probe} = await newTree()
        for (const [path, text] of initial) await apply(memory, probe, {kind: 'write', path, text, keepMtime: false})
        // Every kind of listing first, so that the cache has an entry for every file before the changes.
        expect(json(await listFiles(root))).toBe(json(await uncached(root)))
        for (const op of [...ops, {kind: 'list'} satisfies Op as Op]) {
          if (op.kind !== 'list') {
            await apply(memory, probe, op)
            continue
          }
          expect(json(await listFiles(root, op.prefix, op.limit))).toBe(json(await uncached(root, op.prefix, op.limit)))
        }
      }),
      {numRuns: 40},
    )
  })

  it('keeps what it read for the next listing, and lets an entry stand only when the file has not changed for 2 s before it was checked', async () => {
    const {root, memory} = await newTree()
    await writeFile(join(memory, 'a.md'), TEXTS[0])
    const info = lstatSync(join(memory, 'a.md'))
    // A cache that says otherwise than the file, for the file's very stat: used only when the racy rule lets it stand.
    const cacheWith = (checkedAtMs: number) =>
      writeFile(join(root, '.nexus', LISTING_CACHE_FILE), JSON.stringify({version: 1, files: {'a.md': [info.size, info.mtimeMs, info.ctimeMs, info.ino, checkedAtMs, 'From the cache', [], null]}}))
    const changed = Math.max(info.mtimeMs, info.ctimeMs)
    await cacheWith(changed + 2000) // checked 2 s after the change, not more: the file is read
    expect((await listFiles(root)).map((f) => f.title)).toEqual(['Alpha'])
    await cacheWith(changed + 2001)
    expect((await listFiles(root)).map((f) => f.title)).toEqual(['From the cache'])
    // This listing's own entries: a file changed less than 2 s before the check is not written to the cache at all
    // (the clock set to 1,999 ms after b.md's last change, whatever the machine's speed).
    await rm(join(root, '.nexus', LISTING_CACHE_FILE))
    await writeFile(join(memory, 'b.md'), TEXTS[1])
    const b = lstatSync(join(memory, 'b.md'))
    vi.useFakeTimers({toFake: ['Date']})
    vi.setSystemTime(Math.max(b.mtimeMs, b.ctimeMs) + 1999)
    expect((await listFiles(root)).map((f) => f.title)).toEqual(['Alpha', 'Bravo'])
    const written = existsSync(join(root, '.nexus', LISTING_CACHE_FILE)) ? (JSON.parse(await readFile(join(root, '.nexus', LISTING_CACHE_FILE), 'utf8')) as {files: object}).files : {}
    expect(Object.keys(written)).not.toContain('b.md')
  })

  it('does not use a cache that is torn, of another version or out of shape, and writes it anew', async () => {
    clockAhead()
    const {root, memory} = await newTree()
    for (const [i, path] of ['a.md', 'notes/b.md', 'notes/c.md'].entries()) {
      await mkdir(dirname(join(memory, path)), {recursive: true})
      await writeFile(join(memory, path), TEXTS[i])
    }
    const cacheFile = join(root, '.nexus', LISTING_CACHE_FILE)
    await listFiles(root)
    const good = await readFile(cacheFile, 'utf8')
    const row = (JSON.parse(good) as {files: Record<string, unknown[]>}).files['a.md']
    const wrong = (at: number, value: unknown) => JSON.stringify({version: 1, files: {'a.md': row.map((field, i) => (i === at ? value : field))}})
    const broken = [
      good.slice(0, Math.floor(good.length / 2)), // torn
      '\u0000\u0001garbage',
      '',
      'null',
      '[]',
      JSON.stringify({version: 2, files: {'a.md': [...row.slice(0, 5), 'Stale', [], null]}}),
      JSON.stringify({version: 1, files: [row]}),
      wrong(5, 42), // a title that is not a string
      wrong(6, 'one'), // tags that are not a list
      wrong(6, [1]),
      wrong(7, false),
      wrong(0, '61'), // a size that is not a number
      JSON.stringify({version: 1, files: {'a.md': [...row, 'extra']}}),
      JSON.stringify({version: 1, files: {'a.md': row.slice(0, 7)}}),
    ]
    // A cache of the very stats but other fields, out of shape only where said: never listed.
    const stale = (text: string) => text.replace(/"Alpha"/g, '"Stale"')
    for (const text of broken) {
      await writeFile(cacheFile, stale(text))
      expect(json(await listFiles(root))).toBe(json(await uncached(root)))
      // Written anew, whole: the next listing lists from it what the files say.
      expect(() => JSON.parse(readFileSync(cacheFile, 'utf8'))).not.toThrow()
      expect(json(await listFiles(root))).toBe(json(await uncached(root)))
    }
  })

  it('lists right when listings run at the same moment, each writing the cache', async () => {
    clockAhead()
    const {root, memory, probe} = await newTree()
    for (let i = 0; i < 40; i++) {
      await mkdir(join(memory, `f${i % 4}`), {recursive: true})
      await writeFile(join(memory, `f${i % 4}`, `n${i}.md`), TEXTS[i % TEXTS.length])
    }
    const asks: Array<[string | undefined, number | undefined]> = [[undefined, undefined], ['f1/', undefined], ['f2', 3], [undefined, 7], ['f3/n3', undefined], ['f0/', 2]]
    for (let round = 0; round < 3; round++) {
      const all = await Promise.all([...asks, ...asks].map(([prefix, limit]) => listFiles(root, prefix, limit)))
      for (const [i, listed] of all.entries()) expect(json(listed)).toBe(json(await uncached(root, ...asks[i % asks.length])))
      // Between rounds, some files change in place (same size, old mtime), one goes, one comes.
      for (const i of [round, round + 8, round + 17]) await apply(memory, probe, {kind: 'write', path: `f${i % 4}/n${i}.md`, text: (i + 1 + round) % TEXTS.length, keepMtime: true})
      await apply(memory, probe, {kind: 'remove', path: `f${(round + 5) % 4}/n${round + 5}.md`})
      await apply(memory, probe, {kind: 'write', path: `f${round % 4}/new-${round}.md`, text: round, keepMtime: false})
    }
  })

  it('still lists when .nexus/ cannot take the cache, or is not there, and makes no .nexus/', async () => {
    clockAhead()
    const {root, memory} = await newTree()
    await writeFile(join(memory, 'a.md'), TEXTS[0])
    const cacheFile = join(root, '.nexus', LISTING_CACHE_FILE)
    // A folder where the cache would go: it can be neither read nor replaced.
    await mkdir(join(cacheFile, 'in-the-way'), {recursive: true})
    expect(json((await memoryLs({dir: root})).files)).toBe(json(await uncached(root)))
    expect(lstatSync(cacheFile).isDirectory()).toBe(true)
    await rm(join(root, '.nexus'), {recursive: true})
    expect(json((await memoryLs({dir: root})).files)).toBe(json(await uncached(root)))
    expect(existsSync(join(root, '.nexus'))).toBe(false)
  })
})
