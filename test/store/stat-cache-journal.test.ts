/**
 * The stat cache's journal (store/stat-cache.ts): a write that changes few entries appends them to
 * `.nexus/stat-cache.journal` instead of rewriting `.nexus/stat-cache.json`. Whatever sequence of writes, and a write
 * killed inside its append (a torn last line) anywhere in it, the cache read back is the one the last finished write
 * left, exactly as a whole-file write leaves it: the same entries, folders, backups, clean mark (with its revisions)
 * and watch clock, and a head that names it.
 */
import {appendFile, lstat, readFile, rm, stat, writeFile} from 'node:fs/promises'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {type CleanMark, hashText, type MemoryFileStat, readScanHead, readScanHints, type ScanHints, statCachePath, writeStatCache} from '../../src/store/index.js'
import {statCacheJournalPath} from '../../src/store/stat-cache.js'
import {StatColumns} from '../../src/store/tree.js'
import {initTempTree} from './helpers/temp.js'

const tree = initTempTree

const exists = (path: string) => stat(path).then(() => true, () => false)
const pathOf = (i: number) => `area-${i % 5}/note-${String(i).padStart(3, '0')}.md`
const entryOf = (text: string, i: number): MemoryFileStat => ({hash: hashText(text), size: text.length, mtimeMs: 1_700_000_000_000 + i, ino: 1000 + i, checkedAtMs: 1_700_000_100_000})

/** What a reader is given, in a shape to compare. */
function seen(hints: ScanHints) {
  // The order too: a scan walks beside the cache's paths in sorted order (cachedRevsInOrder).
  return {paths: hints.known instanceof StatColumns ? [...hints.known.paths] : null, files: hints.files, count: hints.count, dirs: hints.dirs, backups: hints.backups, clean: hints.clean ?? null, watch: hints.watch ?? null}
}

/** One write of a sync: entries changed, added or removed, a folder touched, a mark or none, its revisions. */
type Step = {edit: number[]; add: number[]; remove: number[]; folder: number; marked: boolean; revs: boolean; seq: number; readFirst: boolean; torn: number | null}
const step: fc.Arbitrary<Step> = fc.record({
  edit: fc.array(fc.nat(199), {maxLength: 12}),
  add: fc.array(fc.integer({min: 200, max: 260}), {maxLength: 4}),
  remove: fc.array(fc.nat(260), {maxLength: 3}),
  folder: fc.nat(6),
  marked: fc.boolean(),
  revs: fc.boolean(),
  seq: fc.nat(10_000),
  readFirst: fc.boolean(),
  torn: fc.option(fc.double({min: 0, max: 1, noNaN: true, maxExcluded: true})),
})

