/**
 * `jarvis resolve --keep local` as a tester found it: it put the whole backup back, so the other machine's clean
 * edits were silently reverted, and with several backups of one file the oldest won. Now your side goes back
 * where the two sides disagreed, your newest side wins, and what cannot be decided line by line is named and kept.
 * Real `jarvis serve` (in process), real jarvis processes.
 */
import {readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {ResolveResult} from '../../src/status/resolve.js'
import {envelope} from '../helpers/cli.js'
import {makeClient, removeAll, startTestServer, type TestServer} from '../helpers/world.js'
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

/**
 * Two machines on one server, each with its own file name so the tests of this file do not meet: `a` runs the
 * jarvis commands under test, `b` (the other machine) syncs in process.
 */
async function machines(name: string) {
  const made = await initedTree(server.url, 'claude', 'jarvis-resolve')
  dirs.push(made.root)
  const path = join(made.root, '.memory', name)
  const a = {
    ...made,
    read: () => readFile(path, 'utf8'),
    write: (text: string) => writeFile(path, text),
    edit: async (from: RegExp, to: string) => writeFile(path, (await readFile(path, 'utf8')).replace(from, to)),
    files: async () => (await readdir(join(made.root, '.memory'))).filter((f) => f.startsWith(name.replace(/\.md$/, ''))).sort(),
  }
  const other = await makeClient(server.url, 'gemini')
  dirs.push(other.root)
  const b = {
    sync: async () => {
      await other.sync()
    },
    read: async () => (await other.read(name))!,
    write: (text: string) => other.write(name, text),
    edit: async (from: RegExp, to: string) => other.write(name, (await other.read(name))!.replace(from, to)),
  }
  return {a, b}
}

const doc = (release: string, owner: string, x = 'x') => `title\nrelease: ${release}\n${x}\ny\nz\nowner: ${owner}\n`

describe('jarvis resolve --keep local', () => {
  it('puts your side back where the two sides disagreed and keeps the other machine’s clean edit', async () => {
    const {a, b} = await machines('P1.md')
    await a.write(doc('Friday', 'nobody'))
    expect((await a.run(['sync', '-q'])).code).toBe(0)
    await b.sync()
    await b.write(doc('Monday', 'gemini'))
    await b.sync()
    await a.edit(/Friday/, 'Tuesday')
    expect((await a.run(['sync', '-q'])).code).toBe(4)
    expect(await a.read()).toBe(doc('Monday', 'gemini'))

    const resolved = await a.run(['resolve', 'P1.md', '--keep', 'local'])
    expect(resolved.code, resolved.stderr).toBe(0)
    expect(await a.read()).toBe(doc('Tuesday', 'gemini'))
    expect(resolved.stdout).toContain('your version is back in .memory/P1.md where the two sides disagreed')
    expect(await a.files()).toEqual(['P1.md'])
    expect((await a.run(['sync', '-q'])).code).toBe(0)
    await b.sync()
    expect(await b.read()).toBe(doc('Tuesday', 'gemini'))
  })

  it('with three backups of one file, your newest side wins and an older conflict’s other lines still come back', async () => {
    const {a, b} = await machines('P2.md')
    await a.write(doc('Friday', 'nobody'))
    expect((await a.run(['sync', '-q'])).code).toBe(0)
    for (const k of [1, 2, 3]) {
      await b.sync()
      await b.edit(/release: .*/, `release: B${k}`)
      if (k === 1) await b.edit(/^x$/m, 'xb')
      await b.sync()
      await a.edit(/release: .*/, `release: A${k}`)
      if (k === 1) await a.edit(/^x$/m, 'xa')
      expect((await a.run(['sync', '-q'])).code).toBe(4)
    }
    expect(await a.files()).toEqual(['P2.local.1.bak', 'P2.local.2.bak', 'P2.local.bak', 'P2.md'])

    const resolved = await a.run(['resolve', 'P2.md', '--keep', 'local', '--json'])
    expect(resolved.code, resolved.stderr).toBe(0)
    const result = envelope<ResolveResult>(resolved).result!
    expect(result.decided.map((d) => [d.backup, d.outcome])).toEqual([
      ['P2.local.bak', 'put-back'],
      ['P2.local.2.bak', 'put-back'],
      ['P2.local.1.bak', 'put-back'],
    ])
    // A3, not the oldest A1; and xa, the side of the first conflict that nothing newer replaced.
    expect(await a.read()).toBe(doc('A3', 'nobody', 'xa'))
    expect(result.waiting).toEqual([])
    expect((await a.run(['sync', '-q'])).code).toBe(0)
    await b.sync()
    expect(await b.read()).toBe(doc('A3', 'nobody', 'xa'))
  })

  it('a line changed since stays and its backup waits (exit 4); without a record the backup goes back whole, naming and keeping what it replaced', async () => {
    const {a, b} = await machines('P3.md')
    await a.write(doc('Friday', 'nobody'))
    expect((await a.run(['sync', '-q'])).code).toBe(0)
    await b.sync()
    await b.write(doc('Monday', 'gemini'))
    await b.sync()
    await a.edit(/Friday/, 'Tuesday')
    expect((await a.run(['sync', '-q'])).code).toBe(4)
    await b.edit(/Monday/, 'Wednesday') // b changes the same line again, after the conflict
    await b.sync()
    expect((await a.run(['sync', '-q'])).code).toBe(0)

    const left = await a.run(['resolve', 'P3.md', '--keep', 'local'])
    expect(left.code).toBe(4)
    expect(left.stdout).toContain('line 2: the file has "release: Wednesday", yours was "release: Tuesday"')
    expect(left.stderr).toContain('they wait in .memory/P3.local.bak')
    expect(await a.read()).toBe(doc('Wednesday', 'gemini'))
    expect(await a.files()).toEqual(['P3.local.bak', 'P3.md'])

    // A backup whose conflict left no record (an older jarvis made it): back whole, and what it replaced is kept.
    await rm(join(a.root, '.nexus', 'conflicts'), {recursive: true})
    const whole = await a.run(['resolve', 'P3.md', '--keep', 'local'])
    expect(whole.code, whole.stderr).toBe(0)
    expect(whole.stdout).toContain('it replaced these lines of the file: line 2 "release: Wednesday", line 6 "owner: gemini"')
    expect(whole.stdout).toContain('the file as it was is now the backup, .memory/P3.local.bak')
    expect(await a.read()).toBe(doc('Tuesday', 'nobody'))
    expect(await readFile(join(a.root, '.memory', 'P3.local.bak'), 'utf8')).toBe(doc('Wednesday', 'gemini'))
    expect(await a.files()).toEqual(['P3.local.bak', 'P3.md'])
    expect((await a.run(['resolve', 'P3.local.bak', '--keep', 'server'])).code).toBe(0)
    expect(await a.files()).toEqual(['P3.md'])
  })
})
