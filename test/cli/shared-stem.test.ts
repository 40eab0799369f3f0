/**
 * Two memory files with one stem, `notes.md` and `notes.json`, both in conflict in one sync: each keeps its own
 * backup, `jarvis status` lists each backup under its own file, and `jarvis resolve <file> --keep local` puts back
 * that file's own text — never the other's. Real `jarvis serve`, real processes.
 */
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runJarvis} from '../helpers/cli.js'
import {removeAll, startTestServer, type TestServer} from '../helpers/world.js'
import {initedTree} from './memory-helpers.js'

let server: TestServer
const dirs: string[] = []

beforeAll(async () => {
  server = await startTestServer()
  dirs.push(server.dataDir)
})

afterAll(async () => {
  await server?.close()
  await removeAll(dirs)
})

async function tree(agent: 'claude' | 'gemini'): Promise<{root: string; run: (args: string[]) => ReturnType<typeof runJarvis>}> {
  const made = await initedTree(server.url, agent, 'jarvis-stem')
  dirs.push(made.root)
  return made
}

const md = (day: string) => `# Notes\n\nship on ${day}\n`
const json = (day: string) => `${JSON.stringify({deploy: day}, null, 2)}\n`
async function edit(root: string, day: string): Promise<void> {
  await writeFile(join(root, '.memory', 'notes.md'), md(day))
  await writeFile(join(root, '.memory', 'notes.json'), json(day))
}
const read = (root: string, rel: string) => readFile(join(root, '.memory', rel), 'utf8')

interface Status {
  backups: string[]
  backupsByFile: Array<{file: string | null; backups: string[]}>
  changes: {modified: string[]}
}

describe('notes.md and notes.json in conflict at once', () => {
  it('each keeps its own backup; status shows each under its file; resolve --keep local restores each file’s own text', async () => {
    const a = await tree('claude')
    const b = await tree('gemini')
    await edit(a.root, 'Friday')
    expect((await a.run(['sync'])).code).toBe(0)
    expect((await b.run(['sync'])).code).toBe(0)
    await edit(a.root, 'Monday')
    await edit(b.root, 'Tuesday')
    expect((await a.run(['sync'])).code).toBe(0)
    const conflicted = await b.run(['sync'])
    expect(conflicted.code, conflicted.stderr).toBe(4)

    const status = envelope<Status>(await b.run(['status', '--offline', '--json'])).result!
    expect(status.backupsByFile.map((entry) => entry.file)).toEqual(['notes.json', 'notes.md'])
    for (const entry of status.backupsByFile) expect(entry.backups).toHaveLength(1)
    const backupOf = Object.fromEntries(status.backupsByFile.map((entry) => [entry.file, entry.backups[0]]))
    // One of them keeps the contract's `notes.local.bak`; the other's name keeps its extension.
    expect(Object.values(backupOf).sort()).toEqual(status.backups)
    expect(status.backups).toContain('notes.local.bak')
    expect(await read(b.root, backupOf['notes.md'])).toBe(md('Tuesday'))
    expect(await read(b.root, backupOf['notes.json'])).toBe(json('Tuesday'))
    const human = await b.run(['status', '--offline'])
    expect(human.stdout).toContain('Conflicts waiting for you (2)')
    for (const backup of status.backups) expect(human.stdout).toContain(`.memory/${backup}`)

    // notes.json first: the sync saved its backup first, so in one shared chain notes.md's would be the newer one.
    const jsonKept = envelope<{file: string; backup: string; waiting: string[]}>(await b.run(['resolve', 'notes.json', '--keep', 'local', '--json']))
    expect(jsonKept).toMatchObject({status: 0, result: {file: 'notes.json', backup: backupOf['notes.json'], waiting: []}})
    expect(await read(b.root, 'notes.json')).toBe(json('Tuesday'))
    // notes.md still holds the server's side, and its backup still waits, under its own file
    expect(await read(b.root, 'notes.md')).toBe(md('Monday'))
    const between = envelope<Status>(await b.run(['status', '--offline', '--json'])).result!
    expect(between.backupsByFile).toEqual([{file: 'notes.md', backups: [backupOf['notes.md']]}])

    const mdKept = envelope<{file: string; backup: string; waiting: string[]}>(await b.run(['resolve', 'notes.md', '--keep', 'local', '--json']))
    expect(mdKept).toMatchObject({status: 0, result: {file: 'notes.md', backup: backupOf['notes.md'], waiting: []}})
    expect(await read(b.root, 'notes.md')).toBe(md('Tuesday'))
    const after = envelope<Status>(await b.run(['status', '--offline', '--json'])).result!
    expect(after.backups).toEqual([])
    expect(after.changes.modified).toEqual(['notes.json', 'notes.md'])

    expect((await b.run(['sync'])).code).toBe(0)
    expect((await a.run(['sync'])).code).toBe(0)
    expect(await read(a.root, 'notes.md')).toBe(md('Tuesday'))
    expect(await read(a.root, 'notes.json')).toBe(json('Tuesday'))
  })

  it('a backup an older jarvis left beside both files is nobody’s guess: status says whose it could be, resolve refuses it', async () => {
    const b = await tree('gemini')
    await edit(b.root, 'Friday')
    await writeFile(join(b.root, '.memory', 'notes.local.bak'), 'left by an older jarvis\n')
    const status = envelope<Status & {backupsByFile: Array<{candidates?: string[]}>}>(await b.run(['status', '--offline', '--json'])).result!
    expect(status.backupsByFile).toEqual([{file: null, backups: ['notes.local.bak'], candidates: ['notes.json', 'notes.md']}])
    for (const args of [
      ['resolve', 'notes.md', '--keep', 'local'],
      ['resolve', 'notes.local.bak', '--keep', 'local'],
    ]) {
      const refused = await b.run(args)
      expect(refused.code).toBe(2)
      expect(refused.stderr.replace(/\s*›\s*/g, ' ')).toContain('.memory/notes.local.bak was left by an older jarvis and could be the backup of notes.json or notes.md')
    }
    expect(await read(b.root, 'notes.md')).toBe(md('Friday'))
    expect(await read(b.root, 'notes.local.bak')).toBe('left by an older jarvis\n')
  })
})
