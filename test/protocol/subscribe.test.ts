import {createHash} from 'node:crypto'
import {createServer, type Server, type Socket} from 'node:net'

import {afterEach, describe, expect, it} from 'vitest'

import {MemoryClient} from '../../src/protocol/client.js'
import {parseWsMessage, subscribe, wsUrlFor, type SubscribeOptions, type Subscription, type SubscriptionEvent} from '../../src/protocol/subscribe.js'
import type {WsMessage} from '../../src/schemas/index.js'
import {removeAll, startTestServer, TOKENS, type TestServer} from '../helpers/world.js'

/** Polls until `probe` returns a value: an overall deadline for the test, not a timed assertion. */
async function until<T>(what: string, probe: () => T | undefined | null, deadlineMs = 20_000): Promise<T> {
  const end = Date.now() + deadlineMs
  for (;;) {
    const value = probe()
    if (value !== undefined && value !== null) return value
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Listening {
  subscription: Subscription
  messages: WsMessage[]
  events: SubscriptionEvent[]
}

/**
 * A TCP server on 127.0.0.1 that counts connections; with `handshake` it completes the WebSocket upgrade and then
 * says nothing ever again (a peer that looks open but is gone), without it it never answers at all.
 */
async function silentPeer(handshake: boolean): Promise<{url: string; connections: () => number; close(): Promise<void>}> {
  const sockets = new Set<Socket>()
  let connections = 0
  const server: Server = createServer((socket) => {
    connections++
    sockets.add(socket)
    socket.on('error', () => {})
    if (!handshake) return
    let head = ''
    socket.on('data', (chunk) => {
      if (head.includes('\r\n\r\n')) return
      head += chunk.toString('latin1')
      const key = /sec-websocket-key:\s*(\S+)/i.exec(head)?.[1]
      if (!head.includes('\r\n\r\n') || !key) return
      const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64')
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const {port} = server.address() as {port: number}
  return {
    url: `ws://127.0.0.1:${port}/ws/memory`,
    connections: () => connections,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe('protocol/subscribe: the /ws/memory subscription', () => {
  const cleanups: (() => Promise<unknown>)[] = []
  const dirs: string[] = []

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    await removeAll(dirs.splice(0))
  })

  async function server(dataDir?: string, port = 0): Promise<TestServer> {
    const started = await startTestServer(dataDir, port)
    if (!dataDir) dirs.push(started.dataDir)
    cleanups.push(() => started.close())
    return started
  }

  function listen(options: SubscribeOptions): Listening {
    const listening: Listening = {messages: [], events: [], subscription: undefined as unknown as Subscription}
    listening.subscription = subscribe({
      ...options,
      onMessage: (message) => listening.messages.push(message),
      onEvent: (event) => listening.events.push(event),
    })
    cleanups.push(() => listening.subscription.close())
    return listening
  }

  it('connects with the token and hands on MEM_UPDATE and STATE_CHANGED, not HELLO or PONG', async () => {
    const srv = await server()
    const sub = listen({url: wsUrlFor(srv.url), token: TOKENS.claude, heartbeatMs: 50})
    await sub.subscription.settled
    expect(sub.subscription.connected()).toBe(true)
    expect(sub.events).toEqual([{type: 'connected', reconnect: false, partitioned: false}])

    const client = new MemoryClient({server: srv.url, token: TOKENS.gemini})
    const pushed = await client.push({'notes/one.md': 'one\n'})
    const update = await until('the MEM_UPDATE', () => sub.messages.find((m) => m.type === 'MEM_UPDATE'))
    expect(update).toMatchObject({type: 'MEM_UPDATE', path: 'notes/one.md', rev: pushed.files?.['notes/one.md']?.rev, author: 'gemini'})

    await client.switchProject('apollo')
    const changed = await until('the STATE_CHANGED', () => sub.messages.find((m) => m.type === 'STATE_CHANGED'))
    expect(changed).toMatchObject({type: 'STATE_CHANGED', projectId: 'apollo'})

    // HELLO came on connect and PONGs answer the 50 ms heartbeat; neither is a message to act on.
    await sleep(200)
    expect(new Set(sub.messages.map((m) => m.type))).toEqual(new Set(['MEM_UPDATE', 'STATE_CHANGED']))
    await client.close()
  })

  it('a wrong token is refused: it never connects and reports no event', async () => {
    const srv = await server()
    const sub = listen({url: wsUrlFor(srv.url), token: 'not-a-token', reconnectInitialMs: 20, reconnectMaxMs: 50})
    await sub.subscription.settled
    expect(sub.subscription.connected()).toBe(false)
    await sleep(300)
    expect(sub.subscription.connected()).toBe(false)
    expect(sub.events).toEqual([])
    await sub.subscription.close()
    expect(sub.subscription.connected()).toBe(false)
  })

  it('reconnects after the server restarts on the same port, and says so', async () => {
    const first = await server()
    const {dataDir, port, url} = first
    const sub = listen({url: wsUrlFor(url), token: TOKENS.claude, reconnectInitialMs: 20, reconnectMaxMs: 100})
    await sub.subscription.settled
    expect(sub.subscription.connected()).toBe(true)

    await first.close()
    const lost = await until('the disconnect', () => sub.events.find((e) => e.type === 'disconnected'))
    expect(lost).toMatchObject({type: 'disconnected', code: 1001})
    expect(sub.subscription.connected()).toBe(false)

    await server(dataDir, port)
    const back = await until('the reconnect', () => sub.events.find((e) => e.type === 'connected' && e.reconnect))
    expect(back).toEqual({type: 'connected', reconnect: true, partitioned: false})
    expect(sub.subscription.connected()).toBe(true)
    expect(sub.events.filter((e) => e.type === 'disconnected')).toHaveLength(1)
  })

  it('the heartbeat keeps a quiet but live server from being declared partitioned', async () => {
    const srv = await server()
    // After HELLO the server says nothing unless asked: only the PONGs keep the silence under 1.5 s. (300 ms was
    // flaky: a loaded machine can stall the server's event loop, which shares this process, for that long.)
    const sub = listen({url: wsUrlFor(srv.url), token: TOKENS.claude, heartbeatMs: 50, partitionMs: 1500})
    await sub.subscription.settled
    await sleep(2500)
    expect(sub.events).toEqual([{type: 'connected', reconnect: false, partitioned: false}])
    expect(sub.subscription.connected()).toBe(true)
  })

  it('a peer that never completes the handshake is declared partitioned while not connected', async () => {
    const peer = await silentPeer(false)
    cleanups.push(() => peer.close())
    const sub = listen({url: peer.url, heartbeatMs: 50, partitionMs: 300, reconnectInitialMs: 20, reconnectMaxMs: 50})
    const partition = await until('the partition', () => sub.events.find((e) => e.type === 'partition'))
    expect(partition).toMatchObject({type: 'partition', connected: false})
    expect((partition as {silentMs: number}).silentMs).toBeGreaterThan(300)
    await sub.subscription.settled
    expect(sub.subscription.connected()).toBe(false)
  })

  it('an open socket that goes silent is declared partitioned, dropped and dialled again; the next open says so', async () => {
    const peer = await silentPeer(true)
    cleanups.push(() => peer.close())
    const sub = listen({url: peer.url, heartbeatMs: 50, partitionMs: 300, reconnectInitialMs: 20, reconnectMaxMs: 50})
    await sub.subscription.settled
    expect(sub.subscription.connected()).toBe(true)
    const partition = await until('the partition', () => sub.events.find((e) => e.type === 'partition'))
    expect(partition).toMatchObject({type: 'partition', connected: true})
    const again = await until('the next open', () => sub.events.find((e) => e.type === 'connected' && e.reconnect))
    expect(again).toEqual({type: 'connected', reconnect: true, partitioned: true})
    expect(peer.connections()).toBeGreaterThanOrEqual(2)
    // The dropped socket was abandoned, not lost: it produces no `disconnected`.
    expect(sub.events.filter((e) => e.type === 'disconnected')).toEqual([])
  })

  it('close() is idempotent and silences every callback', async () => {
    const srv = await server()
    const sub = listen({url: wsUrlFor(srv.url), token: TOKENS.claude})
    await sub.subscription.settled
    const closing = sub.subscription.close()
    expect(sub.subscription.close()).toBe(closing)
    await closing
    expect(sub.subscription.connected()).toBe(false)
    const seen = sub.events.length
    const client = new MemoryClient({server: srv.url, token: TOKENS.gemini})
    await client.push({'after-close.md': 'x\n'})
    await client.close()
    await sleep(200)
    expect(sub.messages).toEqual([])
    expect(sub.events).toHaveLength(seen)
  })
})

describe('protocol/subscribe: parseWsMessage', () => {
  it('keeps MEM_UPDATE and STATE_CHANGED with their fields, text or binary', () => {
    const update = {type: 'MEM_UPDATE', path: 'a/b.md', rev: 3, author: 'claude', seq: 9, updatedAt: '2025-01-01T00:00:00.000Z', hash: 'x'}
    expect(parseWsMessage(JSON.stringify(update))).toEqual(update)
    const bytes = new TextEncoder().encode(JSON.stringify({type: 'STATE_CHANGED', projectId: 'p'}))
    expect(parseWsMessage(bytes.buffer as ArrayBuffer)).toEqual({type: 'STATE_CHANGED', projectId: 'p'})
  })

  it('ignores what is not JSON and types it does not act on', () => {
    expect(parseWsMessage('not json')).toBeUndefined()
    expect(parseWsMessage('null')).toBeUndefined()
    expect(parseWsMessage('[1]')).toBeUndefined()
    expect(parseWsMessage(JSON.stringify({type: 'HELLO', agentId: 'claude', seq: 1, serverTime: '2025-01-01T00:00:00.000Z'}))).toBeUndefined()
    expect(parseWsMessage(JSON.stringify({type: 'PONG', serverTime: '2025-01-01T00:00:00.000Z'}))).toBeUndefined()
    expect(parseWsMessage(JSON.stringify({type: 'SOMETHING_NEW', path: 'a.md'}))).toBeUndefined()
  })

  it('keeps a known type whose fields are out of shape, without them: it is still a reason to sync', () => {
    expect(parseWsMessage(JSON.stringify({type: 'MEM_UPDATE', path: '../escape.md', rev: 2}))).toEqual({type: 'MEM_UPDATE'})
    expect(parseWsMessage(JSON.stringify({type: 'MEM_UPDATE', path: 'ok.md', rev: 'two'}))).toEqual({type: 'MEM_UPDATE'})
    expect(parseWsMessage(JSON.stringify({type: 'STATE_CHANGED', projectId: 42}))).toEqual({type: 'STATE_CHANGED'})
  })
})
