/**
 * A pull's order on disk, seen from real `jarvis sync` processes: every pulled file's temp file is written, then all
 * of them made durable at once (one syncfs(2) through `sync -f`, or an fsync each where that is refused), then
 * renamed over their targets, then each folder fsynced once. Counted with strace; cut with SIGKILL at the moment the
 * temp files are complete and nothing is renamed yet.
 */
import {spawn} from 'node:child_process'
import {chmod, readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {startServer} from '../../src/server/start.js'
import {isTempName} from '../../src/store/index.js'
import {jarvisBin, runJarvis} from '../helpers/cli.js'
import {makeClient, removeAll, tempDir, type TestClient, TOKENS, tokenMap} from '../helpers/world.js'

const FILES = 200
const dirs: string[] = []
const servers: Array<{close(): Promise<void>}> = []

afterAll(async () => {
  for (const server of servers) await server.close()
  await removeAll(dirs)
})

/** A server, A with `shared.md` (also on B, then edited on A) and FILES new files in 4 folders, pushed: B has all of it to pull. */
async function world(): Promise<{a: TestClient; b: TestClient}> {
  const dataDir = await tempDir('jarvis-pull-durability-server-')
  dirs.push(dataDir)
  const server = await startServer({host: '127.0.0.1', port: 0, dataDir, tokens: tokenMap, logLevel: 'silent'})
  servers.push(server)
  const a = await makeClient(server.url, 'claude')
  const b = await makeClient(server.url, 'gemini')
  dirs.push(a.root, b.root)
  await a.write('shared.md', '# Shared\n\n- first version\n')
  await a.sync()
  await b.sync()
  await a.write('shared.md', '# Shared\n\n- second version, from A\n')
  for (let i = 0; i < FILES; i++) await a.write(`folder${i % 4}/note-${i}.md`, `# Note ${i}\n\n${'- a line of the note\n'.repeat(1 + (i % 9))}`)
  await a.sync()
  return {a, b}
}

/** Every file under `memory` (temp files included) by relative path. */
async function treeFiles(memory: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const entry of await readdir(memory, {recursive: true, withFileTypes: true})) {
    if (!entry.isFile()) continue
    const full = join(entry.parentPath, entry.name)
    out[full.slice(memory.length + 1)] = await readFile(full, 'utf8')
  }
  return out
}

/** A folder holding one executable `sync` that runs `script`: put first on PATH, it stands in for coreutils' sync. */
async function fakeSync(script: string): Promise<string> {
  const dir = await tempDir('jarvis-fake-sync-')
  dirs.push(dir)
  await writeFile(join(dir, 'sync'), `#!/bin/sh\n${script}\n`)
  await chmod(join(dir, 'sync'), 0o755)
  return dir
}

/** `jarvis sync` in `cwd` under `strace -f` (the `sync` it starts included): the calls counted by name, and its exit. */
function straced(cwd: string, env: NodeJS.ProcessEnv = {}): Promise<{code: number | null; stderr: string; calls: Map<string, number>}> {
  return new Promise((resolve, reject) => {
    const trace = join(cwd, '..', `calls-${process.pid}-${Date.now()}.txt`)
    const child = spawn('strace', ['-f', '-qq', '-c', '-o', trace, '-e', 'trace=fsync,fdatasync,syncfs,rename,renameat,renameat2', process.execPath, jarvisBin, 'sync', '--quiet'], {
      cwd,
      env: {...process.env, JARVIS_TOKEN: TOKENS.gemini, NO_COLOR: '1', ...env},
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', async (code) => {
      const calls = new Map<string, number>()
      // The calls column of `strace -c`, by the name in its last column.
      for (const line of (await readFile(trace, 'utf8')).split('\n')) {
        const columns = line.trim().split(/\s+/)
        if (/^\d/.test(columns[0] ?? '') && columns.length >= 5) calls.set(columns.at(-1)!, Number(columns[3]))
      }
      resolve({code, stderr, calls})
    })
  })
}

const count = (calls: Map<string, number>, ...names: string[]) => names.reduce((sum, name) => sum + (calls.get(name) ?? 0), 0)

describe('a pull of many files is made durable at once', () => {
  it(`pulling ${FILES} files in 4 folders: one syncfs and a fsync per folder, not one per file`, async () => {
    const {a, b} = await world()
    const run = await straced(b.root)
    expect(run.code, run.stderr).toBe(0)
    expect(await treeFiles(b.memory)).toEqual(await treeFiles(a.memory))
    expect(count(run.calls, 'syncfs')).toBe(1)
    // The 5 folders the files went to, the sync state, the audit log and the lock: a few, whatever the number of files.
    expect(count(run.calls, 'fsync', 'fdatasync')).toBeLessThan(25)
    expect(count(run.calls, 'rename', 'renameat', 'renameat2')).toBeGreaterThanOrEqual(FILES + 1)
  })

  it('where `sync -f` is refused, each pulled file is fsynced before its rename, and the pull completes', async () => {
    const {a, b} = await world()
    const refusing = await fakeSync('echo "sync: error syncing: Operation not supported" >&2\nexit 1')
    const run = await straced(b.root, {PATH: `${refusing}:${process.env.PATH}`, DEBUG: 'jarvis:store'})
    expect(run.code, run.stderr).toBe(0)
    expect(run.stderr).toContain('syncfs refused')
    expect(await treeFiles(b.memory)).toEqual(await treeFiles(a.memory))
    expect(count(run.calls, 'syncfs')).toBe(0)
    expect(count(run.calls, 'fsync', 'fdatasync')).toBeGreaterThanOrEqual(FILES + 1)
  })

  it('killed (SIGKILL) after its temp files and before any rename: every target is as it was; the next sync completes it byte-identical', async () => {
    const {a, b} = await world()
    const before = await treeFiles(b.memory)
    // `sync -f` runs once every temp file is complete and before the first rename: the stand-in kills its caller there.
    const killer = await fakeSync('kill -9 $PPID')
    const killed = await runJarvis(['sync', '--quiet'], {cwd: b.root, env: {JARVIS_TOKEN: TOKENS.gemini, PATH: `${killer}:${process.env.PATH}`}})
    expect(killed.signal).toBe('SIGKILL')

    const after = await treeFiles(b.memory)
    const wanted = await treeFiles(a.memory)
    const temps = Object.keys(after).filter((path) => isTempName(path.split('/').pop()!))
    // Every pulled file was complete in its temp file; none was renamed, so B's files are exactly as before.
    expect(temps).toHaveLength(FILES + 1)
    for (const temp of temps) {
      const target = temp.replace(/(^|\/)\.([^/]+)\.jarvis-tmp-\d+-\d+$/, '$1$2')
      expect(after[temp], temp).toBe(wanted[target])
    }
    expect(Object.fromEntries(Object.entries(after).filter(([path]) => !temps.includes(path)))).toEqual(before)

    const next = await runJarvis(['sync', '--quiet'], {cwd: b.root, env: {JARVIS_TOKEN: TOKENS.gemini}})
    expect(next.code, next.stderr).toBe(0)
    // The dead process's temp files are gone and every file is A's, byte for byte.
    expect(await treeFiles(b.memory)).toEqual(wanted)
    expect((await b.sync()).pulled).toEqual([])
  })
})
