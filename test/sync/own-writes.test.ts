/**
 * A sync cut off mid-way, then another machine writes on top of what it left on the server: the next sync merges
 * against what this machine wrote (docs/sync.md, "What a crash leaves"), not against the older base, so our own edits
 * never meet themselves in a conflict and the user's newer edits stay in the file, not in a backup. Real processes:
 * `jarvis sync` as the user runs it, a real `jarvis serve`, and a proxy in front of it that does what a network or a
 * kill does, at a moment the test knows (no timing).
 */
import {spawn} from 'node:child_process'
import {createServer, type IncomingMessage, request as httpRequest, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {readdir} from 'node:fs/promises'

import {afterAll, describe, expect, it} from 'vitest'

import {STATUS_TEXTS_HEADER} from '../../src/schemas/index.js'
import {hashText, readSyncState} from '../../src/store/index.js'
import {jarvisBin, runJarvis} from '../helpers/cli.js'
import {makeClient, removeAll, startTestServer, type TestClient, type TestServer, TOKENS} from '../helpers/world.js'

const dirs: string[] = []
const closers: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const close of closers) await close()
  await removeAll(dirs)
})

async function freshServer(): Promise<TestServer> {
  const server = await startTestServer()
  closers.push(() => server.close())
  dirs.push(server.dataDir)
  return server
}

async function client(url: string, agent: string): Promise<TestClient> {
  const made = await makeClient(url, agent)
  dirs.push(made.root)
  return made
}

