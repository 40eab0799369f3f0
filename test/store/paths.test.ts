import {mkdir, rm, symlink, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {describe, expect, it} from 'vitest'

import {PathRefusedError} from '../../src/errors.js'
import {checkRelativePath, deleteMemoryFile, isIgnoredMemoryPath, resolveInside, withPathGuardCache, writeMemoryFile} from '../../src/store/index.js'
import {tempDir, tempTree} from './helpers/temp.js'

describe('checkRelativePath', () => {
  const refused: Array<[string, string]> = [
    ['..', '".." segment'],
    ['a/../b', '".." segment'],
    ['a/..', '".." segment'],
    ['/etc/passwd', 'absolute'],
    ['C:\\x', 'drive letter'],
    ['C:/x', 'drive letter'],
    ['\\\\server\\share', 'absolute'],
    ['a\\b', 'backslash'],
    ['a\0b', 'NUL'],
    ['a\nb', 'control character'],
    ['a//b', 'empty path segment'],
    ['./a', '"." segment'],
    ['a/./b', '"." segment'],
    ['a/', 'trailing slash'],
    ['', 'empty path'],
    [`${'x'.repeat(256)}.md`, 'longer than 255 bytes'],
  ]

  it.each(refused)('refuses %j (%s)', (path, reason) => {
    let caught: unknown
    try {
      checkRelativePath(path)
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(PathRefusedError)
    expect((caught as PathRefusedError).exit).toBe(2)
    expect((caught as PathRefusedError).message).toContain(reason)
  })

  it.each(['jarvis/claude.json', 'episodes/2026-01-01/x.md', 'PROJECT_MEMORY.md', '.hidden/notes.md', 'a..b.md', 'ünïcode/日本.md'])(
    'accepts %j unchanged',
    (path) => {
      expect(checkRelativePath(path)).toBe(path)
    },
  )

  it('knows which names are not memory files', () => {
    expect(isIgnoredMemoryPath('PROJECT_MEMORY.local.bak')).toBe(true)
    expect(isIgnoredMemoryPath('a/notes.local.12.bak')).toBe(true)
    expect(isIgnoredMemoryPath('a/.notes.md.jarvis-tmp-123-4')).toBe(true)
    expect(isIgnoredMemoryPath('notes.md')).toBe(false)
    expect(isIgnoredMemoryPath('local.bak.md')).toBe(false)
  })
})

describe('resolveInside', () => {
  it('returns the path under the tree for files that do not exist yet', async () => {
    const root = await tempTree()
    const memory = join(root, '.memory')
    expect(await resolveInside(memory, 'episodes/2026-01-01/x.md')).toBe(join(memory, 'episodes', '2026-01-01', 'x.md'))
  })

  it('refuses a symlinked directory inside the tree that points outside', async () => {
    const root = await tempTree()
    const outside = await tempDir()
    await symlink(outside, join(root, '.memory', 'escape'))
    await expect(resolveInside(join(root, '.memory'), 'escape/x.md')).rejects.toBeInstanceOf(PathRefusedError)
    await expect(resolveInside(join(root, '.memory'), 'escape/x.md')).rejects.toThrow(/leaves the tree/)
  })

  it('refuses a symlinked file pointing outside, and a dangling symlink', async () => {
    const root = await tempTree()
    const outside = await tempDir()
    await writeFile(join(outside, 'secret.txt'), 'no')
    await symlink(join(outside, 'secret.txt'), join(root, '.memory', 'link.md'))
    await symlink(join(outside, 'missing.txt'), join(root, '.memory', 'dangling.md'))
    await expect(resolveInside(join(root, '.memory'), 'link.md')).rejects.toBeInstanceOf(PathRefusedError)
    await expect(resolveInside(join(root, '.memory'), 'dangling.md')).rejects.toBeInstanceOf(PathRefusedError)
  })

  it('accepts a symlink inside the tree that points inside', async () => {
    const root = await tempTree()
    await mkdir(join(root, '.memory', 'real'))
    await symlink(join(root, '.memory', 'real'), join(root, '.memory', 'alias'))
    expect(await resolveInside(join(root, '.memory'), 'alias/x.md')).toBe(join(root, '.memory', 'alias', 'x.md'))
  })

  it('during a sync (answers kept for the run), a file turned into a symlink leading out is still refused', async () => {
    const root = await tempTree()
    const outside = await tempDir()
    const memory = join(root, '.memory')
    await withPathGuardCache(async () => {
      await writeMemoryFile(root, 'notes/a.md', 'one\n')
      expect(await resolveInside(memory, 'notes/a.md')).toBe(join(memory, 'notes', 'a.md'))
      await rm(join(memory, 'notes', 'a.md'))
      await symlink(join(outside, 'x.md'), join(memory, 'notes', 'a.md'))
      await expect(resolveInside(memory, 'notes/a.md')).rejects.toBeInstanceOf(PathRefusedError)
      await expect(writeMemoryFile(root, 'notes/a.md', 'two\n')).rejects.toBeInstanceOf(PathRefusedError)
    })
  })

  it('during a sync, a folder it removed and someone made again as a symlink leading out is refused', async () => {
    const root = await tempTree()
    const outside = await tempDir()
    const memory = join(root, '.memory')
    await withPathGuardCache(async () => {
      await writeMemoryFile(root, 'gone/a.md', 'one\n')
      expect(await deleteMemoryFile(root, 'gone/a.md')).toBe(true) // the empty folder goes too
      await symlink(outside, join(memory, 'gone'))
      await expect(writeMemoryFile(root, 'gone/b.md', 'two\n')).rejects.toThrow(/leaves the tree/)
    })
  })

  it('checks the relative path first', async () => {
    const root = await tempTree()
    await expect(resolveInside(join(root, '.memory'), '../x')).rejects.toBeInstanceOf(PathRefusedError)
  })
})
