/**
 * Trees larger than one request: the push and the pull go in bounded batches, a server with a smaller body
 * limit than the client's batches gets halves, and a sync stopped halfway resumes without sending again what
 * the server already acknowledged.
 */
import {spawn} from 'node:child_process'
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {ExitCode, JarvisError, UnreachableError} from '../../src/errors.js'
import {MemoryClient} from '../../src/protocol/client.js'
import {readConfig, readSyncState, withTreeLock} from '../../src/store/index.js'
import {PULL_BATCH_BYTES, PUSH_BATCH_FILES, runSync} from '../../src/sync/run.js'
import {startServer} from '../../src/server/start.js'
import {jarvisBin} from '../helpers/cli.js'
import {makeClient, removeAll, tempDir, TOKENS, tokenMap} from '../helpers/world.js'
import {BACKENDS, databaseFor, useBackend} from '../helpers/backends.js'

const dirs: string[] = []
const servers: Array<{close(): Promise<void>}> = []

afterAll(async () => {
  for (const server of servers) await server.close()
  await removeAll(dirs)
})

/** A server of the current backend with these limits; on `dataDir` and `port` again, the same store. */
async function smallServer(limits: {bodyLimit: number; maxFileBytes: number}, again?: {dataDir: string; port: number}): Promise<{url: string; port: number; dataDir: string; close(): Promise<void>}> {
  const dataDir = again?.dataDir ?? (await tempDir('jarvis-batches-server-'))
  if (again === undefined) dirs.push(dataDir)
  const server = await startServer({host: '127.0.0.1', port: again?.port ?? 0, dataDir, databaseUrl: await databaseFor(dataDir), tokens: tokenMap, logLevel: 'silent', ...limits})
  servers.push(server)
  return {url: server.url, port: server.port, dataDir, close: () => server.close()}
}

/** Text that JSON escaping inflates (quotes, backslashes, tabs): the body is larger than the files. */
function bulky(index: number, bytes: number): string {
  const line = `- item ${index}: "quoted" path C:\\\\dir\\\\file\tand a tab\n`
  return `# File ${index}\n\n${line.repeat(Math.ceil(bytes / line.length))}`
}

async function treeFiles(memory: string, dir = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const entry of await readdir(join(memory, dir), {withFileTypes: true})) {
    const rel = dir ? `${dir}/${entry.name}` : entry.name
    if (entry.isDirectory()) Object.assign(out, await treeFiles(memory, rel))
    else out[rel] = await readFile(join(memory, rel), 'utf8')
  }
  return out
}

