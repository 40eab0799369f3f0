/**
 * The quick check: a sync after one that left every file equal to its base asks the server what changed since and
 * scans the tree against the stat cache; when neither found anything it does not read the sync state. Whatever
 * changed — a file edited in place, added or removed here, a file pushed by another machine, the sync state
 * written by someone else — the sync still sees it. A sync that changes a few files of a larger tree appends them to
 * the sync state's journal instead of rewriting the whole state, and another process reads the file and its journal
 * as one state. A tree from the previous version (a state file and no journal, a stat cache of an object per file
 * with a clean mark without the journal's stamp) still syncs, and still gets its quick no-op.
 */
import {spawn} from 'node:child_process'
import {lstat, readFile, rm, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {hashText, readSyncState, statCachePath, syncJournalPath, syncStatePath, writeSyncState} from '../../src/store/index.js'
import {jarvisBin, runJarvis} from '../helpers/cli.js'
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
async function openedBySync(root: string, agent: string): Promise<{code: number | null; stderr: string; opened: string[]}> {
  const {lines, ...run} = await tracedSync(root, agent, 'open,openat')
  return {...run, opened: lines.flatMap((line) => /open(?:at)?\([^"]*"([^"]+)"/.exec(line)?.[1] ?? [])}
}

/** `jarvis sync` in `root` under strace, tracing the system calls `calls`: the lines of the trace, in order. */
function tracedSync(root: string, agent: string, calls: string): Promise<{code: number | null; stderr: string; lines: string[]}> {
  const trace = join(root, '..', `traced-${process.pid}-${Date.now()}.txt`)
  return new Promise((resolve, reject) => {
    const child = spawn('strace', ['-f', '-qq', '-o', trace, '-e', `trace=${calls}`, process.execPath, jarvisBin, 'sync', '--quiet'], {
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
          resolve({code, stderr, lines: text.split('\n')})
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

  it('asks the server before it walks the tree: the question is on the wire while the files are looked at', async () => {
    const a = await client('claude')
    for (let i = 0; i < 20; i++) await a.write(`notes/n${i}.md`, `n${i}\n`)
    await a.sync()
    await a.sync()
    await a.sync()
    await a.write('notes/n3.md', 'n3, edited\n')

    const {code, stderr, lines} = await tracedSync(a.root, 'claude', 'write,writev,lstat,newfstatat,statx')
    expect(code, stderr).toBe(0)
    const asked = lines.findIndex((line) => line.includes('GET /api/memory/status'))
    const walked = lines.findIndex((line) => /notes\/n\d+\.md"/.test(line))
    expect(asked).toBeGreaterThan(-1)
    expect(walked).toBeGreaterThan(-1)
    expect(asked).toBeLessThan(walked)
    const b = await client('gemini')
    await b.sync()
    expect(await b.read('notes/n3.md')).toBe('n3, edited\n')
  })
})

describe('a sync that pushed or pulled', () => {
  const stateOpened = (opened: string[]) => opened.filter((path) => path.endsWith('.nexus/sync-state.json'))

  it('leaves the clean mark: the next sync on either side opens no sync state, and still sees an edit in place', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('marked/a.md', 'version one\n')
    await a.write('marked/b.json', '{"b": 1}\n')
    await jarvisSync(a)
    // The push's answer carried the server's next change number: A's own push is not news to A's next sync.
    const afterPush = await openedBySync(a.root, 'claude')
    expect(afterPush.code, afterPush.stderr).toBe(0)
    expect(stateOpened(afterPush.opened)).toEqual([])

    await jarvisSync(b)
    expect(await b.read('marked/a.md')).toBe('version one\n')
    // B's pulled files have no stat in its cache: hashed again, found equal to their bases, nothing to do.
    const afterPull = await openedBySync(b.root, 'gemini')
    expect(afterPull.code, afterPull.stderr).toBe(0)
    expect(stateOpened(afterPull.opened)).toEqual([])

    // Same size, edited in place on B: seen, pushed, and pulled by A.
    await b.write('marked/a.md', 'version two\n')
    await jarvisSync(b)
    expect((await a.sync()).pulled).toEqual(['marked/a.md'])
    expect(await a.read('marked/a.md')).toBe('version two\n')
    expect((await readSyncState(b.root)).files['marked/a.md']?.hash).toBe(hashText('version two\n'))
  })

  it('trusts a state left as its writer left it, and no other: one edited by hand, size kept, is checked and refused', async () => {
    const {a} = await fortyNotes('trust')
    await jarvisSync(a)
    const text = await readFile(syncStatePath(a.root), 'utf8')
    const hash = (await readSyncState(a.root)).files['trust/n7.md']!.hash
    // Not a hash any more, and the file exactly as long: only its stamp shows that someone wrote it.
    await writeFile(syncStatePath(a.root), text.replace(hash, 'z'.repeat(64)))
    await a.write('trust/n8.md', '# note 8, edited\n')
    const run = await runJarvis(['sync', '--quiet'], {cwd: a.root, env: {JARVIS_TOKEN: TOKENS[a.agent]}})
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('.nexus/sync-state.json')
    expect(run.stderr).toContain('trust/n7.md')
    expect(run.stderr).not.toMatch(/\n\s+at /)
  })
})

const exists = (path: string) => stat(path).then(() => true, () => false)

/** A and B, and forty notes under `folder` that A has pushed. */
async function fortyNotes(folder: string): Promise<{a: TestClient; b: TestClient}> {
  const a = await client('claude')
  const b = await client('gemini')
  for (let i = 0; i < 40; i++) await a.write(`${folder}/n${i}.md`, `# note ${i}\n`)
  await a.sync()
  return {a, b}
}

async function jarvisSync(c: TestClient): Promise<void> {
  const run = await runJarvis(['sync', '--quiet'], {cwd: c.root, env: {JARVIS_TOKEN: TOKENS[c.agent]}})
  expect(run.code, run.stderr).toBe(0)
}

describe('the sync state journal in a sync, and a tree the previous version left', () => {
  it('three files edited among forty: the state file is left as it was, the journal records them, and every side agrees', async () => {
    const {a, b} = await fortyNotes('forty')
    await b.sync()
    await a.sync()
    const stateFile = await lstat(syncStatePath(a.root))

    for (const i of [3, 17, 31]) await a.write(`forty/n${i}.md`, `# note ${i}, edited\n`)
    await jarvisSync(a)
    expect((await lstat(syncStatePath(a.root))).ino).toBe(stateFile.ino)
    expect(await exists(syncJournalPath(a.root))).toBe(true)
    // Another process reads the file and its journal: the three new bases are there, and nothing is pushed again.
    const state = await readSyncState(a.root)
    for (const i of [3, 17, 31]) expect(state.files[`forty/n${i}.md`]?.hash).toBe(hashText(`# note ${i}, edited\n`))
    expect(Object.keys(state.files).filter((path) => path.startsWith('forty/'))).toHaveLength(40)
    expect((await a.sync()).pushed).toEqual([])

    await jarvisSync(b)
    for (const i of [3, 17, 31]) expect(await b.read(`forty/n${i}.md`)).toBe(`# note ${i}, edited\n`)
    expect((await readSyncState(b.root)).files['forty/n17.md']?.hash).toBe(hashText('# note 17, edited\n'))
    expect(await b.sync()).toMatchObject({pushed: [], pulled: [], merged: []})
  })

  it('two files edited among forty after a clean sync: neither side opens the state file (their bases are in the stat cache, the rest in the journal), and both end as a whole read finds them', async () => {
    const {a, b} = await fortyNotes('view')
    await b.sync()
    await a.sync()
    // One round that appends to the journal, then a clean sync on each side.
    await a.write('view/n0.md', '# note 0, edited\n')
    for (const c of [a, a, b, b]) await c.sync()

    for (const i of [5, 22]) await a.write(`view/n${i}.md`, `# note ${i}, edited\n`)
    for (const [c, agent] of [[a, 'claude'], [b, 'gemini']] as const) {
      const run = await openedBySync(c.root, agent)
      expect(run.code, run.stderr).toBe(0)
      expect(run.opened.filter((path) => path.endsWith('.nexus/sync-state.json'))).toEqual([])
      expect(run.opened.filter((path) => path.endsWith('.nexus/sync-state.journal')).length).toBeGreaterThan(0)
    }
    for (const i of [5, 22]) expect(await b.read(`view/n${i}.md`)).toBe(`# note ${i}, edited\n`)
    // What each recorded is what a sync reading the whole state finds: every file its base, the same revisions on
    // both sides, nothing left to do.
    const [stateA, stateB] = [await readSyncState(a.root), await readSyncState(b.root)]
    for (let i = 0; i < 40; i++) {
      const path = `view/n${i}.md`
      expect([path, stateA.files[path]?.hash, stateB.files[path]?.hash]).toEqual([path, hashText((await a.read(path))!), hashText((await b.read(path))!)])
      expect([path, stateA.files[path]?.rev]).toEqual([path, stateB.files[path]?.rev])
    }
    expect(stateA.files['view/n5.md']!.rev).toBeGreaterThan(stateA.files['view/n6.md']!.rev!)
    for (const c of [a, b]) expect(await c.sync()).toMatchObject({pushed: [], pulled: [], merged: [], deleted: []})
  })

  it('a tree as the previous version left it (no journal, a version 1 stat cache, a clean mark without the journal) syncs, and gets its quick no-op', async () => {
    const {a, b} = await fortyNotes('old')
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
