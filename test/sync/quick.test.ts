/**
 * The quick check: a sync after one that left every file equal to its base asks the server what changed since and
 * scans the tree against the stat cache; when neither found anything it does not read the sync state. Whatever
 * changed — a file edited in place, added or removed here, a file pushed by another machine, the sync state
 * written by someone else — the sync still sees it.
 */
import {spawn} from 'node:child_process'
import {readFile, rm} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {hashText, readSyncState, writeSyncState} from '../../src/store/index.js'
import {jarvisBin} from '../helpers/cli.js'
import {makeClient, removeAll, startTestServer, type TestClient, TOKENS, type TestServer} from '../helpers/world.js'

let server: TestServer
const dirs: string[] = []

beforeAll(async () => {
  server = await startTestServer()
})

afterAll(async () => {
  await server.close()
  await removeAll(dirs)
})

async function client(agent: string): Promise<TestClient> {
  const made = await makeClient(server.url, agent)
  dirs.push(made.root)
  return made
}

/** `jarvis sync` in `root` under strace: the paths it opened, and its exit code. */
function openedBySync(root: string, agent: string): Promise<{code: number | null; stderr: string; opened: string[]}> {
  const trace = join(root, '..', `opened-${process.pid}-${Date.now()}.txt`)
  return new Promise((resolve, reject) => {
    const child = spawn('strace', ['-f', '-qq', '-o', trace, '-e', 'trace=open,openat', process.execPath, jarvisBin, 'sync', '--quiet'], {
      cwd: root,
      env: {...process.env, JARVIS_TOKEN: TOKENS[agent], NO_COLOR: '1'},
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code) => {
      readFile(trace, 'utf8')
        .then(async (text) => {
          await rm(trace, {force: true})
          resolve({code, stderr, opened: [...text.matchAll(/open(?:at)?\([^"]*"([^"]+)"/g)].map((match) => match[1]!)})
        })
        .catch(reject)
    })
  })
}

describe('a sync after a clean one', () => {
  it('a jarvis sync opens no sync state when neither the server nor the tree changed, and reads it as soon as one did', async () => {
    const a = await client('claude')
    await a.write('notes/a.md', 'a\n')
    await a.write('b.json', '{"b": 1}\n')
    expect((await a.sync()).pushed).toEqual(['b.json', 'notes/a.md'])
    await a.sync() // records the server's revisions of its own push
    await a.sync() // nothing to do: leaves the clean mark

    const quiet = await openedBySync(a.root, 'claude')
    expect(quiet.code, quiet.stderr).toBe(0)
    expect(quiet.opened.filter((path) => path.endsWith('.nexus/sync-state.json'))).toEqual([])
    // An edit in place: the sync needs the bases, and reads the state.
    await a.write('notes/a.md', 'a, edited\n')
    const edited = await openedBySync(a.root, 'claude')
    expect(edited.code, edited.stderr).toBe(0)
    expect(edited.opened.filter((path) => path.endsWith('.nexus/sync-state.json')).length).toBeGreaterThan(0)
    const b = await client('gemini')
    await b.sync()
    expect(await b.read('notes/a.md')).toBe('a, edited\n')
  })

  it('still sees every kind of change: an edit, a new file and a deletion here, a push from elsewhere, another writer of the state', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('keep.md', 'keep\n')
    await a.write('gone.md', 'gone\n')
    await a.sync()
    await b.sync()
    await a.sync()
    await b.sync()

    await a.write('keep.md', 'keep, edited\n')
    expect((await a.sync()).pushed).toEqual(['keep.md'])
    await a.sync()
    await a.write('new.md', 'new\n')
    expect((await a.sync()).pushed).toEqual(['new.md'])
    await a.sync()
    await a.remove('gone.md')
    expect((await a.sync()).deleted).toEqual(['gone.md'])
    await a.sync()

    // B's last sync was clean: the server's news reach it all the same.
    const pulled = await b.sync()
    expect(pulled.pulled.sort()).toEqual(['keep.md', 'new.md'])
    expect(pulled.deleted).toEqual(['gone.md'])
    expect(await b.read('keep.md')).toBe('keep, edited\n')
    expect(await b.read('gone.md')).toBeNull()

    // Another writer of the state (session sync writes it too) replaces the file: the mark no longer names it, and
    // the sync reads the state it finds (here a base hash that no file has, which the sync records again).
    await b.sync()
    const state = await readSyncState(b.root)
    await writeSyncState(b.root, {...state, files: {...state.files, 'keep.md': {...state.files['keep.md']!, hash: '0'.repeat(64)}}})
    await b.sync()
    expect((await readSyncState(b.root)).files['keep.md']!.hash).toBe(hashText('keep, edited\n'))
    expect(await b.read('keep.md')).toBe('keep, edited\n')
  })
})