describe.each(BACKENDS)('on %s', (backend) => {
  useBackend(backend)

  describe('sync in batches', () => {
    let url: string
    beforeAll(async () => {
      // 256 KiB per request: the 40 files below (about 1.6 MB of JSON) cannot go in one.
      url = (await smallServer({bodyLimit: 256 * 1024, maxFileBytes: 128 * 1024})).url
    })

    it('a tree far larger than the server accepts in one request syncs A → B byte for byte', async () => {
      const a = await makeClient(url, 'claude')
      const b = await makeClient(url, 'gemini')
      dirs.push(a.root, b.root)
      for (let i = 0; i < 40; i++) await a.write(`notes/n${String(i).padStart(2, '0')}.md`, bulky(i, 30 * 1024))
      const pushed = await a.sync()
      expect(pushed.pushed).toHaveLength(40)
      const pulled = await b.sync()
      expect(pulled.pulled).toHaveLength(40)
      expect(await treeFiles(b.memory)).toEqual(await treeFiles(a.memory))
      // Nothing left over: a second sync on each side moves nothing.
      const again = await a.sync()
      expect([...again.pushed, ...again.pulled]).toEqual([])
    })
  })

  describe('a pull of large files', () => {
    it('asks for fewer files at a time once answers grow large, so no answer holds the whole tree', async () => {
      const {url} = await smallServer({bodyLimit: 16 * 1024 * 1024, maxFileBytes: 1024 * 1024})
      const a = await makeClient(url, 'claude')
      const b = await makeClient(url, 'gemini')
      dirs.push(a.root, b.root)
      const FILE_BYTES = 1000 * 1024
      for (let i = 0; i < 30; i++) await a.write(`dumps/d${i}.md`, `# Dump ${i}\n${'x'.repeat(FILE_BYTES)}\n`)
      await a.sync()
      const answers: number[] = []
      const client = new MemoryClient({server: url, token: TOKENS.gemini, onBytes: (_sent, received) => answers.push(received)})
      try {
        const settings = {...(await readConfig(b.root)).sync, retryDelay: 10}
        const pulled = await withTreeLock(b.root, {timeoutMs: 10_000}, () => runSync({root: b.root, client, settings}))
        expect(pulled.pulled).toHaveLength(30)
      } finally {
        await client.close()
      }
      expect(await treeFiles(b.memory)).toEqual(await treeFiles(a.memory))
      // 30 MB in one answer before; now the largest is a handful of files, and each after the first stays near the bound.
      const pulls = answers.filter((bytes) => bytes > FILE_BYTES)
      expect(pulls.length).toBeGreaterThan(3)
      for (const bytes of pulls.slice(1)) expect(bytes).toBeLessThan(PULL_BATCH_BYTES * 1.1 + FILE_BYTES)
      expect(Math.max(...pulls)).toBeLessThan(10 * FILE_BYTES)
    })
  })

  describe('a sync stopped halfway', () => {
    it('resumes with what the server has not acknowledged, and sends nothing twice', async () => {
      const limits = {bodyLimit: 16 * 1024 * 1024, maxFileBytes: 64 * 1024}
      let server = await smallServer(limits)
      const a = await makeClient(server.url, 'claude')
      dirs.push(a.root)
      const count = PUSH_BATCH_FILES * 2 + 20
      for (let i = 0; i < count; i++) await a.write(`f/${String(i).padStart(5, '0')}.md`, `note ${i}\n`)
      // The server goes away after acknowledging two batches, before the third reaches it.
      class LostBeforeThirdBatch extends MemoryClient {
        pushes = 0
        override async push(...args: Parameters<MemoryClient['push']>) {
          if (++this.pushes === 3) await server.close()
          return super.push(...args)
        }
      }
      const client = new LostBeforeThirdBatch({server: server.url, token: TOKENS.claude})
      const settings = {...(await readConfig(a.root)).sync, retryDelay: 10}
      const failed = await withTreeLock(a.root, {timeoutMs: 10_000}, () => runSync({root: a.root, client, settings})).catch((error: unknown) => error)
      await client.close()
      expect(failed).toBeInstanceOf(UnreachableError)

      server = await smallServer(limits, server)
      const resumed = await a.sync()
      // Everything the server acknowledged before it went away was recorded then: only the third batch goes now.
      expect(resumed.pushed).toHaveLength(20)
      const b = await makeClient(server.url, 'gemini')
      dirs.push(b.root)
      const pulled = await b.sync()
      expect(pulled.pulled).toHaveLength(count)
      expect(await treeFiles(b.memory)).toEqual(await treeFiles(a.memory))
    })
  })

  describe('a file the server will not take', () => {
    it('stays here as it is, named (exit 2), while the rest of the tree syncs; once it fits, it goes', async () => {
      const {url} = await smallServer({bodyLimit: 16 * 1024 * 1024, maxFileBytes: 64 * 1024})
      const a = await makeClient(url, 'claude')
      const b = await makeClient(url, 'gemini')
      dirs.push(a.root, b.root)
      await a.write('gone.md', 'to be deleted\n')
      await a.sync()
      await b.sync()
      for (let i = 0; i < 5; i++) await a.write(`f/${i}.md`, `note ${i}\n`)
      // Larger than this server takes, far below what any client would refuse by itself.
      const big = 'x'.repeat(100 * 1024)
      await a.write('zz-big.md', big)
      await a.remove('gone.md')
      const failed = await a.sync().catch((error: unknown) => error)
      expect(failed).toBeInstanceOf(JarvisError)
      expect((failed as JarvisError).exit).toBe(ExitCode.badInput)
      expect((failed as JarvisError).message).toContain('.memory/zz-big.md: refused by the server: zz-big.md is 102400 bytes, more than the 65536')
      const done = (failed as JarvisError).data.result as {pushed: string[]; deleted: string[]}
      expect(done.pushed).toHaveLength(5)
      expect(done.deleted).toEqual(['gone.md'])
      expect(await a.read('zz-big.md')).toBe(big)
      // Nothing of it is awaited as a write of ours, and the other machine has the rest.
      const state = (await readSyncState(a.root)) as {files: Record<string, unknown>; pending?: Record<string, unknown>}
      expect(state.files['zz-big.md']).toBeUndefined()
      expect(state.pending ?? {}).toEqual({})
      await b.sync()
      expect(await b.read('f/4.md')).toBe('note 4\n')
      expect(await b.read('gone.md')).toBeNull()
      expect(await b.read('zz-big.md')).toBeNull()

      await a.write('zz-big.md', 'small now\n')
      expect((await a.sync()).pushed).toEqual(['zz-big.md'])
      await b.sync()
      expect(await b.read('zz-big.md')).toBe('small now\n')
    })

    it('a file whose push alone is larger than the server takes in a request is named as that file’s refusal, and the rest goes', async () => {
      // A body of 64 KiB at most: the file is 20 KiB, under every limit of a file, and 120 KiB as JSON.
      const {url} = await smallServer({bodyLimit: 64 * 1024, maxFileBytes: 1024 * 1024})
      const a = await makeClient(url, 'claude')
      const b = await makeClient(url, 'gemini')
      dirs.push(a.root, b.root)
      await a.write('gone.md', 'to be deleted\n')
      await a.sync()
      await b.sync()
      for (let i = 0; i < 5; i++) await a.write(`f/${i}.md`, `note ${i}\n`)
      const controls = '\x1b'.repeat(20 * 1024)
      await a.write('zz-ctl.md', controls)
      await a.remove('gone.md')
      const failed = await a.sync().catch((error: unknown) => error)
      expect(failed).toBeInstanceOf(JarvisError)
      expect((failed as JarvisError).exit).toBe(ExitCode.badInput)
      expect((failed as JarvisError).message).toContain('.memory/zz-ctl.md: refused by the server: the request body is larger than 65536 bytes')
      const done = (failed as JarvisError).data.result as {pushed: string[]; deleted: string[]}
      expect(done.pushed).toHaveLength(5)
      expect(done.deleted).toEqual(['gone.md'])
      expect(await a.read('zz-ctl.md')).toBe(controls)
      const state = (await readSyncState(a.root)) as {files: Record<string, unknown>; pending?: Record<string, unknown>}
      expect(state.files['zz-ctl.md']).toBeUndefined()
      expect(state.pending ?? {}).toEqual({})
      await b.sync()
      expect(await b.read('f/4.md')).toBe('note 4\n')
      expect(await b.read('gone.md')).toBeNull()
      expect(await b.read('zz-ctl.md')).toBeNull()
    })
  })

  describe('a push in batches writes its sync state once per batch', () => {
    it(`pushing ${PUSH_BATCH_FILES * 2 + 5} files (3 batches): 4 writes of the state (each batch's pending hashes with the one acknowledged before, then the last), and every file recorded`, async () => {
      const {url} = await smallServer({bodyLimit: 16 * 1024 * 1024, maxFileBytes: 1024 * 1024})
      const a = await makeClient(url, 'gemini')
      dirs.push(a.root)
      const count = PUSH_BATCH_FILES * 2 + 5
      for (let i = 0; i < count; i++) await a.write(`pushed/${String(i).padStart(5, '0')}.md`, `note ${i}\n`)
      const trace = join(a.root, '..', `push-renames-${process.pid}.txt`)
      dirs.push(trace)
      const run = await runStraced(trace, a.root, ['-e', 'trace=rename,renameat,renameat2,openat'])
      expect(run.code, run.stderr).toBe(0)
      // A write of the state replaces the file, or its journal, or appends to the journal (a write that changes few entries).
      const stateWrites = (await readFile(trace, 'utf8')).split('\n').filter((line) => /rename.*sync-state\.(json|journal)"/.test(line) || /openat.*sync-state\.journal".*O_APPEND/.test(line))
      // Two per batch and one before the first was 8.
      expect(stateWrites).toHaveLength(4)
      const state = (await readSyncState(a.root)) as {files: Record<string, unknown>; pending?: Record<string, unknown>}
      expect(Object.keys(state.files)).toHaveLength(count)
      expect(Object.keys(state.pending ?? {})).toEqual([])
      const b = await makeClient(url, 'claude')
      dirs.push(b.root)
      expect((await b.sync()).pulled).toHaveLength(count)
      expect((await a.sync()).pushed).toEqual([])
    })
  })

  describe('a sync that only pulls writes its sync state once', () => {
    it('pulling 30 files: one rename onto .nexus/sync-state.json, and the state records every file', async () => {
      const {url} = await smallServer({bodyLimit: 16 * 1024 * 1024, maxFileBytes: 1024 * 1024})
      const a = await makeClient(url, 'claude')
      const b = await makeClient(url, 'gemini')
      dirs.push(a.root, b.root)
      for (let i = 0; i < 30; i++) await a.write(`pulled/note-${i}.md`, `# Note ${i}\n`)
      await a.sync()
      const trace = join(b.root, '..', `renames-${process.pid}.txt`)
      dirs.push(trace)
      const run = await runStraced(trace, b.root, ['-e', 'trace=rename,renameat,renameat2'])
      expect(run.code, run.stderr).toBe(0)
      const stateWrites = (await readFile(trace, 'utf8')).split('\n').filter((line) => /rename.*sync-state\.json"/.test(line))
      expect(stateWrites).toHaveLength(1)
      const state = JSON.parse(await readFile(join(b.root, '.nexus', 'sync-state.json'), 'utf8')) as {files: Record<string, unknown>; seq?: number}
      expect(Object.keys(state.files).filter((path) => path.startsWith('pulled/'))).toHaveLength(30)
      expect(state.seq).toBeGreaterThan(0)
      expect((await b.sync()).pulled).toEqual([])
    })
  })

  function runStraced(trace: string, cwd: string, filter: string[]): Promise<{code: number | null; stderr: string}> {
    return new Promise((resolve, reject) => {
      const child = spawn('strace', ['-f', '-qq', '-o', trace, ...filter, process.execPath, jarvisBin, 'sync', '--quiet'], {
        cwd,
        env: {...process.env, JARVIS_TOKEN: TOKENS.gemini, NO_COLOR: '1'},
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
      child.on('error', reject)
      child.on('close', (code) => resolve({code, stderr}))
    })
  }
})
