import {readdir, readFile} from 'node:fs/promises'
import {join, relative} from 'node:path'
import fc from 'fast-check'
import {afterAll, describe, expect, it} from 'vitest'

import {isBackupName} from '../../src/store/index.js'
import {AGENTS, makeClient, removeAll, startTestServer, tempDir, type TestClient, type TestServer} from '../helpers/world.js'

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

async function walk(dir: string, root = dir): Promise<string[]> {
  const entries = await readdir(dir, {withFileTypes: true}).catch(() => [])
  const files: string[] = []
  for (const entry of entries) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) files.push(...(await walk(path, root)))
    else files.push(relative(root, path))
  }
  return files
}

async function treeOf(client: TestClient): Promise<Record<string, string>> {
  const tree: Record<string, string> = {}
  for (const path of await walk(client.memory)) {
    if (!isBackupName(path.split('/').pop()!)) tree[path] = await readFile(join(client.memory, path), 'utf8')
  }
  return tree
}

async function backupsOf(client: TestClient): Promise<string> {
  const all = await walk(client.memory)
  const texts = await Promise.all(all.filter((p) => isBackupName(p.split('/').pop()!)).map((p) => readFile(join(client.memory, p), 'utf8')))
  return texts.join('\n')
}

/** Every edit adds one unique marker: a line in Markdown, a key in JSON. Nothing else is ever removed. */
function applyEdit(file: string, current: string | null, marker: string, position: number): string {
  if (file.endsWith('.json')) {
    const value = current ? JSON.parse(current) : {}
    return `${JSON.stringify({...value, [marker]: position}, null, 2)}\n`
  }
  const lines = current ? current.replace(/\n$/, '').split('\n') : ['# memory']
  lines.splice(Math.min(position, lines.length), 0, marker)
  return `${lines.join('\n')}\n`
}

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
