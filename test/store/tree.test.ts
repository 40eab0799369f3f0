import {mkdir, readdir, readFile, rm, stat, symlink, utimes, writeFile} from 'node:fs/promises'
import {join, relative} from 'node:path'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {PathRefusedError, SchemaError} from '../../src/errors.js'
import {JOURNAL_FLUSH_CHARS} from '../../src/store/base.js'
import {isSqliteFileError} from '../../src/store/sqlite-open.js'
import {
  BaseStore,
  cachedHash,
  cachedRev,
  cachedRevsInOrder,
  changedSinceCache,
  deleteBase,
  deleteMemoryFile,
  type DirStat,
  hashText,
  RACY_WINDOW_MS,
  readBase,
  readConfig,
  readMemoryFile,
  readNexusFile,
  readScanHints,
  readStatCache,
  readSyncState,
  scanMemory,
  writeBase,
  writeMemoryFile,
  writeNexusFile,
  writeStatCache,
  writeSyncState,
} from '../../src/store/index.js'
import {tempDir, tempTree} from './helpers/temp.js'

const past = (ms: number) => new Date(Date.now() - ms)

describe('scanMemory', () => {
  it('hashes every memory file and skips backups, temp files and symlinks', async () => {
    const root = await tempTree()
    const memory = join(root, '.memory')
    await writeMemoryFile(root, 'PROJECT_MEMORY.md', '# memory\n')
    await writeMemoryFile(root, 'jarvis/claude.json', '{}\n')
    await writeMemoryFile(root, 'episodes/2026-01-01/x.md', 'x')
    await writeFile(join(memory, 'PROJECT_MEMORY.local.bak'), 'old')
    await writeFile(join(memory, 'PROJECT_MEMORY.local.3.bak'), 'older')
    await writeFile(join(memory, '.PROJECT_MEMORY.md.jarvis-tmp-99999-1'), 'half')
    const outside = await tempDir()
    await writeFile(join(outside, 'o.md'), 'outside')
    await symlink(join(outside, 'o.md'), join(memory, 'link.md'))
    await symlink(outside, join(memory, 'linkdir'))
    const scanned = await scanMemory(root)
    expect([...scanned.keys()]).toEqual(['PROJECT_MEMORY.md', 'episodes/2026-01-01/x.md', 'jarvis/claude.json'])
    expect(scanned.get('PROJECT_MEMORY.md')).toMatchObject({hash: hashText('# memory\n'), size: 9})
  })

  it('gives back the text of each file it hashed that the caller wants, up to a size, as the file reads', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'changed.md', 'new text é\n')
    await writeMemoryFile(root, 'same.md', 'as at the last sync\n')
    await writeMemoryFile(root, 'large.md', 'x'.repeat(100))
    const into = new Map<string, string>()
    const scanned = await scanMemory(root, undefined, {texts: {into, maxBytes: 64, wanted: (rel, hash) => rel !== 'same.md' && hash === hashText(rel === 'changed.md' ? 'new text é\n' : 'x'.repeat(100))}})
    expect(scanned.size).toBe(3)
    expect([...into]).toEqual([['changed.md', 'new text é\n']])
    expect(into.get('changed.md')).toBe(await readMemoryFile(root, 'changed.md'))
  })

  it('leaves the working directory where it was, even when the scan fails, and scans as well from a folder gone or with a relative root', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'a.md', 'a\n')
    await writeMemoryFile(root, 'deep/b.md', 'b\n')
    const home = process.cwd()
    const expected = [...(await scanMemory(root)).keys()]
    expect(expected).toEqual(['a.md', 'deep/b.md'])
    expect(process.cwd()).toBe(home)
    // A stat cache is a hint from disk: one that lists a name no file system takes makes the lstat throw.
    const old = past(60_000)
    await utimes(join(root, '.memory'), old, old)
    const dirCache = {'': {mtimeMs: (await stat(join(root, '.memory'))).mtimeMs, checkedAtMs: Date.now()}}
    const bogus = {hash: hashText('x'), size: 1, mtimeMs: 1, ino: 1, checkedAtMs: Date.now()}
    await expect(scanMemory(root, {[`${'x'.repeat(300)}.md`]: bogus}, {dirCache})).rejects.toThrow(/ENAMETOOLONG/)
    expect(process.cwd()).toBe(home)
    const gone = await tempDir()
    try {
      process.chdir(gone)
      expect([...(await scanMemory(relative(gone, root))).keys()]).toEqual(expected)
      expect(process.cwd()).toBe(gone)
      await rm(gone, {recursive: true})
      expect([...(await scanMemory(root)).keys()]).toEqual(expected)
    } finally {
      process.chdir(home)
    }
  })

  it('gives the same hash after a touch that changes nothing', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'a.md', 'same\n')
    const first = await scanMemory(root)
    await utimes(join(root, '.memory', 'a.md'), new Date(), new Date(Date.now() + 60_000))
    const second = await scanMemory(root, Object.fromEntries(first))
    expect(second.get('a.md')!.hash).toBe(first.get('a.md')!.hash)
    expect(second.get('a.md')!.mtimeMs).not.toBe(first.get('a.md')!.mtimeMs)
  })

  it('reuses a cached hash only for an old enough, unchanged stat (a hint), and re-hashes racy entries', async () => {
    const root = await tempTree()
    const file = join(root, '.memory', 'a.md')
    await writeFile(file, 'aaaa')
    const old = past(60_000)
    await utimes(file, old, old)
    const info = await stat(file)
    const entry = {hash: 'cached-hash', size: 4, mtimeMs: info.mtimeMs, ino: info.ino}
    // checked well after the mtime: trusted
    expect((await scanMemory(root, {'a.md': {...entry, checkedAtMs: info.mtimeMs + RACY_WINDOW_MS + 1}})).get('a.md')!.hash).toBe('cached-hash')
    // checked in the same granule as the mtime (racy git): re-hashed
    expect((await scanMemory(root, {'a.md': {...entry, checkedAtMs: info.mtimeMs + 500}})).get('a.md')!.hash).toBe(hashText('aaaa'))
    // no check time recorded: never trusted
    expect((await scanMemory(root, {'a.md': entry})).get('a.md')!.hash).toBe(hashText('aaaa'))
    // another size or mtime or inode: re-hashed
    expect((await scanMemory(root, {'a.md': {...entry, size: 5, checkedAtMs: Date.now()}})).get('a.md')!.hash).toBe(hashText('aaaa'))
    expect((await scanMemory(root, {'a.md': {...entry, ino: info.ino + 1, checkedAtMs: Date.now()}})).get('a.md')!.hash).toBe(hashText('aaaa'))
    // full check ignores the cache
    expect((await scanMemory(root, {'a.md': {...entry, checkedAtMs: Date.now()}}, {fullCheck: true})).get('a.md')!.hash).toBe(hashText('aaaa'))
  })

  it('catches a same-size edit made in the same second as the scan, even with mtime restored', async () => {
    const root = await tempTree()
    const file = join(root, '.memory', 'a.md')
    await writeFile(file, 'v1')
    const first = await scanMemory(root)
    const {mtime} = await stat(file)
    await writeFile(file, 'v2')
    await utimes(file, mtime, mtime)
    const second = await scanMemory(root, Object.fromEntries(first))
    expect(second.get('a.md')!.hash).toBe(hashText('v2'))
  })

  it('does not read again a folder whose mtime is old and unchanged, but still stats its files; a racy folder is read again', async () => {
    const root = await tempTree()
    const memory = join(root, '.memory')
    await mkdir(join(memory, 'notes'))
    await writeFile(join(memory, 'notes', 'a.md'), 'aaaa')
    const old = past(60_000)
    for (const path of [join(memory, 'notes', 'a.md'), join(memory, 'notes'), memory]) await utimes(path, old, old)
    const dirs = new Map<string, DirStat>()
    const first = await scanMemory(root, undefined, {dirCache: {}, dirs})
    expect([...dirs.keys()].sort()).toEqual(['', 'notes'])

    // An edit in place (the folder does not change) is found: each file is still stat-ed.
    await writeFile(join(memory, 'notes', 'a.md'), 'bbbbb')
    const hints = new Map(dirs)
    expect((await scanMemory(root, Object.fromEntries(first), {dirCache: hints, dirs: new Map()})).get('notes/a.md')!.hash).toBe(hashText('bbbbb'))

    // A file added while the folder's mtime was put back: the trusted hint does not list it (what the hint is for)…
    await writeFile(join(memory, 'notes', 'b.md'), 'b')
    await utimes(join(memory, 'notes'), old, old)
    expect([...(await scanMemory(root, Object.fromEntries(first), {dirCache: hints})).keys()]).toEqual(['notes/a.md'])
    // …but a hint recorded in the same granule as the folder's mtime (racy) is never trusted: the folder is read.
    const racy = {...hints.get('notes')!, checkedAtMs: hints.get('notes')!.mtimeMs + 500}
    expect([...(await scanMemory(root, Object.fromEntries(first), {dirCache: new Map([...hints, ['notes', racy]])})).keys()]).toEqual(['notes/a.md', 'notes/b.md'])
    // Another mtime: read again; and a full check ignores the hints.
    await utimes(join(memory, 'notes'), new Date(), new Date())
    expect([...(await scanMemory(root, Object.fromEntries(first), {dirCache: hints})).keys()]).toEqual(['notes/a.md', 'notes/b.md'])
    expect([...(await scanMemory(root, Object.fromEntries(first), {dirCache: hints, fullCheck: true})).keys()]).toEqual(['notes/a.md', 'notes/b.md'])
  })

  it('in folders it does not read again, at any depth, a same-size edit in the granule of the last check is still caught, with the mtime put back', async () => {
    const root = await tempTree()
    const memory = join(root, '.memory')
    const paths = ['top.md', 'a/one.md', 'a/b/two.md', 'a/three.md', 'ab/four.md', 'z.md']
    for (const path of paths) {
      await mkdir(join(memory, path, '..'), {recursive: true})
      await writeFile(join(memory, path), 'v1')
    }
    const old = past(60_000)
    for (const dir of ['a/b', 'a', 'ab', '']) await utimes(join(memory, dir), old, old)
    const dirs = new Map<string, DirStat>()
    const first = await scanMemory(root, undefined, {dirCache: {}, dirs})
    // Every file the hints give back, and no folder listed: the walk takes the paths from the stat cache.
    for (const hints of [Object.fromEntries(first), first]) {
      const again = await scanMemory(root, hints, {dirCache: dirs, dirs: new Map()})
      expect([...again.keys()]).toEqual([...first.keys()])
      for (const path of paths) expect(again.get(path)!.hash).toBe(hashText('v1'))
    }
    // The files were checked within the racy window of their mtimes: an edit of the same size, its mtime put back,
    // is re-hashed even though the folders' hints hold.
    for (const path of ['a/b/two.md', 'top.md', 'ab/four.md']) {
      const {mtime} = await stat(join(memory, path))
      await writeFile(join(memory, path), 'v2')
      await utimes(join(memory, path), mtime, mtime)
    }
    // A file slipped in with its folder's mtime put back is not listed: proof that the folders were not read.
    await writeFile(join(memory, 'a', 'b', 'unlisted.md'), 'v1')
    for (const dir of ['a/b', 'a', 'ab', '']) await utimes(join(memory, dir), old, old)
    const edited = await scanMemory(root, Object.fromEntries(first), {dirCache: dirs, dirs: new Map()})
    expect([...edited.keys()]).toEqual([...first.keys()])
    for (const path of ['a/b/two.md', 'top.md', 'ab/four.md']) expect(edited.get(path)!.hash, path).toBe(hashText('v2'))
    for (const path of ['a/one.md', 'a/three.md', 'z.md']) expect(edited.get(path)!.hash, path).toBe(hashText('v1'))
  })

  it('still reports the conflict backups of a folder it does not read again, from the hints that listed them', async () => {
    const root = await tempTree()
    const memory = join(root, '.memory')
    await mkdir(join(memory, 'notes'))
    await writeFile(join(memory, 'notes', 'a.md'), 'a')
    await writeFile(join(memory, 'notes', 'a.local.bak'), 'mine')
    const old = past(60_000)
    for (const path of [join(memory, 'notes', 'a.md'), join(memory, 'notes', 'a.local.bak'), join(memory, 'notes'), memory]) await utimes(path, old, old)
    const dirs = new Map<string, DirStat>()
    const backups: string[] = []
    const first = await scanMemory(root, undefined, {dirCache: {}, dirs, backups})
    expect(backups).toEqual(['notes/a.local.bak'])
    await writeStatCache(root, first, {dirs, backups})
    const hints = await readScanHints(root)
    expect(hints).toMatchObject({dirs: Object.fromEntries(dirs), backups: ['notes/a.local.bak']})

    const again: string[] = []
    await scanMemory(root, hints.known, {dirCache: hints.dirs, backupCache: hints.backups, backups: again})
    expect(again).toEqual(['notes/a.local.bak'])
    // Resolved: the backup goes, its folder changes, and the folder is read again.
    await rm(join(memory, 'notes', 'a.local.bak'))
    const after: string[] = []
    await scanMemory(root, hints.known, {dirCache: hints.dirs, backupCache: hints.backups, backups: after})
    expect(after).toEqual([])
  })

  it('round-trips the stat cache through .nexus/stat-cache.json; a broken cache reads as empty', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'a.md', 'x')
    const scanned = await scanMemory(root)
    await writeStatCache(root, scanned)
    expect(await readStatCache(root)).toEqual(Object.fromEntries(scanned))
    await writeFile(join(root, '.nexus', 'stat-cache.json'), '{broken')
    expect(await readStatCache(root)).toEqual({})
  })

  it('keeps each base revision beside the clean mark, found by path in any order, and none when it cannot say them all', async () => {
    const root = await tempTree()
    const entries = new Map(['a.md', 'b/c.md', 'b/d.md', 'e.md'].map((path, i) => [path, {hash: String(i + 1).repeat(64), size: i, mtimeMs: 1, ino: i + 10, checkedAtMs: 2}]))
    const clean = {state: {ino: 1, size: 2, mtimeMs: 3}, server: 'http://127.0.0.1:1', seq: 4}
    const revisions: Record<string, number | null> = {'a.md': 7, 'b/c.md': null, 'b/d.md': 3, 'e.md': 12}
    await writeStatCache(root, entries, {dirs: {}, backups: [], clean, revOf: (path) => revisions[path]})
    const hints = await readScanHints(root)
    expect(hints.clean?.revs).toEqual([7, null, 3, 12])
    for (const path of Object.keys(revisions)) expect([path, cachedRev(hints, path)]).toEqual([path, revisions[path]])
    expect(cachedRev(hints, 'b/x.md')).toBeUndefined()
    // Asked in order, as a scan lists them, with paths the cache lacks; then out of order, and twice.
    const inOrder = cachedRevsInOrder(hints)
    const asked = ['0.md', 'a.md', 'b/c.md', 'b/cc.md', 'b/d.md', 'e.md', 'f.md', 'a.md', 'e.md', 'b/d.md']
    expect(asked.map(inOrder)).toEqual(asked.map((path) => cachedRev(hints, path)))
    // One file whose base's revision is not known: the mark lists none.
    await writeStatCache(root, entries, {dirs: {}, backups: [], clean: hints.clean!, revOf: (path) => (path === 'e.md' ? undefined : revisions[path])})
    const without = await readScanHints(root)
    expect(without.clean).toMatchObject({seq: 4})
    expect(without.clean?.revs).toBeUndefined()
    expect(cachedRev(without, 'a.md')).toBeUndefined()
    // Revisions out of shape (another length): the mark stays, without them.
    const text = JSON.parse(await readFile(join(root, '.nexus', 'stat-cache.json'), 'utf8')) as {clean: {revs?: unknown}}
    text.clean.revs = [1, 2]
    await writeFile(join(root, '.nexus', 'stat-cache.json'), JSON.stringify(text))
    const broken = await readScanHints(root)
    expect(broken.clean).toMatchObject({seq: 4})
    expect(broken.clean?.revs).toBeUndefined()
  })

  it('reads both formats of the stat cache, and trusts a hint of either only as a hint: a racy one is hashed again', async () => {
    const root = await tempTree()
    const memory = join(root, '.memory')
    await mkdir(join(memory, 'notes'))
    for (const name of ['old.md', 'racy.md']) await writeFile(join(memory, 'notes', name), 'aaaa')
    const old = past(60_000)
    await utimes(join(memory, 'notes', 'old.md'), old, old)
    const info = {old: await stat(join(memory, 'notes', 'old.md')), racy: await stat(join(memory, 'notes', 'racy.md'))}
    // Hashes that are not the files': given back only where the hint is trusted.
    const fake = (c: string) => c.repeat(64)
    const entries = {
      'notes/old.md': {hash: fake('1'), size: 4, mtimeMs: info.old.mtimeMs, ino: info.old.ino, checkedAtMs: info.old.mtimeMs + RACY_WINDOW_MS + 1},
      'notes/racy.md': {hash: fake('2'), size: 4, mtimeMs: info.racy.mtimeMs, ino: info.racy.ino, checkedAtMs: info.racy.mtimeMs + 500},
    }
    const cachePath = join(root, '.nexus', 'stat-cache.json')
    const written = async () => JSON.parse(await readFile(cachePath, 'utf8')) as {version: number}
    // Version 1, as an older jarvis wrote it: an object per path.
    await writeFile(cachePath, JSON.stringify({version: 1, files: entries, dirs: {}, backups: []}))
    const fromV1 = await scanMemory(root, (await readScanHints(root)).files)
    expect(fromV1.get('notes/old.md')!.hash).toBe(fake('1'))
    expect(fromV1.get('notes/racy.md')!.hash).toBe(hashText('aaaa'))
    // Written again as version 2 (one array per field), read the same.
    await writeStatCache(root, entries, {dirs: {}, backups: []})
    expect((await written()).version).toBe(2)
    expect(await readStatCache(root)).toEqual(entries)
    const fromV2 = await scanMemory(root, await readStatCache(root))
    expect(fromV2.get('notes/old.md')!.hash).toBe(fake('1'))
    expect(fromV2.get('notes/racy.md')!.hash).toBe(hashText('aaaa'))
    // As a sync reads it, the columns kept as read: looked up by path in a folder it lists, followed in one it does
    // not list again; the same trust either way.
    const hints = await readScanHints(root)
    expect(hints.count).toBe(2)
    for (const path of [join(memory, 'notes'), memory]) await utimes(path, old, old)
    const folderHint = async (path: string) => ({mtimeMs: (await stat(path)).mtimeMs, checkedAtMs: Date.now()})
    for (const dirCache of [undefined, {'': await folderHint(memory), notes: await folderHint(join(memory, 'notes'))}]) {
      const counts = {unchanged: 0, hashed: [] as string[]}
      const fromColumns = await scanMemory(root, hints.known, {dirCache, counts})
      expect([...fromColumns].map(([path, entry]) => [path, entry.hash])).toEqual([
        ['notes/old.md', fake('1')],
        ['notes/racy.md', hashText('aaaa')],
      ])
      expect(counts.unchanged).toBe(1)
      // The one file read again: every other file found was given the cache's hash.
      expect(counts.hashed).toEqual(['notes/racy.md'])
    }
    expect(hints.files).toEqual(entries)
    // What a sync asks of them: a path's hash, and where a scan that hashed every file differs from the cache — the
    // same answers from the columns as read and from an object per path (version 1).
    const scans: Array<[string, Map<string, {hash: string}>, string[]]> = [
      ['the same', new Map([['notes/old.md', {hash: fake('1')}], ['notes/racy.md', {hash: fake('2')}]]), []],
      ['one hash moved', new Map([['notes/old.md', {hash: fake('1')}], ['notes/racy.md', {hash: fake('3')}]]), ['notes/racy.md']],
      ['one file less', new Map([['notes/old.md', {hash: fake('1')}]]), ['notes/racy.md']],
      ['another file', new Map([['notes/old.md', {hash: fake('1')}], ['notes/new.md', {hash: fake('2')}]]), ['notes/new.md', 'notes/racy.md']],
      ['a hash cut short', new Map([['notes/old.md', {hash: fake('1')}], ['notes/racy.md', {hash: fake('2').slice(0, 10)}]]), ['notes/racy.md']],
    ]
    await writeFile(cachePath, JSON.stringify({version: 1, files: entries, dirs: {}, backups: []}))
    const asRecord = await readScanHints(root)
    for (const [label, found, changed] of scans) {
      for (const each of [hints, asRecord]) expect([label, changedSinceCache(each, found, [...found.keys()]).sort()]).toEqual([label, changed])
    }
    for (const each of [hints, asRecord]) expect(['notes/racy.md', 'notes/new.md'].map((path) => cachedHash(each, path))).toEqual([fake('2'), undefined])
    await writeStatCache(root, entries, {dirs: {}, backups: []})
    // A version 2 cache out of shape (a column of another length) is no hint at all: every file is hashed.
    const broken = {...(await written()), sizes: [4]}
    await writeFile(cachePath, JSON.stringify(broken))
    expect(await readStatCache(root)).toEqual({})
    expect((await scanMemory(root, await readStatCache(root))).get('notes/old.md')!.hash).toBe(hashText('aaaa'))
  })
})