describe('the stat cache journal', () => {
  it('after any sequence of writes, some killed inside their append, the cache read back is the one the last finished write left, as a whole file would be', async () => {
    let round = 0
    let appended = 0
    await fc.assert(
      fc.asyncProperty(fc.array(step, {minLength: 1, maxLength: 10}), async (steps) => {
        const root = await tree()
        const wholeRoot = await tree()
        const files = new Map<string, MemoryFileStat>()
        for (let i = 0; i < 200; i++) files.set(pathOf(i), entryOf(`note ${i}`, i))
        const folders = new Map([0, 1, 2, 3, 4].map((i) => [`area-${i}`, {mtimeMs: 1_700_000_000_000 + i, checkedAtMs: 1_700_000_100_000}]))
        const revs = new Map<string, number | null>([...files.keys()].map((path, i) => [path, i % 7 === 0 ? null : i + 1]))
        const write = async (at: string, mark: CleanMark | undefined, useRevs: boolean) => {
          // Written in sorted order, as a scan lists the files.
          const sorted = new Map([...files].sort(([a], [b]) => (a < b ? -1 : 1)))
          await writeStatCache(at, sorted, {dirs: folders, backups: folders.size > 5 ? ['area-0/x.conflict-1.md'] : [], clean: mark, revOf: useRevs ? (path) => revs.get(path) : undefined, watch: {clock: `e:${round}`, fullAt: 1_700_000_000_000 + round}})
        }
        await write(root, undefined, false)
        await readScanHints(root)
        for (const {edit, add, remove, folder, marked, revs: useRevs, seq, readFirst, torn} of steps) {
          round++
          // A new process reads what is on disk first; a running sync writes again what it read.
          if (readFirst) await readScanHints(root)
          for (const i of edit) if (files.has(pathOf(i))) files.set(pathOf(i), entryOf(`note ${i} round ${round}`, i + round))
          for (const i of add) {
            files.set(pathOf(i), entryOf(`added ${i}`, i))
            revs.set(pathOf(i), i)
          }
          for (const i of remove) files.delete(pathOf(i))
          if (folder < 5) folders.set(`area-${folder}`, {mtimeMs: 1_700_000_000_000 + round, checkedAtMs: 1_700_000_200_000})
          else if (folder === 5) folders.set(`extra-${round}`, {mtimeMs: round, checkedAtMs: round})
          else folders.delete([...folders.keys()].at(-1)!)
          for (const i of edit) revs.set(pathOf(i), round)
          const mark: CleanMark | undefined = marked ? {state: {ino: 1, size: 2, mtimeMs: 3}, server: 'http://127.0.0.1:1', serverId: 'server-1', seq} : undefined
          const before = await lstat(statCachePath(root))
          await write(root, mark, useRevs)
          if ((await lstat(statCachePath(root))).ino === before.ino) appended++
          // The same cache written as a whole file elsewhere (its file gone first: never appended to).
          await rm(statCachePath(wholeRoot), {force: true})
          await write(wholeRoot, mark, useRevs)
          expect(await exists(statCacheJournalPath(wholeRoot))).toBe(false)
          const expected = seen(await readScanHints(wholeRoot))
          if (torn !== null && (await exists(statCacheJournalPath(root)))) {
            // The next write died inside its append: part of its line is there, never its newline.
            const line = JSON.stringify({f: {[pathOf(1)]: [hashText(`torn ${round}`), 1, 2, 3, 4, 5]}, d: {}, r: {backups: [], revs: false}})
            await appendFile(statCacheJournalPath(root), line.slice(0, Math.max(1, Math.floor(torn * line.length))))
          }
          expect(seen(await readScanHints(root))).toEqual(expected)
          // The head names the cache and its journal as they are, unless a torn line moved the journal since.
          const head = await readScanHead(root)
          if (torn === null || !(await exists(statCacheJournalPath(root)))) expect(head).toEqual({backups: expected.backups.length, watch: expected.watch, ...(expected.clean === null ? {} : {clean: (({revs: _r, ...m}) => m)(expected.clean)})})
        }
      }),
      {numRuns: 40},
    )
    // Few entries change per write: many writes were appends, not a new file.
    expect(appended).toBeGreaterThan(20)
  })

  it('a write that changes few entries appends them; many, or another writer, rewrite the file and drop the journal', async () => {
    const root = await tree()
    const files = new Map<string, MemoryFileStat>()
    for (let i = 0; i < 400; i++) files.set(pathOf(i), entryOf(`note ${i}`, i))
    const folders = {dirs: {'area-0': {mtimeMs: 1, checkedAtMs: 2}}, backups: []}
    await writeStatCache(root, files, folders)
    const first = await lstat(statCachePath(root))
    files.set(pathOf(3), entryOf('edited', 3))
    await writeStatCache(root, files, folders)
    expect((await lstat(statCachePath(root))).ino).toBe(first.ino)
    expect(await readFile(statCacheJournalPath(root), 'utf8')).toContain(hashText('edited'))
    expect((await readScanHints(root)).files[pathOf(3)]).toEqual(entryOf('edited', 3))

    // Another writer (an older jarvis) rewrites the file: its journal names the old one and is not applied.
    const text = await readFile(statCachePath(root), 'utf8')
    await rm(statCachePath(root))
    await writeFile(statCachePath(root), text)
    expect((await readScanHints(root)).files[pathOf(3)]).toEqual(entryOf('note 3', 3))
    files.set(pathOf(4), entryOf('edited 4', 4))
    await writeStatCache(root, files, folders)
    expect(await exists(statCacheJournalPath(root))).toBe(false)

    // More than a quarter of the entries: the whole file.
    await readScanHints(root)
    for (let i = 0; i < 150; i++) files.set(pathOf(i), entryOf(`many ${i}`, i))
    const before = await lstat(statCachePath(root))
    await writeStatCache(root, files, folders)
    expect((await lstat(statCachePath(root))).ino).not.toBe(before.ino)
    expect(await exists(statCacheJournalPath(root))).toBe(false)
    expect((await readScanHints(root)).files[pathOf(149)]).toEqual(entryOf('many 149', 149))
  })

  it('a journal line that is not whole JSON (a power cut) makes the cache unread: every file is hashed again', async () => {
    const root = await tree()
    const files = new Map<string, MemoryFileStat>()
    for (let i = 0; i < 100; i++) files.set(pathOf(i), entryOf(`note ${i}`, i))
    const folders = {dirs: {}, backups: [], clean: {state: {ino: 1, size: 2, mtimeMs: 3}, server: 'http://127.0.0.1:1', seq: 4}}
    await writeStatCache(root, files, folders)
    files.set(pathOf(1), entryOf('edited', 1))
    await writeStatCache(root, files, folders)
    await appendFile(statCacheJournalPath(root), '\0\0\0\0\n')
    const hints = await readScanHints(root)
    expect(hints.count).toBe(0)
    expect(hints.clean).toBeUndefined()
  })
})
