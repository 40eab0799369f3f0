/**
 * The fan-out on /ws/memory under a burst: the frames of one turn of the event loop go to each socket together
 * (broadcast.ts), and still every client hears every change once, as a message of its own, in the same order as
 * every other client.
 */
import {afterEach, describe, expect, it} from 'vitest'

import {until} from '../helpers/world.js'
import {Cleanup, connectWs, harness} from './helpers.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

describe('/ws/memory under a burst of pushes', () => {
  it('every client hears every change once, each its own message, all in one order', async () => {
    const h = await harness(cleanup)
    const clients = await Promise.all([h.tokens.claude, h.tokens.gemini, h.tokens.claude].map((token) => connectWs(h.server.wsUrl, token)))
    for (const client of clients) cleanup.add(() => client.close())
    const paths = Array.from({length: 40}, (_, i) => `burst/file-${i}.md`)
    const pushes = await Promise.all(paths.map((path) => h.call('POST', '/api/memory/push', {files: {[path]: `# ${path}\n`}, base: {[path]: null}})))
    expect(pushes.map((push) => push.status)).toEqual(paths.map(() => 200))
    const updates = (client: (typeof clients)[number]) => client.messages.filter((m) => m.type === 'MEM_UPDATE')
    await until('every client to hear every push', () => (clients.every((client) => updates(client).length >= paths.length) ? true : undefined))
    const heard = clients.map((client) => client.messages.filter((m) => m.type === 'MEM_UPDATE').map((m) => `${m.path}@${m.rev}`))
    expect([...heard[0]].sort()).toEqual(paths.map((path) => `${path}@1`).sort())
    expect(heard[1]).toEqual(heard[0])
    expect(heard[2]).toEqual(heard[0])
  })
})
