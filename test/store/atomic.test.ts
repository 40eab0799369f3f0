import {chmod, mkdir, readdir, readFile, rm, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {describe, expect, it} from 'vitest'

import {kernelAtLeast} from '../../src/store/atomic.js'
import {appendLineDurable, AtomicBatch, isTempName, scanMemory, sweepTempFiles, writeFileAtomic} from '../../src/store/index.js'
import {contentA, contentB} from './helpers/contents.js'
import {spawnHelper, tempDir, tempTree} from './helpers/temp.js'

describe('writeFileAtomic', () => {
  it('creates parents, replaces the file, and leaves no temp file', async () => {
    const dir = await tempDir()
    const target = join(dir, 'a', 'b', 'c.txt')
    await writeFileAtomic(target, 'one')
    await writeFileAtomic(target, new TextEncoder().encode('two'))
    expect(await readFile(target, 'utf8')).toBe('two')
    expect(await readdir(join(dir, 'a', 'b'))).toEqual(['c.txt'])
  })

  it('keeps the mode of an existing file', async () => {
    const dir = await tempDir()
    const target = join(dir, 'x')
    await writeFile(target, 'old')
    await chmod(target, 0o600)
    await writeFileAtomic(target, 'new')
    expect((await stat(target)).mode & 0o777).toBe(0o600)
  })

  it('removes its temp file and leaves the target alone when the write fails', async () => {
    const dir = await tempDir()
    const target = join(dir, 'dir-not-file')
    await writeFileAtomic(join(target, 'inner'), 'x') // target is now a directory: rename onto it fails
    await expect(writeFileAtomic(target, 'y')).rejects.toThrow()
    expect((await readdir(dir)).sort()).toEqual(['dir-not-file'])
  })

  it('refuses to clobber in exclusive mode', async () => {
    const dir = await tempDir()
    const target = join(dir, 'x')
    await writeFileAtomic(target, 'first', {exclusive: true})
    await expect(writeFileAtomic(target, 'second', {exclusive: true})).rejects.toMatchObject({code: 'EEXIST'})
    expect(await readFile(target, 'utf8')).toBe('first')
    expect(await readdir(dir)).toEqual(['x'])
  })

  it('leaves exactly A or B, never a torn file, when the writer is killed with SIGKILL at random moments', async () => {
    const root = await tempTree()
    const target = join(root, '.memory', 'big.md')
    const bytes = 2 * 1024 * 1024
    const a = contentA(bytes)
    const b = contentB(bytes)
    const iterations = 24
    const seen = {a: 0, b: 0}
    for (let i = 0; i < iterations; i++) {
      const child = spawnHelper('atomic-writer.ts', [target, String(bytes)])
      await child.waitFor('ready')
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 120)))
      child.proc.kill('SIGKILL')
      expect((await child.exited).signal).toBe('SIGKILL')
      const text = await readFile(target, 'utf8')
      const which = text === a ? 'a' : text === b ? 'b' : 'torn'
      expect(which, `iteration ${i}: ${text.length} bytes`).not.toBe('torn')
      seen[which as 'a' | 'b']++
    }
    expect(seen.a + seen.b).toBe(iterations)
    // Most kills land in the middle of a write (a temp file is left): the test exercised the torn-write case.
    expect((await readdir(join(root, '.memory'))).filter((name) => name !== 'big.md').length).toBeGreaterThan(0)
    // Whatever temp files the kills left are not memory files, and the scan that meets them removes them (their pids are dead).
    const scanned = await scanMemory(root)
    expect([...scanned.keys()]).toEqual(['big.md'])
    expect(await readdir(join(root, '.memory'))).toEqual(['big.md'])
  })

  it('the sweep of .nexus/ leaves the per-file folders to the sweep after an unfinished sync', async () => {
    const root = await tempDir()
    const dead = spawnHelper('atomic-writer.ts', [join(root, 'unused'), '1'])
    dead.proc.kill('SIGKILL')
    await dead.exited
    const temp = `.x.jarvis-tmp-${dead.proc.pid}-1`
    await mkdir(join(root, '.nexus', 'base', 'notes'), {recursive: true})
    await writeFile(join(root, '.nexus', temp), 'torn')
    await writeFile(join(root, '.nexus', 'base', 'notes', temp), 'torn')
    expect(await sweepTempFiles(root)).toEqual([`.nexus/${temp}`])
    expect(await sweepTempFiles(root, {everywhere: true})).toEqual([`.nexus/base/notes/${temp}`])
  })
})

