import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {backupPathFor, listBackups, saveBackup, scanMemory, writeMemoryFile} from '../../src/store/index.js'
import {tempTree} from './helpers/temp.js'

async function backupContents(root: string, rel: string): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  for (const path of await listBackups(root, rel)) out.set(path, await readFile(join(root, '.memory', path), 'utf8'))
  return out
}

describe('backup names', () => {
  it.each([
    ['PROJECT_MEMORY.md', 'PROJECT_MEMORY.local.bak'],
    ['projects.json', 'projects.local.bak'],
    ['episodes/2026-01-01/a.b.md', 'episodes/2026-01-01/a.b.local.bak'],
    ['README', 'README.local.bak'],
    ['.notes', '.notes.local.bak'],
  ])('%s → %s', (rel, backup) => {
    expect(backupPathFor(rel)).toBe(backup)
  })

  it('numbers earlier backups', () => {
    expect(backupPathFor('PROJECT_MEMORY.md', 3)).toBe('PROJECT_MEMORY.local.3.bak')
  })
})

describe('saveBackup', () => {
  it('writes the newest backup beside the file, rotating a different earlier one to the next number', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'PROJECT_MEMORY.md', 'current\n')
    expect(await saveBackup(root, 'PROJECT_MEMORY.md', 'first\n')).toEqual({path: 'PROJECT_MEMORY.local.bak'})
    expect(await saveBackup(root, 'PROJECT_MEMORY.md', 'second\n')).toEqual({path: 'PROJECT_MEMORY.local.bak', rotated: 'PROJECT_MEMORY.local.1.bak'})
    expect(await saveBackup(root, 'PROJECT_MEMORY.md', 'third\n')).toEqual({path: 'PROJECT_MEMORY.local.bak', rotated: 'PROJECT_MEMORY.local.2.bak'})
    expect(Object.fromEntries(await backupContents(root, 'PROJECT_MEMORY.md'))).toEqual({
      'PROJECT_MEMORY.local.bak': 'third\n',
      'PROJECT_MEMORY.local.2.bak': 'second\n',
      'PROJECT_MEMORY.local.1.bak': 'first\n',
    })
    // backups are not memory files
    expect([...(await scanMemory(root)).keys()]).toEqual(['PROJECT_MEMORY.md'])
  })

  it('writes nothing when the newest backup already holds the content', async () => {
    const root = await tempTree()
    await saveBackup(root, 'notes/a.md', 'same')
    const before = await readdir(join(root, '.memory', 'notes'))
    expect(await saveBackup(root, 'notes/a.md', 'same')).toEqual({path: 'notes/a.local.bak', unchanged: true})
    expect(await readdir(join(root, '.memory', 'notes'))).toEqual(before)
  })

  it('never overwrites an existing numbered backup, even past a gap', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'x.local.bak', 'newest')
    await writeMemoryFile(root, 'x.local.5.bak', 'five')
    const result = await saveBackup(root, 'x.md', 'next')
    expect(result).toEqual({path: 'x.local.bak', rotated: 'x.local.6.bak'})
    expect(Object.fromEntries(await backupContents(root, 'x.md'))).toEqual({'x.local.bak': 'next', 'x.local.6.bak': 'newest', 'x.local.5.bak': 'five'})
  })

  it('property: every distinct content ever saved survives in some backup, and no backup file ever changes', async () => {
    const root = await tempTree()
    let run = 0
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom('a', 'b', 'c', 'a\n', '', 'ü'), {minLength: 1, maxLength: 12}), async (contents) => {
        const rel = `p${run++}/FILE.md`
        const saved = new Set<string>()
        let previous = new Map<string, string>()
        for (const content of contents) {
          await saveBackup(root, rel, content)
          saved.add(content)
          const now = await backupContents(root, rel)
          const kept = new Set(now.values())
          for (const content of saved) expect(kept.has(content)).toBe(true)
          // numbered backups are immutable once written; the newest is always the content just saved
          for (const [path, text] of previous) if (path !== backupPathFor(rel)) expect(now.get(path)).toBe(text)
          expect(now.get(backupPathFor(rel))).toBe(content)
          previous = now
        }
      }),
      {numRuns: 60},
    )
  })
})
