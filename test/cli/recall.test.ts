import {writeFile} from 'node:fs/promises'
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import type {RecallResult} from '../../src/ops/index.js'
import {initTree} from '../../src/store/index.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {writeCorpus, corpusFiles} from '../search/corpus.js'
import {cleanEnv} from './memory-helpers.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

async function tree(): Promise<string> {
  const dir = await tempDir('jarvis-recall-')
  dirs.push(dir)
  const {root} = await initTree(dir, {})
  await writeCorpus(join(root, '.memory'), corpusFiles())
  return root
}

describe('jarvis recall', () => {
  it('prints the [MEMORY CONTEXT] block on stdout, ranked by keywords and meaning with nothing configured, and no note', async () => {
    const cwd = await tree()
    const run = await runJarvis(['recall', 'runner_exec auth failures'], {cwd, env: cleanEnv(cwd)})
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout.trimEnd().split('\n')
    expect(lines[0]).toBe('[MEMORY CONTEXT]')
    expect(lines).toHaveLength(7)
    expect(lines[1]).toBe('- bugs/ssh/runner-exec-auth-failures-after-the-key-rotation.md')
    expect(lines[2]).toBe('  Summary: “Symptom: runner_exec auth failures after the key rotation.”')
    expect(run.stderr.trim()).toBe('')
  })

  it('shows each file by the line that answers the query, not by its first line', async () => {
    const cwd = await tree()
    const body = ['# Staging', '', 'The staging database password rotates monthly.', 'The staging deploy runs every night at 18:00 UTC.', ''].join('\n')
    await writeFile(join(cwd, '.memory', 'staging.md'), body)
    const run = await runJarvis(['recall', 'when does the staging deploy run'], {cwd, env: cleanEnv(cwd)})
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout.split('\n')
    const at = lines.indexOf('- staging.md')
    expect(at, run.stdout).toBeGreaterThan(0)
    expect(lines[at + 1]).toBe('  Summary: “The staging deploy runs every night at 18:00 UTC.”')
  })

  it('is keyword-only with JARVIS_EMBEDDINGS=off, and says so on stderr', async () => {
    const cwd = await tree()
    const run = await runJarvis(['recall', 'runner_exec auth failures'], {cwd, env: cleanEnv(cwd, {JARVIS_EMBEDDINGS: 'off'})})
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout.split('\n')[1]).toBe('- bugs/ssh/runner-exec-auth-failures-after-the-key-rotation.md')
    expect(run.stderr.trim()).toBe('jarvis: keyword search only: JARVIS_EMBEDDINGS=off')
  })

  it('--json gives the block, the hits with snippets, the mode and its model; filters apply', async () => {
    const cwd = await tree()
    const run = await runJarvis(['recall', 'postgres', '--limit', '5', '--prefix', 'bugs/', '--tag', 'database', '--json'], {cwd, env: cleanEnv(cwd)})
    expect(run.code, run.stderr).toBe(0)
    const {result} = envelope<RecallResult>(run)
    expect(result!.mode).toBe('hybrid')
    expect(result!.model).toBe('jarvis-static-use-v1')
    expect(result!.note).toBeUndefined()
    expect(result!.hits.length).toBeGreaterThan(0)
    expect(result!.hits.length).toBeLessThanOrEqual(5)
    for (const hit of result!.hits) {
      expect(hit.path.startsWith('bugs/')).toBe(true)
      expect(hit.snippet[0].line).toBeGreaterThan(0)
    }
    expect(result!.block.split('\n')[0]).toBe('[MEMORY CONTEXT]')
  })

  it('falls back to keywords when the configured provider is down, and refuses a bad limit with exit 2', async () => {
    const cwd = await tree()
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const run = await runJarvis(['recall', 'pgbouncer', '--json'], {cwd, env: cleanEnv(cwd, {JARVIS_EMBEDDINGS_URL: url, JARVIS_EMBEDDINGS_MODEL: 'nomic-embed-text'})})
    expect(run.code, run.stderr).toBe(0)
    const {result} = envelope<RecallResult>(run)
    expect(result!.mode).toBe('keyword')
    expect(result!.note).toMatch(/embeddings provider failed .*ECONNREFUSED/)
    expect(result!.hits[0].path).toBe('decisions/postgres/run-pgbouncer-in-transaction-pooling-mode.md')

    const bad = await runJarvis(['recall', 'x', '--limit', '50', '--json'], {cwd, env: cleanEnv(cwd)})
    expect(bad.code).toBe(2)
  })
})

describe('recall and memory search agree on what cannot be read', () => {
  it('server down: recall answers from the files (it never needs the server); search stops with exit 3 and points at recall', async () => {
    // A port that was just free: nothing listens there.
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const root = await tree()
    const env = cleanEnv(root, {JARVIS_SERVER: `http://127.0.0.1:${port}`, JARVIS_TOKEN: 'not-needed-by-recall'})
    const recalled = await runJarvis(['recall', 'pgbouncer', '--dir', root], {env})
    expect(recalled.code, recalled.stderr).toBe(0)
    expect(recalled.stdout.split('\n')[0]).toBe('[MEMORY CONTEXT]')
    const searched = await runJarvis(['memory', 'search', 'pgbouncer', '--dir', root, '--json'], {env})
    expect(searched.code).toBe(3)
    expect(envelope(searched).error!.message).toContain('the memory files of this tree alone: jarvis recall "pgbouncer"')
  })
})