describe('AtomicBatch', () => {
  describe.each([
    ['one syncfs for the batch', {}],
    ['an fsync per file', {fsyncEachFile: true}],
  ])('made durable with %s', (_name, options) => {
    it('touches no target before its commit; commits and discards as told; keeps an existing file’s mode', async () => {
      const dir = await tempDir()
      await mkdir(join(dir, 'kept'))
      await writeFile(join(dir, 'kept', 'old.md'), 'old\n')
      await chmod(join(dir, 'kept', 'old.md'), 0o600)
      await writeFile(join(dir, 'kept', 'user.md'), 'the user’s\n')
      const batch = new AtomicBatch(options)
      // 70 files: more than a batch that fsyncs each file whatever the platform.
      const fresh = await Promise.all(Array.from({length: 70}, (_, i) => batch.stage(join(dir, `new-${i % 3}`, `f${i}.md`), `file ${i}\n`, {absent: true})))
      const old = await batch.stage(join(dir, 'kept', 'old.md'), 'new\n')
      const user = await batch.stage(join(dir, 'kept', 'user.md'), 'would overwrite\n')
      // Staged: every target as it was, a complete temp file beside each.
      expect(await readFile(join(dir, 'kept', 'old.md'), 'utf8')).toBe('old\n')
      expect((await readdir(join(dir, 'new-0'))).every((name) => isTempName(name))).toBe(true)
      for (const [i, file] of fresh.entries()) expect(await readFile(file.temp, 'utf8')).toBe(`file ${i}\n`)
      // Fsynced each as it is written, or not durable yet: then no rename before makeDurable.
      if ('fsyncEachFile' in options) expect(old.durable).toBe(true)
      else expect(() => batch.commit(old)).toThrow(/before makeDurable/)

      await batch.makeDurable()
      for (const file of [...fresh, old]) batch.commit(file)
      await batch.discard(user)
      await batch.syncFolders()
      expect(batch.size).toBe(0)
      for (let i = 0; i < 70; i++) expect(await readFile(join(dir, `new-${i % 3}`, `f${i}.md`), 'utf8')).toBe(`file ${i}\n`)
      expect(await readFile(join(dir, 'kept', 'old.md'), 'utf8')).toBe('new\n')
      expect((await stat(join(dir, 'kept', 'old.md'))).mode & 0o777).toBe(0o600)
      expect(await readFile(join(dir, 'kept', 'user.md'), 'utf8')).toBe('the user’s\n')
      const names = (await readdir(dir, {recursive: true})).map(String)
      expect(names.filter((name) => isTempName(name.split('/').pop()!))).toEqual([])
    })

    it('a folder removed after its files were staged: their commits say so, the others go through', async () => {
      const dir = await tempDir()
      const batch = new AtomicBatch(options)
      const gone = await Promise.all(Array.from({length: 40}, (_, i) => batch.stage(join(dir, 'gone', `g${i}.md`), `g${i}\n`, {absent: true})))
      const kept = await Promise.all(Array.from({length: 40}, (_, i) => batch.stage(join(dir, 'kept', `k${i}.md`), `k${i}\n`, {absent: true})))
      await rm(join(dir, 'gone'), {recursive: true})
      await batch.makeDurable()
      expect(gone.map((file) => batch.commit(file))).toEqual(Array.from({length: 40}, () => false))
      expect(kept.map((file) => batch.commit(file))).toEqual(Array.from({length: 40}, () => true))
      await batch.syncFolders()
      expect(batch.size).toBe(0)
      expect((await readdir(dir)).sort()).toEqual(['kept'])
      expect((await readdir(join(dir, 'kept'))).sort()).toEqual(Array.from({length: 40}, (_, i) => `k${i}.md`).sort())
    })

    it('abandon removes the temp files not committed and leaves their targets alone', async () => {
      const dir = await tempDir()
      await writeFile(join(dir, 'a.md'), 'a\n')
      const batch = new AtomicBatch(options)
      const a = await batch.stage(join(dir, 'a.md'), 'A\n')
      const b = await batch.stage(join(dir, 'b.md'), 'B\n', {absent: true})
      await batch.makeDurable()
      batch.commit(b)
      await batch.abandon()
      expect(batch.size).toBe(0)
      expect((await readdir(dir)).sort()).toEqual(['a.md', 'b.md'])
      expect(await readFile(join(dir, 'a.md'), 'utf8')).toBe('a\n')
      expect(await readFile(join(dir, 'b.md'), 'utf8')).toBe('B\n')
      expect(a.temp).not.toBe(a.target)
    })
  })

  it('reads the kernel release as syncfs needs it (5.8 or later reports write-back errors)', () => {
    expect(kernelAtLeast('6.1.0-18-amd64', 5, 8)).toBe(true)
    expect(kernelAtLeast('5.8.0', 5, 8)).toBe(true)
    expect(kernelAtLeast('5.10.0-28-cloud-amd64', 5, 8)).toBe(true)
    expect(kernelAtLeast('5.4.0-150-generic', 5, 8)).toBe(false)
    expect(kernelAtLeast('4.19.0', 5, 8)).toBe(false)
    expect(kernelAtLeast('Darwin', 5, 8)).toBe(false)
  })
})

describe('appendLineDurable', () => {
  it('appends lines and cuts a torn tail left by an interrupted append', async () => {
    const dir = await tempDir()
    const file = join(dir, 'log.jsonl')
    await appendLineDurable(file, '{"n":1}')
    await writeFile(file, '{"n":1}\n{"n":2, "tru', {flag: 'w'})
    await appendLineDurable(file, '{"n":3}')
    expect(await readFile(file, 'utf8')).toBe('{"n":1}\n{"n":3}\n')
  })

  it('keeps a complete final line that only lacks its newline', async () => {
    const dir = await tempDir()
    const file = join(dir, 'log.jsonl')
    await writeFile(file, '{"n":1}\n{"n":2}')
    await appendLineDurable(file, '{"n":3}')
    expect(await readFile(file, 'utf8')).toBe('{"n":1}\n{"n":2}\n{"n":3}\n')
  })
})
