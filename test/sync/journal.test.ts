/**
 * A sync that changes a few files of a larger tree appends them to the sync state's journal instead of rewriting
 * the whole state; another jarvis process reads the file and its journal as one state. A tree from the previous
 * version (a state file and no journal, a stat cache of an object per file with a clean mark without the journal's
 * stamp) still syncs, and still gets its quick no-op.
 */
import {lstat, readFile, rm, stat, writeFile} from 'node:fs/promises'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {hashText, readSyncState, statCachePath, syncJournalPath, syncStatePath} from '../../src/store/index.js'
import {runJarvis} from '../helpers/cli.js'
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

const exists = (path: string) => stat(path).then(() => true, () => false)

async function jarvisSync(c: TestClient): Promise<void> {
  const run = await runJarvis(['sync', '--quiet'], {cwd: c.root, env: {JARVIS_TOKEN: TOKENS[c.agent]}})
  expect(run.code, run.stderr).toBe(0)
}

describe('the sync state journal in a sync', () => {
  it('three files edited among forty: the state file is left as it was, the journal records them, and every side agrees', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    for (let i = 0; i < 40; i++) await a.write(`notes/n${i}.md`, `# note ${i}\n`)
    await a.sync()
    await b.sync()
    await a.sync()
    const stateFile = await lstat(syncStatePath(a.root))

    for (const i of [3, 17, 31]) await a.write(`notes/n${i}.md`, `# note ${i}, edited\n`)
    await jarvisSync(a)
    expect((await lstat(syncStatePath(a.root))).ino).toBe(stateFile.ino)
    expect(await exists(syncJournalPath(a.root))).toBe(true)
    // Another process reads the file and its journal: the three new bases are there, and nothing is pushed again.
    const state = await readSyncState(a.root)
    for (const i of [3, 17, 31]) expect(state.files[`notes/n${i}.md`]?.hash).toBe(hashText(`# note ${i}, edited\n`))
    expect(Object.keys(state.files)).toHaveLength(40)
    expect((await a.sync()).pushed).toEqual([])

    await jarvisSync(b)
    for (const i of [3, 17, 31]) expect(await b.read(`notes/n${i}.md`)).toBe(`# note ${i}, edited\n`)
    expect((await readSyncState(b.root)).files['notes/n17.md']?.hash).toBe(hashText('# note 17, edited\n'))
    expect(await b.sync()).toMatchObject({pushed: [], pulled: [], merged: []})
  })

  it('a tree as the previous version left it (no journal, a version 1 stat cache, a clean mark without the journal) syncs, and gets its quick no-op', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    for (let i = 0; i < 40; i++) await a.write(`old/n${i}.md`, `# note ${i}\n`)
    await a.sync()
    await a.sync()
    await a.sync()
    await a.sync()
    // What the previous version wrote: the whole state in its file, no journal, a clean mark naming that file only.
    const state = await readSyncState(a.root)
    const text = `${JSON.stringify(state, null, 2)}\n`
    await rm(syncJournalPath(a.root), {force: true})
    // The stat cache as the previous version wrote it too: an object per file (version 1).
    const columns = JSON.parse(await readFile(statCachePath(a.root), 'utf8')) as {version: number; paths: string[]; hashes: string; sizes: number[]; mtimes: number[]; inos: number[]; checked: number[]; clean?: {state: unknown}}
    expect(columns.version).toBe(2)
    const {paths, hashes, sizes, mtimes, inos, checked, ...rest} = columns
    const files = Object.fromEntries(paths.map((path, i) => [path, {hash: hashes.slice(i * 64, i * 64 + 64), size: sizes[i], mtimeMs: mtimes[i], ino: inos[i], checkedAtMs: checked[i]}]))
    const cache = {...rest, version: 1, files}
    expect(cache.clean).toBeDefined()
    // The quick check takes the old mark: nothing to do, without reading the state (here not even JSON: read, it
    // would fail the sync).
    await writeFile(syncStatePath(a.root), 'not read by a quick no-op\n')
    const info = await lstat(syncStatePath(a.root))
    cache.clean!.state = {ino: info.ino, size: info.size, mtimeMs: info.mtimeMs}
    await writeFile(statCachePath(a.root), JSON.stringify(cache))
    expect(await a.sync()).toMatchObject({pushed: [], pulled: [], merged: []})
    await writeFile(syncStatePath(a.root), text)
    // An edit is still seen, recorded (in a new journal) and reaches the other side.
    await a.write('old/n5.md', '# note 5, edited\n')
    expect((await a.sync()).pushed).toEqual(['old/n5.md'])
    expect(await exists(syncJournalPath(a.root))).toBe(true)
    await b.sync()
    expect(await b.read('old/n5.md')).toBe('# note 5, edited\n')
    expect((await readSyncState(a.root)).files['old/n5.md']?.hash).toBe(hashText('# note 5, edited\n'))
  })
})
