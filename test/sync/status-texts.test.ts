/**
 * The texts an incremental status carries (`x-jarvis-status-texts`): a sync that pulls or merges a few files takes
 * them from the status answer and sends no pull request; a text that is not the version its entry names is not
 * taken; a server that gives none is asked with a pull, as before.
 */
import {createServer, request as httpRequest, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'

import {afterAll, describe, expect, it} from 'vitest'

import {MemoryClient, type PullResponse} from '../../src/protocol/client.js'
import {readConfig, withTreeLock} from '../../src/store/index.js'
import {runSync} from '../../src/sync/run.js'
import {makeClient, removeAll, startTestServer, type TestServer, TOKENS} from '../helpers/world.js'

const dirs: string[] = []
const servers: TestServer[] = []
afterAll(async () => {
  for (const server of servers) await server.close()
  await removeAll(dirs)
})

/** A server of its own for each test: the trees of one do not meet another's files. */
async function freshServer(): Promise<TestServer> {
  const server = await startTestServer()
  servers.push(server)
  dirs.push(server.dataDir)
  return server
}

/** The real client, counting the pull requests it sends. */
class CountingClient extends MemoryClient {
  pulls = 0
  override pull(paths: string[], onSent?: () => void): Promise<PullResponse> {
    this.pulls++
    return super.pull(paths, onSent)
  }
}

/** One sync of `root` against `url`; the result and the pull requests it sent. */
async function syncCounting(root: string, url: string, agent = 'gemini') {
  const client = new CountingClient({server: url, token: TOKENS[agent]})
  const settings = {...(await readConfig(root)).sync, retryDelay: 10}
  const result = await withTreeLock(root, {timeoutMs: 10_000}, () => runSync({root, client, settings}))
  return {result, pulls: client.pulls}
}

/** A stand-in in front of the server (what it cannot do itself): each status answer's texts rewritten by `edit`. */
async function rewritingProxy(target: string, edit: (content: string) => string | undefined): Promise<{url: string; close(): Promise<void>}> {
  const proxy: Server = createServer((req, res) => {
    const upstream = httpRequest(`${target}${req.url}`, {method: req.method, headers: req.headers}, (answer) => {
      const chunks: Buffer[] = []
      answer.on('data', (chunk: Buffer) => chunks.push(chunk))
      answer.on('end', () => {
        let body = Buffer.concat(chunks).toString('utf8')
        if (req.url?.startsWith('/api/memory/status') && answer.statusCode === 200) {
          const json = JSON.parse(body) as {files: Record<string, {content?: string}>}
          for (const file of Object.values(json.files)) {
            if (file.content === undefined) continue
            const changed = edit(file.content)
            if (changed === undefined) delete file.content
            else file.content = changed
          }
          body = JSON.stringify(json)
        }
        const headers = {...answer.headers, 'content-length': String(Buffer.byteLength(body))}
        delete headers['transfer-encoding']
        res.writeHead(answer.statusCode ?? 502, headers).end(body)
      })
    })
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  return {url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, close: () => new Promise((resolve) => proxy.close(() => resolve()))}
}

/** Two trees synced once through `url`, from A's two files. */
async function syncedPair(url: string) {
  const a = await makeClient(url, 'claude')
  const b = await makeClient(url, 'gemini')
  dirs.push(a.root, b.root)
  await a.write('PROJECT_MEMORY.md', '# Memory\n\n- one\n- two\n\n## Notes\n\n- alpha\n- beta\n')
  await a.write('notes/x.md', 'x\n')
  await a.sync()
  await b.sync()
  return {a, b}
}

describe('the texts a status carries', () => {
  it('serve a pull of a few files and a merge without a pull request, each recorded as its base', async () => {
    const server = await freshServer()
    const {a, b} = await syncedPair(server.url)
    await a.write('notes/x.md', 'x, edited on A\n')
    await a.write('notes/new.md', 'new on A\n')
    await a.write('PROJECT_MEMORY.md', '# Memory\n\n- one\n- two\n- three (from A)\n\n## Notes\n\n- alpha\n- beta\n')
    await b.write('PROJECT_MEMORY.md', '# Memory\n\n- one\n- two\n\n## Notes\n\n- alpha\n- beta\n- gamma (from B)\n')
    await a.sync()
    const {result, pulls} = await syncCounting(b.root, server.url)
    expect(result.pulled).toEqual(['notes/new.md', 'notes/x.md'])
    expect(result.merged).toEqual(['PROJECT_MEMORY.md'])
    expect(pulls).toBe(0)
    expect(await b.read('notes/x.md')).toBe('x, edited on A\n')
    expect(await b.read('notes/new.md')).toBe('new on A\n')
    // The bases are the versions written: the next merge of x.md is three-way (both edits kept, no backup).
    await a.sync()
    expect(await a.read('PROJECT_MEMORY.md')).toBe(await b.read('PROJECT_MEMORY.md'))
    await a.write('notes/x.md', 'top from A\nx, edited on A\n')
    await b.write('notes/x.md', 'x, edited on A\nbottom from B\n')
    await a.sync()
    const again = await syncCounting(b.root, server.url)
    expect(again.result.merged).toEqual(['notes/x.md'])
    expect(again.result.backups).toEqual([])
    expect(await b.read('notes/x.md')).toBe('top from A\nx, edited on A\nbottom from B\n')
  })

  // What the proxy does to each text: makes it another version (its hash no longer matches), or drops it.
  it.each([
    ['are not taken when they are not the version their entry names: those files are pulled', (content: string) => `${content}tampered\n`],
    ['are not needed: from a server that gives none, the files are pulled as before', () => undefined],
  ])('%s', async (_name, edit) => {
    const proxy = await rewritingProxy((await freshServer()).url, edit)
    try {
      const {a, b} = await syncedPair(proxy.url)
      await a.write('notes/x.md', 'x, edited on A\n')
      await a.sync()
      const {result, pulls} = await syncCounting(b.root, proxy.url)
      expect(result.pulled).toEqual(['notes/x.md'])
      expect(pulls).toBe(1)
      expect(await b.read('notes/x.md')).toBe('x, edited on A\n')
    } finally {
      await proxy.close()
    }
  })
})