describe('memory files', () => {
  it('reads, writes and deletes through the path guard, pruning empty directories', async () => {
    const root = await tempTree()
    expect(await readMemoryFile(root, 'projects/app/summary.md')).toBeNull()
    await writeMemoryFile(root, 'projects/app/summary.md', 'hello')
    expect(await readMemoryFile(root, 'projects/app/summary.md')).toBe('hello')
    expect(await deleteMemoryFile(root, 'projects/app/summary.md')).toBe(true)
    expect(await deleteMemoryFile(root, 'projects/app/summary.md')).toBe(false)
    expect(await readdir(join(root, '.memory'))).toEqual([])
    await expect(writeMemoryFile(root, '../escape.md', 'x')).rejects.toBeInstanceOf(PathRefusedError)
    await expect(readMemoryFile(root, '/etc/passwd')).rejects.toBeInstanceOf(PathRefusedError)
  })

  it('keeps a directory that still holds other files (a backup, say)', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'notes/a.md', 'a')
    await writeFile(join(root, '.memory', 'notes', 'a.local.bak'), 'old')
    await deleteMemoryFile(root, 'notes/a.md')
    expect(await readdir(join(root, '.memory', 'notes'))).toEqual(['a.local.bak'])
  })

  it('refuses to write through a symlink that leaves the tree', async () => {
    const root = await tempTree()
    const outside = await tempDir()
    await symlink(outside, join(root, '.memory', 'out'))
    await expect(writeMemoryFile(root, 'out/x.md', 'x')).rejects.toBeInstanceOf(PathRefusedError)
    expect(await readdir(outside)).toEqual([])
  })
})

