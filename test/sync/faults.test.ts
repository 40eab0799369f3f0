import {spawn} from 'node:child_process'
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'

import {isBackupName, writeConfig, readConfig} from '../../src/store/index.js'
import {envelope, jarvisBin, runJarvis} from '../helpers/cli.js'
import {makeClient, removeAll, startServerProcess, startTestServer, tempDir, TOKENS, type TestClient} from '../helpers/world.js'
import {BACKENDS, useBackend} from '../helpers/backends.js'

const cleanup: string[] = []
afterAll(async () => removeAll(cleanup))

const nodeArgs: string[] = []

async function client(url: string, agent: string): Promise<TestClient> {
  const made = await makeClient(url, agent)
  cleanup.push(made.root)
  return made
}

async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const entry of await readdir(dir, {recursive: true, withFileTypes: true})) {
    if (entry.isFile()) {
      const path = join(entry.parentPath ?? (entry as unknown as {path: string}).path, entry.name)
      out[path.slice(dir.length + 1)] = await readFile(path, 'utf8')
    }
  }
  return out
}

/** Everything a client holds that is not a backup, and everything in its backups, as one string each. */
async function holdings(c: TestClient): Promise<{files: Record<string, string>; backups: string}> {
  const all = await snapshot(c.memory)
  const files: Record<string, string> = {}
  let backups = ''
  for (const [path, text] of Object.entries(all)) {
    if (isBackupName(path.split('/').pop()!)) backups += `${text}\n`
    else files[path] = text
  }
  return {files, backups}
}

function addMarker(text: string | null, marker: string, at: number): string {
  const lines = (text ?? '# notes\n').replace(/\n$/, '').split('\n')
  lines.splice(Math.min(at, lines.length), 0, marker)
  return `${lines.join('\n')}\n`
}

