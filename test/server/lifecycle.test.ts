/** Start, stop, restart: persistence, generated tokens, graceful shutdown. */
import {stat} from 'node:fs/promises'
import {connect, type Socket} from 'node:net'
import {join} from 'node:path'
import {Readable} from 'node:stream'

import {request} from 'undici'
import {afterEach, describe, expect, it} from 'vitest'

import {BadInputError} from '../../src/errors.js'
import {startServer} from '../../src/server/start.js'
import {call, Cleanup, connectWs, delay, harness, makeTokens, startHarness, tempDir} from './helpers.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

describe('persistence', () => {
  it('keeps files, revisions and tombstones across a restart, and the seq continues', async () => {
    const dataDir = cleanup.dir(await tempDir())
    const {byAgent} = makeTokens()
    const first = await startHarness({dataDir, tokensByAgent: byAgent})
    cleanup.add(() => first.stop())
    await first.push({'a.md': 'a1', 'b.md': 'b1'})
    await first.push({'a.md': 'a2'}, {'a.md': 1})
    await first.push({}, undefined, ['b.md'])
    await first.call('POST', '/api/projects/active', {projectId: 'p1'})
    const before = (await first.status()).body
    await first.stop()

    const second = await startHarness({dataDir, tokensByAgent: byAgent})
    cleanup.add(() => second.stop())
    const after = (await second.status()).body
    expect(after).toEqual({...before, serverTime: expect.any(String)})
    expect(after.seq).toBe(4)
    expect(after.files['b.md']).toMatchObject({deleted: true, rev: 2})
    const pushed = await second.push({'a.md': 'a3'}, {'a.md': 2})
    expect(pushed.body).toMatchObject({seq: 5, files: {'a.md': {rev: 3}}})
    expect((await second.call('POST', '/api/memory/pull', {files: ['a.md']})).body.files['a.md'].content).toBe('a3')
  })
})

describe('generated tokens', () => {
  it('creates tokens.json (0600) with one token per agent, which work, and reuses it on restart', async () => {
    const dataDir = cleanup.dir(await tempDir())
    const first = await startServer({host: '127.0.0.1', port: 0, dataDir, logLevel: 'silent', env: {}})
    cleanup.add(() => first.close())
    expect(first).toMatchObject({tokenSource: 'data-dir', tokensGenerated: true, tokensFile: join(dataDir, 'tokens.json')})
    expect(Object.keys(first.tokens ?? {}).sort()).toEqual(['chatgpt', 'claude', 'gemini', 'openclaw'])
    expect(first.agents).toEqual(['chatgpt', 'claude', 'gemini', 'openclaw'])
    expect((await stat(join(dataDir, 'tokens.json'))).mode & 0o777).toBe(0o600)
    const token = first.tokens?.gemini as string
    const answer = await call(first.url, token, 'POST', '/api/memory/sync-task', {taskId: 't1', timestamp: '2026-01-01T00:00:00Z', type: 'x', success: true})
    expect(answer.body.workerId).toBe('gemini')
    await first.close()

    const second = await startServer({host: '127.0.0.1', port: 0, dataDir, logLevel: 'silent', env: {}})
    cleanup.add(() => second.close())
    expect(second).toMatchObject({tokensGenerated: false, tokens: first.tokens, tokenSource: 'data-dir'})
  })

  it('does not print tokens that came from the operator, and takes JARVIS_SERVER_TOKENS', async () => {
    const dataDir = cleanup.dir(await tempDir())
    const server = await startServer({host: '127.0.0.1', port: 0, dataDir, logLevel: 'silent', env: {JARVIS_SERVER_TOKENS: '{"env-token-123": "claude"}'}})
    cleanup.add(() => server.close())
    expect(server).toMatchObject({tokens: null, tokenSource: 'env'})
    expect((await call(server.url, 'env-token-123', 'GET', '/api/memory/status')).status).toBe(200)
    await expect(stat(join(dataDir, 'tokens.json'))).rejects.toThrow()
  })

  it('fails with BadInputError for a bad tokens file or a port in use, and leaves nothing running', async () => {
    const h = await harness(cleanup)
    const dataDir = cleanup.dir(await tempDir())
    await expect(startServer({port: 0, dataDir, logLevel: 'silent', tokensFile: join(dataDir, 'none.json')})).rejects.toBeInstanceOf(BadInputError)
    await expect(startServer({host: '127.0.0.1', port: h.server.port, dataDir, logLevel: 'silent', tokens: {'abcdefgh12': 'claude'}})).rejects.toThrow(
      /already in use/,
    )
  })

  it('a first start that fails keeps no tokens it never showed: the next start makes and shows them', async () => {
    const h = await harness(cleanup)
    const dataDir = cleanup.dir(await tempDir())
    await expect(startServer({host: '127.0.0.1', port: h.server.port, dataDir, logLevel: 'silent', env: {}})).rejects.toThrow(/already in use/)
    await expect(stat(join(dataDir, 'tokens.json'))).rejects.toThrow()
    const started = await startServer({host: '127.0.0.1', port: 0, dataDir, logLevel: 'silent', env: {}})
    cleanup.add(() => started.close())
    expect(started.tokensGenerated).toBe(true)
    expect(Object.keys(started.tokens ?? {}).length).toBeGreaterThan(0)
  })
})