describe('base copies', () => {
  it('live in .nexus/base.sqlite, one transaction a flush (a few small ones in its journal, base.journal.test.ts)', async () => {
    const root = await tempTree()
    expect(await readBase(root, 'jarvis/claude.json')).toBeNull()
    expect(await deleteBase(root, 'jarvis/claude.json')).toBe(false)
    expect(await readdir(join(root, '.nexus'))).not.toContain('base.sqlite') // looking makes no database
    const large = `{"a":"${'x'.repeat(JOURNAL_FLUSH_CHARS)}"}\n`
    await writeBase(root, 'jarvis/claude.json', large)
    expect(await readdir(join(root, '.nexus'))).toContain('base.sqlite')
    expect(await readBase(root, 'jarvis/claude.json')).toBe(large)
    expect(await deleteBase(root, 'jarvis/claude.json')).toBe(true)
    expect(await readBase(root, 'jarvis/claude.json')).toBeNull()
    expect(await deleteBase(root, 'jarvis/claude.json')).toBe(false)
    await expect(writeBase(root, '../config.json', 'x')).rejects.toBeInstanceOf(PathRefusedError)
  })

  it('kept until flushed, and dropped when closed unflushed (a sync writes them only after the server acknowledged)', async () => {
    const root = await tempTree()
    const bases = new BaseStore(root)
    bases.put('a.md', 'one\n')
    expect(await bases.get('a.md')).toBe('one\n')
    bases.close()
    expect(await readBase(root, 'a.md')).toBeNull()
    const again = new BaseStore(root)
    again.put('a.md', 'two\n')
    again.flush()
    again.close()
    expect(await readBase(root, 'a.md')).toBe('two\n')
  })

  it('reads an older jarvis\'s .nexus/base/<path> when the database has no row, and removes it with the base', async () => {
    const root = await tempTree()
    await mkdir(join(root, '.nexus', 'base', 'notes'), {recursive: true})
    await writeFile(join(root, '.nexus', 'base', 'notes', 'old.md'), 'old\n')
    expect(await readBase(root, 'notes/old.md')).toBe('old\n')
    await writeBase(root, 'notes/old.md', 'new\n')
    expect(await readBase(root, 'notes/old.md')).toBe('new\n')
    expect(await deleteBase(root, 'notes/old.md')).toBe(true)
    expect(await readBase(root, 'notes/old.md')).toBeNull()
    expect(await readdir(join(root, '.nexus', 'base'))).toEqual([])
  })

  it('an unusable database is made again, empty: the next merge is two-way, nothing fails', async () => {
    const root = await tempTree()
    await writeFile(join(root, '.nexus', 'base.sqlite'), 'not a database at all, and long enough to be read as a header. '.repeat(4))
    expect(await readBase(root, 'a.md')).toBeNull()
    await writeBase(root, 'a.md', 'a\n')
    expect(await readBase(root, 'a.md')).toBe('a\n')
  })

  it('only a damaged database is made again: one that is busy, full or cannot be opened is an error, and kept', async () => {
    const database = await tempTree()
    await writeBase(database, 'a.md', 'a\n')
    // A folder where the database should be: SQLite cannot open it, and nothing is removed.
    const folder = await tempTree()
    await mkdir(join(folder, '.nexus', 'base.sqlite'))
    await writeFile(join(folder, '.nexus', 'base.sqlite', 'keep.txt'), 'kept\n')
    await expect(writeBase(folder, 'a.md', 'a'.repeat(JOURNAL_FLUSH_CHARS + 1))).rejects.toThrow()
    expect(await readFile(join(folder, '.nexus', 'base.sqlite', 'keep.txt'), 'utf8')).toBe('kept\n')
    // Both drivers' shapes of the codes: better-sqlite3 names them, node:sqlite numbers them (extended codes too).
    expect([{code: 'SQLITE_CORRUPT'}, {code: 'SQLITE_NOTADB'}, {errcode: 11}, {errcode: 26}, {errcode: 11 | (1 << 8)}].map((error) => isSqliteFileError(error, ['CORRUPT', 'NOTADB']))).toEqual([true, true, true, true, true])
    expect([{code: 'SQLITE_BUSY'}, {code: 'SQLITE_FULL'}, {code: 'SQLITE_CANTOPEN'}, {code: 'SQLITE_IOERR_READ'}, {errcode: 5}, {errcode: 13}, {code: 'ENOENT'}].map((error) => isSqliteFileError(error, ['CORRUPT', 'NOTADB']))).toEqual([false, false, false, false, false, false, false])
    expect(isSqliteFileError({code: 'SQLITE_IOERR_READ'}, ['IOERR'])).toBe(true)
    expect(await readBase(database, 'a.md')).toBe('a\n')
  })
})

