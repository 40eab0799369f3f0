import {chmod, mkdir, readdir, readFile, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {describe, expect, it} from 'vitest'

import {appendLineDurable, scanMemory, sweepTempFiles, writeFileAtomic} from '../../src/store/index.js'
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
