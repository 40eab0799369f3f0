/**
 * A path that is a file on one machine and a folder on another (CONTRACT §4/§6: nothing lost, no raw error, what
 * cannot be synced is named and the rest syncs), and a pulled file the sync did not write, which the next sync must
 * still pull.
 */
import {mkdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {ExitCode, JarvisError} from '../../src/errors.js'
import {MemoryClient} from '../../src/protocol/client.js'
import {readConfig, withTreeLock} from '../../src/store/index.js'
import {runSync} from '../../src/sync/run.js'
import {makeClient, removeAll, startTestServer, TOKENS, type TestClient, type TestServer} from '../helpers/world.js'
import {treeOf} from './trees.js'

let server: TestServer
const cleanup: string[] = []

async function client(agent: string): Promise<TestClient> {
  const made = await makeClient(server.url, agent)
  cleanup.push(made.root)
  return made
}

beforeEach(async () => {
  server = await startTestServer()
  cleanup.push(server.dataDir)
})

afterEach(async () => {
  await server.close()
  await removeAll(cleanup.splice(0))
})

/** The error a sync ended with (it must end with one). */
async function syncError(c: TestClient): Promise<JarvisError> {
  const error = await c.sync().then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(JarvisError)
  return error as JarvisError
}

/** The report a sync that exits 2 (files named and left aside) carries. */
const reportOf = (error: JarvisError) => error.data.result as {pushed: string[]; pulled: string[]; deleted: string[]; invalid: {path: string; problems: string[]}[]}

describe('a path that is a file on one machine and a folder on another', () => {
  it('a file that became a folder elsewhere: deleted here, the folder pulled, the rest synced both ways', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('notes', 'x\n')
    await a.sync()
    await b.sync()
    await b.remove('notes')
    await b.write('notes/two.md', 'two\n')
    await b.write('other.md', 'other\n')
    await b.sync()

    await a.write('mine.md', 'mine\n')
    const result = await a.sync()
    expect(result.deleted).toEqual(['notes'])
    expect(result.pulled).toEqual(['notes/two.md', 'other.md'])
    expect(result.pushed).toEqual(['mine.md'])
    expect(await treeOf(a)).toEqual({'mine.md': 'mine\n', 'notes/two.md': 'two\n', 'other.md': 'other\n'})
    const again = await a.sync()
    expect([...again.pushed, ...again.pulled, ...again.deleted]).toEqual([])
    await b.sync()
    expect(await treeOf(b)).toEqual(await treeOf(a))
  })

  it('a file edited here that became a folder elsewhere: the edit is kept and pushed, the folder’s file named, the rest synced', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('notes', 'x\n')
    await a.sync()
    await b.sync()
    await b.remove('notes')
    await b.write('notes/two.md', 'two\n')
    await b.write('other.md', 'other\n')
    await b.sync()

    await a.write('notes', 'edited here\n')
    await a.write('mine.md', 'mine\n')
    const error = await syncError(a)
    expect(error.exit).toBe(ExitCode.badInput)
    expect(error.message).toContain('.memory/notes/two.md: not written here: .memory/notes is a file on this machine, where the server has a folder; rename .memory/notes')
    expect(reportOf(error).pulled).toEqual(['other.md'])
    expect(reportOf(error).pushed.sort()).toEqual(['mine.md', 'notes'])
    expect(await a.read('notes')).toBe('edited here\n')
    // Named again until the file is renamed; then the folder comes, and the edit goes everywhere under its new name.
    expect((await syncError(a)).message).toContain('.memory/notes/two.md: not written here')
    await rm(join(a.memory, 'notes'))
    await a.write('notes.md', 'edited here\n')
    const fixed = await a.sync()
    expect(fixed.pulled).toEqual(['notes/two.md'])
    expect(await treeOf(a)).toEqual({'mine.md': 'mine\n', 'notes.md': 'edited here\n', 'notes/two.md': 'two\n', 'other.md': 'other\n'})
    // The other machine held the folder while the server held the edited file too: named there, then synced.
    await b.sync().catch(() => undefined)
    await b.sync()
    expect(await treeOf(b)).toEqual(await treeOf(a))
  })

  it('a folder that became a file elsewhere: its files deleted here, the file pulled, and the next sync has nothing to do', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('notes/one.md', 'x\n')
    await a.sync()
    await b.sync()
    await rm(join(b.memory, 'notes'), {recursive: true})
    await b.write('notes', 'now a file\n')
    await b.sync()

    const result = await a.sync()
    expect(result.deleted).toEqual(['notes/one.md'])
    expect(result.pulled).toEqual(['notes'])
    expect(await treeOf(a)).toEqual({notes: 'now a file\n'})
    const again = await a.sync()
    expect([...again.pushed, ...again.pulled, ...again.deleted]).toEqual([])
    expect(await treeOf(a)).toEqual({notes: 'now a file\n'})
  })

  it('a folder whose file was edited here that became a file elsewhere: the edit is kept and pushed, the file named', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('notes/one.md', 'x\n')
    await a.sync()
    await b.sync()
    await rm(join(b.memory, 'notes'), {recursive: true})
    await b.write('notes', 'now a file\n')
    await b.sync()

    await a.write('notes/one.md', 'x\nedited here\n')
    const error = await syncError(a)
    expect(error.exit).toBe(ExitCode.badInput)
    expect(error.message).toContain('.memory/notes: not written here: it is a folder on this machine and a file on the server')
    expect(reportOf(error).pushed).toEqual(['notes/one.md'])
    expect(await treeOf(a)).toEqual({'notes/one.md': 'x\nedited here\n'})
    // Moved out of the way here, the folder's file syncs under its new name and the server's file arrives.
    await mkdir(join(a.memory, 'kept'))
    await rm(join(a.memory, 'notes'), {recursive: true})
    await a.write('kept/one.md', 'x\nedited here\n')
    await a.sync()
    expect(await treeOf(a)).toEqual({'kept/one.md': 'x\nedited here\n', notes: 'now a file\n'})
  })
})

describe('a pulled file the sync did not write', () => {
  it('is pulled by a later sync: the sync state does not record it as received', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('first.md', 'first\n')
    await a.sync()
    await b.write('late.md', 'from b\n')
    await b.sync()

    // The user writes late.md while A's sync pulls it: the pull is left alone (the user's file stays) ...
    class WrittenDuringPull extends MemoryClient {
      async status(...args: Parameters<MemoryClient['status']>): ReturnType<MemoryClient['status']> {
        const answer = await super.status(...args)
        // The texts an incremental status carries would spare the pull request this test needs.
        for (const file of Object.values(answer.files)) delete (file as {content?: unknown}).content
        return answer
      }

      async pull(...args: Parameters<MemoryClient['pull']>): ReturnType<MemoryClient['pull']> {
        const answer = await super.pull(...args)
        await writeFile(join(a.memory, 'late.md'), 'typed meanwhile\n')
        return answer
      }
    }
    const config = await readConfig(a.root)
    const racing = new WrittenDuringPull({server: server.url, token: TOKENS.claude})
    try {
      const result = await withTreeLock(a.root, {timeoutMs: 5000}, () => runSync({root: a.root, client: racing, settings: config.sync}))
      expect(result.pulled).toEqual([])
    } finally {
      await racing.close()
    }
    expect(await a.read('late.md')).toBe('typed meanwhile\n')

    // ... and once the user's file is gone, the next sync pulls the server's.
    await a.remove('late.md')
    const next = await a.sync()
    expect(next.pulled).toEqual(['late.md'])
    expect(await a.read('late.md')).toBe('from b\n')
  })
})