describe('sync state and config', () => {
  it('reads a missing sync state as empty and round-trips it, keeping unknown fields', async () => {
    const root = await tempTree()
    expect(await readSyncState(root)).toEqual({version: 1, files: {}})
    const state = {
      version: 1 as const,
      server: 'http://127.0.0.1:8787',
      seq: 7,
      mode: 'revision' as const,
      files: {'a.md': {hash: hashText('a'), rev: 3, syncedAt: '2026-01-01T00:00:00.000Z', extra: true}},
      future: [1, 2],
    }
    await writeSyncState(root, state)
    expect(await readSyncState(root)).toEqual(state)
    expect(await readFile(join(root, '.nexus', 'sync-state.json'), 'utf8')).toBe(JSON.stringify(state, null, 2) + '\n')
  })

  it('names the file and the line of malformed JSON', async () => {
    const root = await tempTree()
    await writeFile(join(root, '.nexus', 'sync-state.json'), '{\n  "version": 1,\n  "files": {,\n}\n')
    const error = await readSyncState(root).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SchemaError)
    expect((error as SchemaError).message).toMatch(/^\.nexus\/sync-state\.json: line 3/)
    expect((error as SchemaError).message).toContain('move it aside (mv .nexus/sync-state.json .nexus/sync-state.json.broken) and sync again')
  })

  it('names the file and the field of a schema violation', async () => {
    const root = await tempTree()
    await writeFile(join(root, '.nexus', 'sync-state.json'), JSON.stringify({version: 1, files: {'a.md': {hash: 'x'}}}))
    const error = await readSyncState(root).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SchemaError)
    expect((error as SchemaError).message).toContain('.nexus/sync-state.json: files.a.md.syncedAt')
  })

  it('reads a missing config as all defaults, and a bad one as a SchemaError', async () => {
    const root = await tempTree()
    expect((await readConfig(root)).sync.lockTimeout).toBe(5000)
    await writeFile(join(root, '.nexus', 'config.json'), JSON.stringify({sync: {maxRetries: -1}}))
    await expect(readConfig(root)).rejects.toThrow(/\.nexus\/config\.json: sync\.maxRetries/)
  })
})