describe('graceful close', () => {
  it('lets an in-flight push finish before close resolves, and refuses new requests meanwhile', async () => {
    const dataDir = cleanup.dir(await tempDir())
    const {byAgent} = makeTokens()
    const h = await startHarness({dataDir, tokensByAgent: byAgent})
    cleanup.add(() => h.stop())

    const body = JSON.stringify({files: {'inflight.md': 'x'.repeat(100_000)}})
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    async function* slowBody() {
      yield Buffer.from(body.slice(0, 10))
      await released
      yield Buffer.from(body.slice(10))
    }
    const events: string[] = []
    const inflight = request(`${h.server.url}/api/memory/push`, {
      method: 'POST',
      headers: {authorization: `Bearer ${byAgent.claude}`, 'content-type': 'application/json'},
      body: Readable.from(slowBody()),
    }).then(async (response) => {
      const text = await response.body.text()
      events.push('push answered')
      return {status: response.statusCode, body: JSON.parse(text)}
    })
    await delay(200)
    const closing = h.stop().then(() => events.push('closed'))
    await delay(200)
    expect(events).toEqual([])
    // a new request while closing is refused (new connections: refused; a kept-alive one would get 503)
    const late = await h.status().then((a) => a.status, (error: Error) => error.message)
    expect(late === 503 || /ECONNREFUSED|closed|other side/i.test(String(late)), String(late)).toBe(true)
    expect(events).toEqual([])
    release()
    const answer = await inflight
    await closing
    expect(answer.status).toBe(200)
    expect(answer.body.files['inflight.md'].rev).toBe(1)
    // close() waited for the push (it had not resolved while the body was still coming) and then resolved
    expect(events.sort()).toEqual(['closed', 'push answered'])
    // and a request that arrives now finds nobody listening
    await expect(h.status()).rejects.toThrow()

    const again = await startHarness({dataDir, tokensByAgent: byAgent})
    cleanup.add(() => again.stop())
    expect((await again.status()).body.files['inflight.md']).toMatchObject({rev: 1})
  })

  it('a client that asks for a WebSocket while the server closes is answered and cut, and close() finishes', async () => {
    // The close waits for this socket's close handshake, which it never answers: a window that stays open until the
    // test ends it, in which a reconnecting client knocks.
    const h = await harness(cleanup, {closeTimeoutMs: 60_000})
    const stubborn = await rawSocket(h.server.url)
    stubborn.socket.write(upgradeRequest(h.tokens.claude))
    await stubborn.until((bytes) => bytes.includes('\r\n\r\n'))
    expect(stubborn.text()).toMatch(/^HTTP\/1\.1 101/)
    const knock = await rawSocket(h.server.url)

    const closing = h.server.close()
    await stubborn.until((bytes) => frameOpcodes(bytes.subarray(bytes.indexOf('\r\n\r\n') + 4)).includes(CLOSE_OPCODE))
    knock.socket.write(upgradeRequest('not-a-token'))
    await knock.until((bytes) => bytes.includes('\r\n\r\n'))
    expect(knock.text()).toMatch(/^HTTP\/1\.1 503/)
    // Nobody else would end the knock's connection: the server must, or its close never finishes.
    await knock.ended
    stubborn.socket.destroy()
    await closing
  })

  it('closes WebSocket clients with 1001 and is idempotent', async () => {
    const h = await harness(cleanup)
    const client = await connectWs(h.server.wsUrl, h.tokens.claude)
    const first = h.server.close()
    expect(h.server.close()).toBe(first)
    await first
    expect(await client.closed).toMatchObject({code: 1001})
  })
})

const CLOSE_OPCODE = 0x8

interface RawConnection {
  socket: Socket
  /** Resolves once everything received so far satisfies `enough`. */
  until(enough: (bytes: Buffer) => boolean): Promise<void>
  text(): string
  /** Resolves when the server ends the connection. */
  ended: Promise<void>
}

/** A TCP connection to the server of `url` that keeps every byte it receives. */
async function rawSocket(url: string): Promise<RawConnection> {
  const {hostname, port} = new URL(url)
  const socket = connect(Number(port), hostname)
  cleanup.add(async () => socket.destroy())
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  let bytes = Buffer.alloc(0)
  const waiters = new Set<() => void>()
  socket.on('data', (chunk: Buffer) => {
    bytes = Buffer.concat([bytes, chunk])
    for (const check of waiters) check()
  })
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  return {
    socket,
    ended,
    text: () => bytes.toString('latin1'),
    until: (enough) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!enough(bytes)) return
          waiters.delete(check)
          resolve()
        }
        waiters.add(check)
        check()
        void ended.then(() => reject(new Error(`the connection closed after: ${JSON.stringify(bytes.toString('latin1'))}`)))
      }),
  }
}

function upgradeRequest(token: string): string {
  const key = Buffer.from('sixteen byte key').toString('base64')
  return `GET /ws/memory HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\nAuthorization: Bearer ${token}\r\n\r\n`
}

/** The opcodes of the whole (unmasked, server-sent) WebSocket frames in `bytes`. */
function frameOpcodes(bytes: Buffer): number[] {
  const opcodes: number[] = []
  let at = 0
  while (at + 2 <= bytes.length) {
    let length = bytes[at + 1] & 0x7f
    let header = 2
    if (length === 126) {
      if (at + 4 > bytes.length) break
      length = bytes.readUInt16BE(at + 2)
      header = 4
    } else if (length === 127) {
      if (at + 10 > bytes.length) break
      length = Number(bytes.readBigUInt64BE(at + 2))
      header = 10
    }
    if (at + header + length > bytes.length) break
    opcodes.push(bytes[at] & 0x0f)
    at += header + length
  }
  return opcodes
}
