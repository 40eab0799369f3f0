import fc from 'fast-check'
import {afterAll, describe, expect, it} from 'vitest'

import {AGENTS, makeClient, removeAll, tokenMap, type TestClient} from '../helpers/world.js'
import {applyEdit, backupsOf, treeOf} from './trees.js'
import {type PushAnswer, startProtocolStandIn} from '../compat/protocol-stand-in.js'

/**
 * The randomized model test of timestamp mode (as test/sync/model.test.ts is for revisions): 2–3 clients make random
 * edits and sync in a random order against a server with only the protocol's fields, which takes every push as the
 * last writer and answers it in one of the ways such a server may. A sync may have another client's whole sync
 * happen inside it, right after the server handled one of its requests (its first status, push or pull):
 * the writes a server without revisions lets slip in between. After a final round every client holds the server's
 * tree, and every edit is in it or in a backup its client reported.
 *
 * Not modelled: a write landing between the last look before a push and the push itself. A server that takes a push
 * without a base cannot refuse it, so nothing a client does closes that window (docs/protocol.md).
 */

const FILES = ['PROJECT_MEMORY.md', 'projects.json']
const PUSH_ANSWERS: PushAnswer[] = ['timestamps', 'empty-object', 'no-body', 'success']
const ROUTES = {status: 'GET /api/memory/status', push: 'POST /api/memory/push', pull: 'POST /api/memory/pull'} as const

type Op =
  | {kind: 'edit'; client: number; file: number; position: number}
  | {kind: 'sync'; client: number; inside?: {client: number; after: keyof typeof ROUTES}}

const op: fc.Arbitrary<Op> = fc.oneof(
  {weight: 5, arbitrary: fc.record({kind: fc.constant('edit' as const), client: fc.nat(2), file: fc.nat(FILES.length - 1), position: fc.nat(8)})},
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('sync' as const),
      client: fc.nat(2),
      inside: fc.option(fc.record({client: fc.nat(2), after: fc.constantFrom('status' as const, 'push' as const, 'pull' as const)}), {freq: 3, nil: undefined}),
    }),
  },
)

const cleanup: string[] = []
afterAll(async () => removeAll(cleanup))

describe('timestamp mode convergence model', () => {
  it('converges and loses no edit, whatever the order of edits and syncs and the writes that slip in between a sync’s requests', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({min: 2, max: 3}), fc.constantFrom(...PUSH_ANSWERS), fc.array(op, {minLength: 4, maxLength: 16}), async (clientCount, answer, ops) => {
        const standIn = await startProtocolStandIn(tokenMap)
        standIn.answers.push = answer
        const clients: TestClient[] = []
        for (let i = 0; i < clientCount; i++) clients.push(await makeClient(standIn.url, AGENTS[i]))
        cleanup.push(...clients.map((c) => c.root))
        const written: {client: number; marker: string}[] = []
        let counter = 0
        try {
          for (const step of ops) {
            const client = step.client % clientCount
            if (step.kind === 'edit') {
              const file = FILES[step.file]
              const marker = `m${counter++}c${client}`
              await clients[client].write(file, applyEdit(file, await clients[client].read(file), marker, step.position))
              written.push({client, marker})
              continue
            }
            const inside = step.inside && {client: step.inside.client % clientCount, route: ROUTES[step.inside.after]}
            if (inside && inside.client !== client) {
              standIn.hook = async (request, when) => {
                if (when !== 'after' || request.route !== inside.route) return
                standIn.hook = undefined
                await clients[inside.client].sync()
              }
            }
            try {
              await clients[client].sync()
            } finally {
              standIn.hook = undefined
            }
          }
          for (let round = 0; round < 2; round++) for (const client of clients) expect((await client.sync()).mode).toBe('timestamp')

          const trees = await Promise.all(clients.map(treeOf))
          const server = Object.fromEntries([...standIn.files].map(([path, file]) => [path, file.content]))
          for (const tree of trees) expect(tree).toEqual(server)
          const everything = Object.values(server).join('\n')
          for (const {client, marker} of written) {
            if (everything.includes(marker)) continue
            expect(await backupsOf(clients[client]), `edit ${marker} of client ${client} was lost`).toContain(marker)
          }
        } finally {
          await standIn.close()
        }
      }),
      {numRuns: process.env.CI ? 60 : 15},
    )
  }, 600_000)
})
