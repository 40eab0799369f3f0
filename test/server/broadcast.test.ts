/**
 * The fan-out on /ws/memory under a burst: the messages waiting for a socket go to it in one write, the same bytes
 * for the sockets that wait for the same messages (broadcast.ts), and still every client hears every change once, as
 * a message of its own, in the same order as every other client of its process — and an audit entry only its
 * agent's clients. On PostgreSQL, the same through two processes on one database (what one sends, the other relays).
 */
import {afterEach, describe, expect, it} from 'vitest'

import {BACKENDS, useBackend} from '../helpers/backends.js'
import {until} from '../helpers/world.js'
import {Cleanup, connectWs, harness, type Harness, tempDir, type WsClient} from './helpers.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

type Agent = 'claude' | 'gemini'

/** Pushes a new file per path, at once, each through the given process as the given agent. */
async function burst(pushes: {via: Harness; agent: Agent; path: string}[]): Promise<void> {
  const answers = await Promise.all(pushes.map(({via, agent, path}) => via.push({[path]: `# ${path}\n`}, {[path]: null}, undefined, agent)))
  expect(answers.map((answer) => answer.status)).toEqual(pushes.map(() => 200))
}

const updates = (client: WsClient) => client.messages.filter((m) => m.type === 'MEM_UPDATE').map((m) => `${m.path}@${m.rev}`)
const audits = (client: WsClient) => client.messages.filter((m) => m.type === 'AUDIT_APPENDED' && m.kind === 'push').map((m) => m.agent as string)

describe.each(BACKENDS)('/ws/memory under a burst of pushes (%s)', (backend) => {
  useBackend(backend)

  it('every client hears every change once, each its own message, all in one order; an audit entry only its agent\'s clients', async () => {
    const h = await harness(cleanup)
    const agents: Agent[] = ['claude', 'gemini', 'claude']
    const clients = await Promise.all(agents.map((agent) => connectWs(h.server.wsUrl, h.tokens[agent])))
    for (const client of clients) cleanup.add(() => client.close())
    const pushes = Array.from({length: 40}, (_, i) => ({via: h, agent: (i % 4 === 0 ? 'gemini' : 'claude') as Agent, path: `burst/file-${i}.md`}))
    await burst(pushes)
    const own = (agent: Agent) => pushes.filter((push) => push.agent === agent).length
    await until('every client to hear every push and its own agent\'s audit entries', () =>
      clients.every((client, n) => updates(client).length >= pushes.length && audits(client).length >= own(agents[n])) ? true : undefined,
    )
    const heard = clients.map(updates)
    expect([...heard[0]].sort()).toEqual(pushes.map(({path}) => `${path}@1`).sort())
    expect(heard[1]).toEqual(heard[0])
    expect(heard[2]).toEqual(heard[0])
    clients.forEach((client, n) => expect(audits(client)).toEqual(Array.from({length: own(agents[n])}, () => agents[n])))
  })

  if (backend === 'postgres') {
    it('through two processes on one database: every client of each hears every change once, its own agent\'s audit entries only', async () => {
      const dataDir = cleanup.dir(await tempDir('jarvis-broadcast-'))
      const one = await harness(cleanup, {dataDir})
      const two = await harness(cleanup, {dataDir, tokensByAgent: one.tokens})
      const placed: {via: Harness; agent: Agent}[] = [
        {via: one, agent: 'claude'},
        {via: one, agent: 'gemini'},
        {via: two, agent: 'claude'},
        {via: two, agent: 'claude'},
        {via: two, agent: 'gemini'},
      ]
      const clients = await Promise.all(placed.map(({via, agent}) => connectWs(via.server.wsUrl, via.tokens[agent])))
      for (const client of clients) cleanup.add(() => client.close())
      const pushes = Array.from({length: 40}, (_, i) => ({via: i % 2 === 0 ? one : two, agent: (i % 3 === 0 ? 'gemini' : 'claude') as Agent, path: `burst/file-${i}.md`}))
      await burst(pushes)
      const own = (agent: Agent) => pushes.filter((push) => push.agent === agent).length
      await until('every client to hear every push and its own agent\'s audit entries', () =>
        clients.every((client, n) => updates(client).length >= pushes.length && audits(client).length >= own(placed[n].agent)) ? true : undefined,
      )
      const all = pushes.map(({path}) => `${path}@1`).sort()
      for (const client of clients) expect([...updates(client)].sort()).toEqual(all)
      // The clients of one process hear its messages in one order.
      expect(updates(clients[1])).toEqual(updates(clients[0]))
      expect(updates(clients[3])).toEqual(updates(clients[2]))
      expect(updates(clients[4])).toEqual(updates(clients[2]))
      clients.forEach((client, n) => expect(audits(client)).toEqual(Array.from({length: own(placed[n].agent)}, () => placed[n].agent)))
    })
  }
})
