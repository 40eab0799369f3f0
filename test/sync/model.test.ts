import fc from 'fast-check'
import {afterAll, describe, expect, it} from 'vitest'

import {AGENTS, makeClient, removeAll, startTestServer, tempDir, type TestClient, type TestServer} from '../helpers/world.js'
import {applyEdit, backupsOf, treeOf} from './trees.js'

/**
 * The randomized model test of the sync (yjs applyRandomTests / automerge's two-peer loop, on real
 * trees and a real server): 2–5 clients make random edits to random files, sync in a random order,
 * the server restarts at random; after a final round every client holds the same tree as the server
 * and every edit a client ever synced is in it or in a backup that client reported.
 */

const FILES = ['PROJECT_MEMORY.md', 'notes/ideas.md', 'projects.json', 'context.json']

type Op =
  | {kind: 'edit'; client: number; file: number; position: number}
  | {kind: 'sync'; client: number}
  | {kind: 'restart'}

const op: fc.Arbitrary<Op> = fc.oneof(
  {weight: 5, arbitrary: fc.record({kind: fc.constant('edit' as const), client: fc.nat(4), file: fc.nat(FILES.length - 1), position: fc.nat(20)})},
  {weight: 4, arbitrary: fc.record({kind: fc.constant('sync' as const), client: fc.nat(4)})},
  {weight: 1, arbitrary: fc.record({kind: fc.constant('restart' as const)})},
)

const cleanup: string[] = []
afterAll(async () => removeAll(cleanup))

describe('sync convergence model', () => {
  it('converges and loses no synced edit, whatever the order of edits, syncs and server restarts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({min: 2, max: 5}), fc.array(op, {minLength: 5, maxLength: 25}), async (clientCount, ops) => {
        const dataDir = await tempDir('jarvis-model-')
        cleanup.push(dataDir)
        let server: TestServer = await startTestServer(dataDir)
        const clients: TestClient[] = []
        for (let i = 0; i < clientCount; i++) clients.push(await makeClient(server.url, AGENTS[i % AGENTS.length]))
        cleanup.push(...clients.map((c) => c.root))
        // Markers each client held when it synced: those must survive (a marker the user typed and
        // nobody synced yet is still on that client's disk at the end, which the final round syncs).
        const written: {client: number; marker: string}[] = []
        let counter = 0
        try {
          for (const step of ops) {
            if (step.kind === 'restart') {
              await server.close()
              server = await startTestServer(dataDir, server.port)
              continue
            }
            const client = clients[step.client % clientCount]
            if (step.kind === 'edit') {
              const file = FILES[step.file]
              const marker = `m${counter++}c${step.client % clientCount}`
              await client.write(file, applyEdit(file, await client.read(file), marker, step.position))
              written.push({client: step.client % clientCount, marker})
            } else {
              await client.sync()
            }
          }
          // The final rounds: everyone syncs until nothing moves (two rounds suffice for a star topology).
          for (let round = 0; round < 2; round++) for (const client of clients) await client.sync()

          const trees = await Promise.all(clients.map(treeOf))
          for (const tree of trees.slice(1)) expect(tree).toEqual(trees[0])
          const everything = Object.values(trees[0]).join('\n')
          for (const {client, marker} of written) {
            if (everything.includes(marker)) continue
            expect(await backupsOf(clients[client]), `edit ${marker} of client ${client} was lost`).toContain(marker)
          }
        } finally {
          await server.close()
        }
      }),
      {numRuns: process.env.CI ? 100 : 25},
    )
  }, 600_000)
})
