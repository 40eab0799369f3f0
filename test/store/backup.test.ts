import {readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {
  backupPathFor,
  backupsByFile,
  deleteBackup,
  filesOfBackup,
  findBackups,
  listBackups,
  nextBackupPath,
  saveBackup,
  scanMemory,
  writeMemoryFile,
} from '../../src/store/index.js'
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

describe('files that share a stem (notes.md, notes.json) keep their own backups', () => {
  async function contentsOf(root: string, rel: string): Promise<string[]> {
    return Promise.all((await listBackups(root, rel)).map((path) => readFile(join(root, '.memory', path), 'utf8')))
  }

  it('the second file of a stem gets its whole name; neither ever rotates or restores the other’s backup', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'notes.md', 'md now\n')
    await writeMemoryFile(root, 'notes.json', '{"now": 1}\n')
    expect(await saveBackup(root, 'notes.md', 'md mine 1\n')).toEqual({path: 'notes.local.bak'})
    expect(await saveBackup(root, 'notes.json', '{"mine": 1}\n')).toEqual({path: 'notes.json.local.bak'})
    expect(await saveBackup(root, 'notes.md', 'md mine 2\n')).toEqual({path: 'notes.local.bak', rotated: 'notes.local.1.bak'})
    expect(await saveBackup(root, 'notes.json', '{"mine": 2}\n')).toEqual({path: 'notes.json.local.bak', rotated: 'notes.json.local.1.bak'})
    expect(await listBackups(root, 'notes.md')).toEqual(['notes.local.bak', 'notes.local.1.bak'])
    expect(await contentsOf(root, 'notes.md')).toEqual(['md mine 2\n', 'md mine 1\n'])
    expect(await contentsOf(root, 'notes.json')).toEqual(['{"mine": 2}\n', '{"mine": 1}\n'])
    expect(await filesOfBackup(root, 'notes.local.1.bak')).toEqual(['notes.md'])
    expect(await filesOfBackup(root, 'notes.json.local.bak')).toEqual(['notes.json'])
    expect(await backupsByFile(root, await findBackups(root))).toEqual([
      {file: 'notes.json', backups: ['notes.json.local.bak', 'notes.json.local.1.bak']},
      {file: 'notes.md', backups: ['notes.local.bak', 'notes.local.1.bak']},
    ])
    // the record says whose each one is; backups are still not memory files
    const record = JSON.parse(await readFile(join(root, '.nexus', 'backup-owners.json'), 'utf8'))
    expect(record.backups).toEqual({
      'notes.json.local.1.bak': 'notes.json',
      'notes.json.local.bak': 'notes.json',
      'notes.local.1.bak': 'notes.md',
      'notes.local.bak': 'notes.md',
    })
    expect([...(await scanMemory(root)).keys()]).toEqual(['notes.json', 'notes.md'])
  })

  it('the same text saved for both is still two backups, one each', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'notes.md', 'a\n')
    await writeMemoryFile(root, 'notes.json', 'b\n')
    expect(await saveBackup(root, 'notes.md', 'same\n')).toEqual({path: 'notes.local.bak'})
    expect(await saveBackup(root, 'notes.json', 'same\n')).toEqual({path: 'notes.json.local.bak'})
    expect(await saveBackup(root, 'notes.json', 'same\n')).toEqual({path: 'notes.json.local.bak', unchanged: true})
    expect(await listBackups(root, 'notes.md')).toEqual(['notes.local.bak'])
    expect(await listBackups(root, 'notes.json')).toEqual(['notes.json.local.bak'])
  })

  it('once the first file’s backups are decided, the stem chain is free again and a dry run predicts the name', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'a/plan.md', 'x\n')
    await writeMemoryFile(root, 'a/plan.json', '{}\n')
    await saveBackup(root, 'a/plan.md', 'md\n')
    expect(await nextBackupPath(root, 'a/plan.json')).toBe('a/plan.json.local.bak')
    expect(await saveBackup(root, 'a/plan.json', 'json 1\n')).toEqual({path: 'a/plan.json.local.bak'})
    expect(await deleteBackup(root, 'a/plan.local.bak')).toBe(true)
    expect(JSON.parse(await readFile(join(root, '.nexus', 'backup-owners.json'), 'utf8')).backups).toEqual({'a/plan.json.local.bak': 'a/plan.json'})
    // plan.json keeps writing where its backups already are, so its newest stays first in one chain
    expect(await saveBackup(root, 'a/plan.json', 'json 2\n')).toEqual({path: 'a/plan.json.local.bak', rotated: 'a/plan.json.local.1.bak'})
    expect(await nextBackupPath(root, 'a/plan.md')).toBe('a/plan.local.bak')
    expect(await saveBackup(root, 'a/plan.md', 'md 2\n')).toEqual({path: 'a/plan.local.bak'})
    expect(await contentsOf(root, 'a/plan.md')).toEqual(['md 2\n'])
    expect(await contentsOf(root, 'a/plan.json')).toEqual(['json 2\n', 'json 1\n'])
  })

  it('a backup an older jarvis left (no record) is its file’s when one file has its stem, and nobody’s guess when two do', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'notes.md', 'md\n')
    await writeMemoryFile(root, 'notes.local.bak', 'old md backup\n')
    expect(await listBackups(root, 'notes.md')).toEqual(['notes.local.bak'])
    expect(await filesOfBackup(root, 'notes.local.bak')).toEqual(['notes.md'])

    await writeMemoryFile(root, 'notes.json', '{}\n')
    expect(await listBackups(root, 'notes.md')).toEqual([])
    expect(await listBackups(root, 'notes.json')).toEqual([])
    expect(await filesOfBackup(root, 'notes.local.bak')).toEqual(['notes.json', 'notes.md'])
    expect(await backupsByFile(root, ['notes.local.bak'])).toEqual([{file: null, backups: ['notes.local.bak'], candidates: ['notes.json', 'notes.md']}])
    // a new conflict never joins (or rotates) the doubtful chain
    expect(await saveBackup(root, 'notes.md', 'new md backup\n')).toEqual({path: 'notes.md.local.bak'})
    expect(await readFile(join(root, '.memory', 'notes.local.bak'), 'utf8')).toBe('old md backup\n')
    expect(await listBackups(root, 'notes.md')).toEqual(['notes.md.local.bak'])
  })

  it('an older backup whose file was certain when a new one was saved stays that file’s when a same-stem file appears', async () => {
    const root = await tempTree()
    await writeMemoryFile(root, 'notes.md', 'md\n')
    await writeMemoryFile(root, 'notes.local.bak', 'old md backup\n')
    expect(await saveBackup(root, 'notes.md', 'new md backup\n')).toEqual({path: 'notes.local.bak', rotated: 'notes.local.1.bak'})
    await writeMemoryFile(root, 'notes.json', '{}\n')
    expect(await contentsOf(root, 'notes.md')).toEqual(['new md backup\n', 'old md backup\n'])
    expect(await listBackups(root, 'notes.json')).toEqual([])
  })

  it('a malformed record stops with its name, never a guess', async () => {
    const root = await tempTree()
    await writeFile(join(root, '.nexus', 'backup-owners.json'), '{"backups": {"../x.local.bak": "x.md"}}\n')
    await expect(listBackups(root, 'x.md')).rejects.toThrow(/\.nexus\/backup-owners\.json/)
  })

  it('property: whatever the order of saves and decisions, each file lists exactly the contents saved for it, newest first', async () => {
    // notes.md, notes.json and notes share the stem `notes`; a.md, a.json and a.md.txt fight over two names.
    const files = ['notes.md', 'notes.json', 'notes', 'a.md', 'a.json', 'a.md.txt']
    const step = fc.oneof(
      fc.record({op: fc.constant('save' as const), file: fc.constantFrom(...files)}),
      fc.record({op: fc.constant('resolve' as const), file: fc.constantFrom(...files)}),
    )
    let run = 0
    await fc.assert(
      fc.asyncProperty(fc.array(step, {minLength: 1, maxLength: 14}), async (steps) => {
        const root = await tempTree()
        const dir = `r${run++}/`
        for (const file of files) await writeMemoryFile(root, dir + file, `${file}\n`)
        const saved = new Map<string, string[]>(files.map((file) => [dir + file, []]))
        for (const [i, s] of steps.entries()) {
          const rel = dir + s.file
          if (s.op === 'save') {
            // Tagged with its file, and new each time (the same content twice is the test above): a backup listed
            // under another file, lost, or listed out of order is caught.
            const content = `${s.file}:${i}`
            await saveBackup(root, rel, content)
            saved.get(rel)!.push(content)
          } else {
            const [newest] = await listBackups(root, rel)
            if (newest) {
              await deleteBackup(root, newest)
              saved.get(rel)!.pop()
            }
          }
          for (const [file, contents] of saved) expect(await contentsOf(root, file)).toEqual([...contents].reverse())
        }
      }),
      {numRuns: 100},
    )
  })
})