interface Proxy {
  url: string
  /**
   * The connection of the next push is cut: `after` the server stored it (its answer is lost), or `before` it reaches
   * the server.
   */
  cutNextPush(when: 'before' | 'after'): void
  /** The next pull request that names `path` is held, never answered: resolves once it has come. */
  holdPullOf(path: string): Promise<void>
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** A stand-in in front of `target`. It asks for no texts with a status, so that what a sync merges it pulls. */
async function proxyTo(target: string): Promise<Proxy> {
  let cutPush: 'before' | 'after' | undefined
  let hold: {path: string; arrived: () => void} | undefined
  const proxy: Server = createServer(async (req, res) => {
    const body = await bodyOf(req)
    if (hold !== undefined && req.url === '/api/memory/pull' && (JSON.parse(body.toString('utf8')) as {files: string[]}).files.includes(hold.path)) {
      hold.arrived()
      hold = undefined
      return
    }
    if (cutPush === 'before' && req.url === '/api/memory/push') {
      cutPush = undefined
      req.socket.destroy()
      return
    }
    const headers = {...req.headers}
    delete headers[STATUS_TEXTS_HEADER]
    const upstream = httpRequest(`${target}${req.url}`, {method: req.method, headers}, async (answer) => {
      const text = await bodyOf(answer)
      if (cutPush === 'after' && req.url === '/api/memory/push') {
        cutPush = undefined
        req.socket.destroy()
        return
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers).end(text)
    })
    upstream.end(body)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  closers.push(async () => {
    proxy.closeAllConnections()
    await new Promise<void>((resolve) => proxy.close(() => resolve()))
  })
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    cutNextPush: (when) => (cutPush = when),
    holdPullOf: (path) => new Promise<void>((resolve) => (hold = {path, arrived: resolve})),
  }
}

const syncA = (a: TestClient) => runJarvis(['sync', '--json'], {cwd: a.root, env: {JARVIS_TOKEN: TOKENS.claude}})
const backupsIn = async (c: TestClient) => (await readdir(c.memory)).filter((name) => name.includes('.local.'))

describe('a sync cut off mid-way, then another machine writes on top', () => {
  it('the answer to a push lost: once the server holds our lines with another machine’s, the user’s next edit merges in cleanly', async () => {
    const server = await freshServer()
    const proxy = await proxyTo(server.url)
    const a = await client(proxy.url, 'claude')
    const b = await client(server.url, 'gemini')
    await a.write('f.md', 'head\nmid\ntail\n')
    await a.sync()
    await b.sync()

    await a.write('f.md', 'head\nmid\ntail\nA-1\n')
    proxy.cutNextPush('after')
    const cut = await syncA(a)
    expect(cut.code).toBe(3)
    // The server took it: B merges its line on top of A's.
    await b.write('f.md', 'B-1\nhead\nmid\ntail\n')
    await b.sync()
    expect(await b.read('f.md')).toBe('B-1\nhead\nmid\ntail\nA-1\n')

    await a.write('f.md', 'head\nmid\ntail\nA-1\nA-2\n')
    const next = await syncA(a)
    expect(next.code, next.stdout).toBe(0)
    expect(await a.read('f.md')).toBe('B-1\nhead\nmid\ntail\nA-1\nA-2\n')
    expect(await backupsIn(a)).toEqual([])
    await b.sync()
    expect(await b.read('f.md')).toBe('B-1\nhead\nmid\ntail\nA-1\nA-2\n')
  }, 120_000)

  it('a push cut before it reached the server: our line is not taken for one the server removed', async () => {
    const server = await freshServer()
    const proxy = await proxyTo(server.url)
    const a = await client(proxy.url, 'claude')
    const b = await client(server.url, 'gemini')
    await a.write('f.md', 'head\nmid\ntail\n')
    await a.sync()
    await b.sync()
    await a.write('f.md', 'head\nmid\ntail\nA-1\n')
    // Noted as a write of ours that may have landed, but nothing of it is on the server.
    proxy.cutNextPush('before')
    await expect(a.sync()).rejects.toThrow()
    expect(Object.keys((await readSyncState(a.root)).pending ?? {})).toEqual(['f.md'])
    await b.write('f.md', 'B-1\nhead\nmid\ntail\n')
    await b.sync()
    await a.write('f.md', 'head\nmid\ntail\nA-1\nA-2\n')
    expect((await syncA(a)).code).toBe(0)
    expect(await a.read('f.md')).toBe('B-1\nhead\nmid\ntail\nA-1\nA-2\n')
  }, 120_000)

  it('killed after a pull wrote a file, before the sync state: the file it never edited takes the next change without a conflict', async () => {
    const server = await freshServer()
    const proxy = await proxyTo(server.url)
    const a = await client(proxy.url, 'claude')
    const b = await client(server.url, 'gemini')
    await a.write('f.md', 'head\nmid\ntail\n')
    await a.write('m.md', 'one\ntwo\nthree\n')
    await a.sync()
    await b.sync()
    // B changes f.md (A pulls it) and m.md, which A changes too (A merges it, after the pull, asking for its text).
    await b.write('f.md', 'B-1\nhead\nmid\ntail\n')
    await b.write('m.md', 'one, B\ntwo\nthree\n')
    await b.sync()
    await a.write('m.md', 'one\ntwo\nthree\nfour, A\n')

    // A's sync is killed while it waits for m.md's text: f.md is written, the sync state is not.
    const held = proxy.holdPullOf('m.md')
    const child = spawn(process.execPath, [jarvisBin, 'sync', '--quiet'], {cwd: a.root, env: {...process.env, JARVIS_TOKEN: TOKENS.claude}, stdio: 'ignore'})
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    expect(await Promise.race([held.then(() => 'held'), exited.then(() => 'exited')])).toBe('held')
    child.kill('SIGKILL')
    await exited
    expect(await a.read('f.md')).toBe('B-1\nhead\nmid\ntail\n')
    const state = await readSyncState(a.root)
    expect(state.files['f.md'].hash).toBe(hashText('head\nmid\ntail\n'))

    await b.write('f.md', 'B-1\nhead\nmid\ntail\nB-2\n')
    await b.sync()
    const next = await syncA(a)
    expect(next.code, next.stdout).toBe(0)
    expect(await a.read('f.md')).toBe('B-1\nhead\nmid\ntail\nB-2\n')
    expect(await a.read('m.md')).toBe('one, B\ntwo\nthree\nfour, A\n')
    expect(await backupsIn(a)).toEqual([])
  }, 120_000)
})
