import {lstatSync} from 'node:fs'
import {mkdir, symlink, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, describe, expect, it} from 'vitest'

import {blankStat, type FsBinding, lstatInto, resetFileStat} from '../../src/store/file-stat.js'
import {scanMemory, writeMemoryFile} from '../../src/store/index.js'
import {tempDir, tempTree} from './helpers/temp.js'

/** A scan's files without their check times (taken when scanned). */
const seen = (scan: Map<string, {hash: string; size: number; mtimeMs: number; ino?: number}>) => [...scan].map(([path, {hash, size, mtimeMs, ino}]) => ({path, hash, size, mtimeMs, ino}))
const nodeBinding = () => (process as unknown as {binding(name: string): FsBinding}).binding('fs')

afterEach(() => resetFileStat(true))

describe('lstatInto', () => {
  it('answers what fs.lstatSync answers, through Node\'s binding or without it: a file, a folder (and that it is one), a symlink (not followed), nothing', async () => {
    const dir = await tempDir()
    await writeFile(join(dir, 'a.md'), 'some text\n')
    await mkdir(join(dir, 'folder'))
    await symlink(join(dir, 'a.md'), join(dir, 'link.md'))
    const paths = ['a.md', 'folder', 'link.md', 'missing.md'].map((name) => join(dir, name))
    const expected = paths.map((path) => {
      const info = lstatSync(path, {throwIfNoEntry: false})
      return info && {isFile: info.isFile(), isDirectory: info.isDirectory(), size: info.size, mtimeMs: info.mtimeMs, ctimeMs: info.ctimeMs, ino: info.ino}
    })
    for (const use of [true, false]) {
      resetFileStat(use)
      expect(paths.map((path) => {
        const info = lstatInto(path, blankStat())
        return info && {...info}
      })).toEqual(expected)
    }
    expect(() => lstatInto(join(dir, 'a\0.md'), blankStat())).toThrow(/null bytes/)
  })

  it('drops a binding that answers otherwise than fs.lstatSync after the first file, and answers as fs.lstatSync from then on', async () => {
    const root = await tempTree()
    for (let i = 0; i < 5; i++) await writeMemoryFile(root, `notes/${i}.md`, `note ${i}\n`)
    resetFileStat(false)
    const truth = seen(await scanMemory(root))
    let calls = 0
    const real = nodeBinding()
    // A binding of another layout: its mtime is a millisecond off.
    resetFileStat({
      lstat(path, bigint, request, throwIfNoEntry) {
        calls++
        const fields = real.lstat(path, bigint, request, throwIfNoEntry)
        return fields && Float64Array.from(fields, (value, i) => (i === 13 ? value + 1e6 : value))
      },
    })
    expect(seen(await scanMemory(root))).toEqual(truth)
    expect(calls).toBe(1)
    // Node's own binding agrees, and gives the same scan.
    resetFileStat(true)
    expect(seen(await scanMemory(root))).toEqual(truth)
  })
})