describe('other .nexus files', () => {
  it('are path-guarded and atomic', async () => {
    const root = await tempTree()
    await writeNexusFile(root, 'gemini-backup/tag.json', '{}')
    expect(await readNexusFile(root, 'gemini-backup/tag.json')).toBe('{}')
    expect(await readNexusFile(root, 'sessions.json')).toBeNull()
    await expect(writeNexusFile(root, '../.memory/x', 'x')).rejects.toBeInstanceOf(PathRefusedError)
  })
})

describe('the files a scan found changed since the stat cache', () => {
  const paths = ['a.md', 'b.md', 'c/d.md', 'c/e.json', 'f.md']
  const hashes = ['1', '2', '3'].map((digit) => digit.repeat(64))
  const entry = (hash: string) => ({hash, size: 1, mtimeMs: 1})
  it('are the paths of another hash, new or gone, looking only at the files it hashed again', () => {
    const scans = fc.record({
      cache: fc.dictionary(fc.constantFrom(...paths), fc.constantFrom(...hashes), {maxKeys: 5}),
      // Per path: as cached (hashed again or not), another hash, gone, or new.
      fate: fc.dictionary(fc.constantFrom(...paths), fc.record({hash: fc.constantFrom(...hashes), gone: fc.boolean(), hashedAgain: fc.boolean()}), {maxKeys: 5}),
    })
    fc.assert(
      fc.property(scans, ({cache, fate}) => {
        const local = new Map<string, {hash: string}>()
        const hashed: string[] = []
        for (const path of paths) {
          const cached = cache[path]
          const what = fate[path]
          if (what === undefined) {
            if (cached !== undefined) local.set(path, {hash: cached})
            continue
          }
          if (what.gone) continue
          local.set(path, {hash: what.hash})
          // A scan gives the cache's hash to a file it does not read: any other hash was read.
          if (what.hashedAgain || what.hash !== cached) hashed.push(path)
        }
        const expected = paths.filter((path) => local.get(path)?.hash !== cache[path])
        const record = Object.fromEntries(Object.entries(cache).map(([path, hash]) => [path, entry(hash)]))
        for (const known of [record, new Map(Object.entries(record))]) {
          const hints = {known, count: Object.keys(record).length, files: record, dirs: {}, backups: []}
          expect(changedSinceCache(hints, local, hashed).sort()).toEqual(expected)
        }
      }),
    )
  })
})