describe('faults with real processes', () => {
  it('a `jarvis sync` process with the server stopped exits 3, names the server and changes nothing', async () => {
    const server = await startTestServer()
    cleanup.push(server.dataDir)
    const a = await client(server.url, 'claude')
    await a.write('x.md', 'x\n')
    await a.sync()
    await a.write('x.md', 'x, edited offline\n')
    await server.close()
    const before = await snapshot(a.root)
    const run = await runJarvis(['sync', '--json'], {cwd: a.root, env: {JARVIS_TOKEN: TOKENS.claude}})
    expect(run.code).toBe(3)
    const answer = envelope(run)
    expect(answer.error?.message).toContain(server.url)
    const after = await snapshot(a.root)
    // Only the append-only audit log may grow; every other file is byte-identical.
    for (const [path, text] of Object.entries(before)) if (!path.endsWith('audit.jsonl')) expect(after[path]).toBe(text)
  })

  it('client killed with SIGKILL at random points of a sync: the next sync converges and nothing is lost', async () => {
    const server = await startTestServer()
    cleanup.push(server.dataDir)
    const a = await client(server.url, 'claude')
    const b = await client(server.url, 'gemini')
    const FILES = 60
    for (let i = 0; i < FILES; i++) await a.write(`notes/n${i}.md`, `# note ${i}\n- start\n`)
    await a.sync()
    await b.sync()
    const markers: string[] = []
    const runs = process.env.CI ? 50 : 12
    let killedMidway = 0
    for (let run = 0; run < runs; run++) {
      // Both sides edit some files, some of them the same ones: pushes, pulls and merges all happen.
      for (let k = 0; k < 8; k++) {
        const i = (run * 7 + k * 5) % FILES
        const mine = `a-${run}-${k}`
        const theirs = `b-${run}-${k}`
        await a.write(`notes/n${i}.md`, addMarker(await a.read(`notes/n${i}.md`), mine, 1 + (k % 3)))
        markers.push(mine)
        if (k % 2 === 0) {
          await b.write(`notes/n${(i + 3) % FILES}.md`, addMarker(await b.read(`notes/n${(i + 3) % FILES}.md`), theirs, 2))
          markers.push(theirs)
        }
      }
      await b.sync()
      const child = spawn(process.execPath, [...nodeArgs, jarvisBin, 'sync', '--quiet'], {cwd: a.root, env: {...process.env, JARVIS_TOKEN: TOKENS.claude}, stdio: 'ignore'})
      const delay = Math.floor(Math.random() * (process.env.CI ? 900 : 2500))
      const exited = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL')
          resolve(false)
        }, delay)
        child.once('exit', () => {
          clearTimeout(timer)
          resolve(true)
        })
      })
      if (!exited) {
        killedMidway++
        await new Promise((resolve) => child.once('exit', resolve))
      }
    }
    // After the last kill: the next syncs pick up where it stopped (the dead holder's lock is recovered).
    await a.sync()
    await b.sync()
    await a.sync()
    const ha = await holdings(a)
    const hb = await holdings(b)
    expect(ha.files).toEqual(hb.files)
    const everything = Object.values(ha.files).join('\n')
    for (const marker of markers) {
      if (!everything.includes(marker)) expect(`${ha.backups}${hb.backups}`, `edit ${marker} was lost`).toContain(marker)
    }
    expect(killedMidway).toBeGreaterThan(0)
  }, 600_000)

  // The only fault here that the storage decides: what a killed server had acknowledged is there after its restart.
  describe.each(BACKENDS)('on %s', (backend) => {
    useBackend(backend)

    it('server killed with SIGKILL and restarted mid-sync: the next sync converges and nothing is lost', async () => {
      const dataDir = join(await tempDir('jarvis-kill-server-'), 'data')
      cleanup.push(join(dataDir, '..'))
      let server = await startServerProcess(dataDir)
      const a = await client(server.url, 'claude')
      const b = await client(server.url, 'gemini')
      const markers: string[] = []
      for (let run = 0; run < 8; run++) {
        for (let i = 0; i < 40; i++) {
          const marker = `r${run}-f${i}`
          await a.write(`bulk/f${i}.md`, addMarker(await a.read(`bulk/f${i}.md`), marker, 1))
          markers.push(marker)
        }
        const syncing = a.sync().then(
          () => 'done',
          (error: {exit?: number}) => `failed with ${error.exit}`,
        )
        await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 60)))
        await server.stop('SIGKILL')
        const outcome = await syncing
        expect(['done', 'failed with 3']).toContain(outcome)
        server = await startServerProcess(dataDir, server.port)
      }
      await a.sync()
      await b.sync()
      const ha = await holdings(a)
      const hb = await holdings(b)
      expect(hb.files).toEqual(ha.files)
      const everything = Object.values(hb.files).join('\n')
      // One writer: no edit may end in a backup either. Say which happened, should it ever fail.
      const audit = await readFile(join(a.root, '.nexus', 'audit.jsonl'), 'utf8').catch(() => '')
      const why = `backups on A: ${ha.backups.length} bytes; conflicts in A's audit log: ${audit.split('\n').filter((line) => /"type":"(conflict|backup)"/.test(line)).join('\n') || 'none'}`
      for (const marker of markers) expect(everything, `edit ${marker} was lost (${why})`).toContain(marker)
      expect(ha.backups, why).toBe('')
      await server.stop()
    }, 300_000)
  })

  it('a server that takes the connection and never answers: exit 3 after sync.requestTimeout, saying so', async () => {
    const silent = createServer(() => {}) // accepts, reads, never answers
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`
      const a = await client(url, 'claude')
      const config = await readConfig(a.root)
      await writeConfig(a.root, {...config, sync: {...config.sync, requestTimeout: 300}})
      const run = await runJarvis(['sync', '--json'], {cwd: a.root, env: {JARVIS_TOKEN: TOKENS.claude}})
      expect(run.code).toBe(3)
      const message = envelope(run).error!.message
      expect(message).toContain(`cannot reach the jarvis server at ${url}`)
      expect(message).toContain('no answer within 0.3 s')
      expect(message).toContain('sync.requestTimeout in .nexus/config.json')
    } finally {
      silent.closeAllConnections?.()
      await new Promise((resolve) => silent.close(resolve))
    }
  })

  it('two `jarvis sync` processes in one tree are serialised by the lock; a third that cannot wait exits 6 naming the holder', async () => {
    const server = await startTestServer()
    cleanup.push(server.dataDir)
    const a = await client(server.url, 'claude')
    for (let i = 0; i < 30; i++) await a.write(`n${i}.md`, `${i}\n`)
    const env = {JARVIS_TOKEN: TOKENS.claude}
    const [one, two] = await Promise.all([runJarvis(['sync', '--json'], {cwd: a.root, env}), runJarvis(['sync', '--json'], {cwd: a.root, env})])
    expect([one.code, two.code]).toEqual([0, 0])
    const pushed = [envelope<{pushed: string[]}>(one).result!.pushed, envelope<{pushed: string[]}>(two).result!.pushed]
    // Serialised: one process pushed all 30 files, the other found nothing left to do.
    expect(pushed.map((p) => p.length).sort((x, y) => x - y)).toEqual([0, 30])

    const config = await readConfig(a.root)
    await writeConfig(a.root, {...config, sync: {...config.sync, lockTimeout: 200}})
    const holder = spawn(process.execPath, ['--import', 'tsx', new URL('../store/helpers/lock-child.ts', import.meta.url).pathname, 'hold', a.root], {stdio: ['ignore', 'pipe', 'ignore']})
    await new Promise<void>((resolve) => holder.stdout!.once('data', () => resolve()))
    try {
      const blocked = await runJarvis(['sync', '--json'], {cwd: a.root, env})
      expect(blocked.code).toBe(6)
      expect(envelope(blocked).error?.message).toContain(String(holder.pid))
    } finally {
      holder.kill('SIGKILL')
    }
    await writeFile(join(a.memory, 'after.md'), 'after\n')
    const recovered = await runJarvis(['sync', '--json'], {cwd: a.root, env})
    expect(recovered.code).toBe(0)
  }, 120_000)
})
