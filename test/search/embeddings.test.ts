/**
 * The embeddings path against a real OpenAI-compatible endpoint on 127.0.0.1 (node:http). Its vectors are a
 * bag of words over a tiny vocabulary where synonyms share a dimension — enough to test our client, the vector
 * storage, invalidation and the fusion, not a claim of semantic quality.
 */
import {createServer, type IncomingMessage, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {readdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {embeddingsEndpoint, type EmbeddingsConfig, KEYWORD_WEIGHT, resetSearchCache, searchMemory} from '../../src/search/index.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {corpusFiles, writeCorpus} from './corpus.js'

const VOCAB: string[][] = [
  ['postgres', 'database', 'datastore', 'sql', 'replica', 'replication'],
  ['redis', 'cache', 'caching'],
  ['kubernetes', 'pod', 'pods', 'cluster', 'helm'],
  ['ssh', 'runner_exec', 'bastion', 'shell'],
  ['email', 'mail', 'dkim', 'spam', 'inbox'],
  ['bug', 'crash', 'failure', 'broken', 'fails'],
  ['decision', 'decided', 'chose', 'choose'],
  ['billing', 'stripe', 'invoice', 'money', 'payment'],
]

function bagOfWords(text: string): number[] {
  const vector = VOCAB.map(() => 0)
  for (const word of text.toLowerCase().split(/[^a-z0-9_]+/)) {
    const dim = VOCAB.findIndex((group) => group.includes(word))
    if (dim >= 0) vector[dim]++
  }
  vector.push(0.01) // never the zero vector
  return vector
}

interface Provider {
  url: string
  inputs: number
  requests: number
  models: string[]
  authorization: Array<string | undefined>
  close(): Promise<void>
}

async function body(req: IncomingMessage): Promise<string> {
  let text = ''
  for await (const chunk of req) text += chunk
  return text
}

async function startProvider(): Promise<Provider> {
  const state = {inputs: 0, requests: 0, models: [] as string[], authorization: [] as Array<string | undefined>}
  const server: Server = createServer(async (req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
      res.writeHead(404).end()
      return
    }
    const {model, input} = JSON.parse(await body(req)) as {model: string; input: string | string[]}
    const inputs = Array.isArray(input) ? input : [input]
    state.requests++
    state.inputs += inputs.length
    state.models.push(model)
    state.authorization.push(req.headers.authorization)
    // Answer out of order, as a server may: the client must use `index`.
    const data = inputs.map((text, index) => ({object: 'embedding', index, embedding: bagOfWords(text)})).reverse()
    res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify({object: 'list', model, data}))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const {port} = server.address() as AddressInfo
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  })
}

const dirs: string[] = []
let provider: Provider
beforeAll(async () => {
  provider = await startProvider()
})
afterAll(async () => {
  await provider.close()
  await removeAll(dirs)
})

async function tree(): Promise<string> {
  const dir = await tempDir('jarvis-embed-')
  dirs.push(dir)
  const {root} = await initTree(dir, {})
  await writeCorpus(join(root, '.memory'), corpusFiles())
  return root
}

describe('embeddings-first search', () => {
  it('resolves the endpoint from a base URL, a /v1 URL or the full path', () => {
    expect(embeddingsEndpoint('http://127.0.0.1:11434')).toBe('http://127.0.0.1:11434/v1/embeddings')
    expect(embeddingsEndpoint('https://api.openai.com/v1/')).toBe('https://api.openai.com/v1/embeddings')
    expect(embeddingsEndpoint('http://h:1234/v1/embeddings')).toBe('http://h:1234/v1/embeddings')
  })

  it('embeds every file once in batches, stores the vectors with the model, re-embeds only what changed', async () => {
    const root = await tree()
    const config: EmbeddingsConfig = {url: provider.url, model: 'bow-a', key: 'test-key', batchSize: 50}
    const before = provider.requests
    const first = await searchMemory(root, 'database failure', {embeddings: config, limit: 5})
    expect(first.mode).toBe('hybrid')
    expect(first.note).toBeUndefined()
    expect(first.stats.embedded).toBe(220)
    expect(provider.requests - before).toBe(Math.ceil(220 / 50) + 1) // 5 batches + the query
    expect(provider.authorization.at(-1)).toBe('Bearer test-key')
    const stored = (await readdir(join(root, '.nexus', 'search'))).filter((n) => n.startsWith('vectors-'))
    expect(stored).toHaveLength(1)
    expect(stored[0]).toMatch(/^vectors-bow-a-/)

    resetSearchCache() // a new process: vectors come from .nexus/, nothing is embedded again
    expect((await searchMemory(root, 'database failure', {embeddings: config})).stats.embedded).toBe(0)

    await writeFile(join(root, '.memory', 'configs/redis.md'), '# Redis configuration\n\nmaxmemory raised to 8gb.\n')
    const afterEdit = await searchMemory(root, 'cache', {embeddings: config})
    expect(afterEdit.stats).toMatchObject({indexed: 1, embedded: 1})

    const inputsBefore = provider.inputs
    const otherModel = await searchMemory(root, 'cache', {embeddings: {...config, model: 'bow-b'}})
    expect(otherModel.stats.embedded).toBe(220)
    expect(provider.inputs - inputsBefore).toBe(221)
    expect(provider.models.at(-1)).toBe('bow-b')
    // …and the first model's vectors are still there and still current.
    expect((await searchMemory(root, 'cache', {embeddings: config})).stats.embedded).toBe(0)
  })

  it('fuses the vector ranking with the keyword ranking: a synonym finds what keywords cannot', async () => {
    const root = await tree()
    const config: EmbeddingsConfig = {url: provider.url, model: 'bow-a'}
    // "datastore" appears in no file; the provider puts it on the postgres dimension.
    const keywordOnly = await searchMemory(root, 'datastore', {embeddings: false})
    expect(keywordOnly.hits).toEqual([])
    const hybrid = await searchMemory(root, 'datastore', {embeddings: config, limit: 5})
    expect(hybrid.mode).toBe('hybrid')
    expect(hybrid.hits.length).toBe(5)
    const files = corpusFiles()
    for (const hit of hybrid.hits) expect(bagOfWords(files.get(hit.path)!)[0], hit.path).toBeGreaterThan(0)
    expect(hybrid.hits[0].snippet.length).toBe(1) // no matched term: the first prose line

    // The keyword ranking weighs most: the best hybrid hit is one of the best keyword hits, scored at least the
    // keyword weight (the best keyword score counts as 1) and at most 1.
    const both = await searchMemory(root, 'stripe invoice', {embeddings: config, limit: 3})
    const kw = await searchMemory(root, 'stripe invoice', {embeddings: false, limit: 3})
    expect(both.model).toBe('bow-a')
    expect(both.hits[0].score).toBeGreaterThanOrEqual(KEYWORD_WEIGHT)
    expect(both.hits[0].score).toBeLessThanOrEqual(1)
    expect(kw.hits.map((h) => h.path)).toContain(both.hits[0].path)
    // Filters apply to the vector ranking too.
    const filtered = await searchMemory(root, 'datastore', {embeddings: config, prefix: 'bugs/'})
    expect(filtered.hits.every((h) => h.path.startsWith('bugs/'))).toBe(true)
  })

  it('falls back to keyword results with a note when the provider is down or answers nonsense', async () => {
    const root = await tree()
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const down = await searchMemory(root, 'pgbouncer', {embeddings: {url: `http://127.0.0.1:${port}`, model: 'bow-a', timeoutMs: 2000}})
    expect(down.mode).toBe('keyword')
    expect(down.note).toMatch(/^keyword search only: the embeddings provider failed \(http:\/\/127\.0\.0\.1:\d+\/v1\/embeddings: ECONNREFUSED\)$/)
    expect(down.hits[0].path).toBe('decisions/postgres/run-pgbouncer-in-transaction-pooling-mode.md')
    const wrongPath = await searchMemory(root, 'pgbouncer', {embeddings: {url: `${provider.url}/nope/embeddings`, model: 'bow-a'}})
    expect(wrongPath.mode).toBe('keyword')
    expect(wrongPath.note).toMatch(/answered 404/)
  })
})

describe('a provider that hangs', () => {
  it('times out and falls back to keyword results', async () => {
    const hanging = createServer(() => {}) // never answers
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve))
    try {
      const root = await tree()
      const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`
      const result = await searchMemory(root, 'pgbouncer', {embeddings: {url, model: 'bow-a', timeoutMs: 300}})
      expect(result.mode).toBe('keyword')
      expect(result.note).toMatch(/no answer within 300 ms/)
    } finally {
      hanging.closeAllConnections()
      await new Promise<void>((resolve) => hanging.close(() => resolve()))
    }
  })
})
