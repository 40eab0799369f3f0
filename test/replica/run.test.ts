import {mkdir, readdir, readFile, rm, stat, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {assertNoSensitive} from '../../src/events/index.js'
import {replicaFailure, replicaId, runReplicas, type RunReplicasInput} from '../../src/replica/ops.js'
import {resolveConflict} from '../../src/status/resolve.js'
import {initTree, readAudit, withTreeLock} from '../../src/store/index.js'
import {fakeGithubToken} from '../files/helpers.js'
import {removeAll, tempDir} from '../helpers/world.js'

const NOW = () => new Date('2026-05-01T12:00:00.000Z')
const noScreen = async () => {}

describe('runReplicas on a real tree and an OpenClaw workspace', () => {
  let root: string
  let ws: string
  const dirs: string[] = []

  beforeEach(async () => {
    root = await tempDir('jarvis-replica-')
    ws = await tempDir('openclaw-ws-')
    dirs.push(root, ws)
    await initTree(root, {agent: 'openclaw'})
    await configure([{kind: 'openclaw', path: ws}])
  })
  afterEach(async () => removeAll(dirs.splice(0)))

  async function configure(replicas: unknown[]): Promise<void> {
    const file = join(root, '.nexus/config.json')
    const config = JSON.parse(await readFile(file, 'utf8'))
    await writeFile(file, JSON.stringify({...config, replicas}, null, 2))
  }
  const put = async (path: string, text: string) => {
    await mkdir(dirname(path), {recursive: true})
    await writeFile(path, text)
  }
  const read = (path: string) => readFile(path, 'utf8').catch(() => null)
  const mem = (rel: string) => join(root, '.memory', rel)
  const wsf = (rel: string) => join(ws, rel)
  const replicate = (extra: Partial<RunReplicasInput> = {}) => runReplicas({dir: root, now: NOW, screen: noScreen, ...extra})

  it('carries a daily note OpenClaw wrote into .memory/, and a second run writes nothing', async () => {
    await put(wsf('memory/2026-05-01.md'), '# 2026-05-01\n- decided: Postgres\n')
    await put(wsf('AGENTS.md'), 'not a memory file\n')
    const first = await replicate()
    expect(first.replicas[0].changes).toEqual([{action: 'to-memory', memoryPath: 'openclaw/daily/2026-05-01.md', workspacePath: 'memory/2026-05-01.md'}])
    expect(await read(mem('openclaw/daily/2026-05-01.md'))).toBe('# 2026-05-01\n- decided: Postgres\n')
    expect(await read(mem('openclaw/AGENTS.md'))).toBeNull()

    const stateFile = join(root, '.nexus/replicas', first.replicas[0].id, 'state.json')
    const before = {state: (await stat(stateFile)).mtimeMs, audit: (await readAudit(root)).length}
    const second = await replicate()
    expect(second.replicas[0].changes).toEqual([])
    expect({state: (await stat(stateFile)).mtimeMs, audit: (await readAudit(root)).length}).toEqual(before)
  })

  it('carries another agent’s edit of .memory/openclaw/MEMORY.md into the workspace', async () => {
    await put(wsf('MEMORY.md'), '# Memory\n- likes tea\n')
    await replicate()
    await put(mem('openclaw/MEMORY.md'), '# Memory\n- likes tea\n- deploys on Fridays (from claude)\n')
    const result = await replicate()
    expect(result.replicas[0].changes).toEqual([{action: 'to-workspace', memoryPath: 'openclaw/MEMORY.md', workspacePath: 'MEMORY.md'}])
    expect(await read(wsf('MEMORY.md'))).toBe('# Memory\n- likes tea\n- deploys on Fridays (from claude)\n')
  })

  it('merges edits of different lines made on both sides', async () => {
    await put(wsf('MEMORY.md'), 'one\ntwo\nthree\n')
    await replicate()
    await put(wsf('MEMORY.md'), 'ONE\ntwo\nthree\n')
    await put(mem('openclaw/MEMORY.md'), 'one\ntwo\nTHREE\n')
    const result = await replicate()
    expect(result.replicas[0]).toMatchObject({changes: [{action: 'merge'}], backups: [], conflicts: []})
    expect(await read(wsf('MEMORY.md'))).toBe('ONE\ntwo\nTHREE\n')
    expect(await read(mem('openclaw/MEMORY.md'))).toBe('ONE\ntwo\nTHREE\n')
  })

  it('on the same line keeps .memory/, saves the workspace text as a backup, reports and audits it, and never overwrites a backup', async () => {
    await put(wsf('MEMORY.md'), 'a\nb\n')
    await replicate()
    await put(wsf('MEMORY.md'), 'a\nfrom openclaw\n')
    await put(mem('openclaw/MEMORY.md'), 'a\nfrom gemini\n')
    const result = await replicate()
    expect(result.replicas[0].backups).toEqual([{path: 'openclaw/MEMORY.md', backup: 'openclaw/MEMORY.local.bak'}])
    expect(result.replicas[0].conflicts[0].reason).toMatch(/lines conflict at line 2: the \.memory\/ copy kept/)
    expect(await read(wsf('MEMORY.md'))).toBe('a\nfrom gemini\n')
    expect(await read(mem('openclaw/MEMORY.local.bak'))).toBe('a\nfrom openclaw\n')
    expect((await readAudit(root)).filter((e) => e.type === 'backup')).toHaveLength(1)

    await put(wsf('MEMORY.md'), 'a\nfrom openclaw again\n')
    await put(mem('openclaw/MEMORY.md'), 'a\nfrom codex\n')
    await replicate()
    expect(await read(mem('openclaw/MEMORY.local.bak'))).toBe('a\nfrom openclaw again\n')
    expect(await read(mem('openclaw/MEMORY.local.1.bak'))).toBe('a\nfrom openclaw\n')
  })

  it('jarvis resolve --keep local on a replica’s backup puts the workspace’s line back and keeps the .memory/ side’s other edit', async () => {
    await put(wsf('MEMORY.md'), 'a\nb\nc\n')
    await replicate()
    await put(wsf('MEMORY.md'), 'a\nfrom openclaw\nc\n')
    await put(mem('openclaw/MEMORY.md'), 'a\nfrom gemini\nc\nd from gemini\n')
    await replicate()
    expect(await read(mem('openclaw/MEMORY.md'))).toBe('a\nfrom gemini\nc\nd from gemini\n')
    const resolved = await resolveConflict({dir: root, path: 'openclaw/MEMORY.md', keep: 'local'})
    expect(resolved.decided).toEqual([{backup: 'openclaw/MEMORY.local.bak', outcome: 'put-back'}])
    expect(await read(mem('openclaw/MEMORY.md'))).toBe('a\nfrom openclaw\nc\nd from gemini\n')
    await replicate()
    expect(await read(wsf('MEMORY.md'))).toBe('a\nfrom openclaw\nc\nd from gemini\n')
  })

  it('propagates a deletion the base proves, lets an edit beat a deletion, and never deletes without a base', async () => {
    await put(wsf('memory/2026-04-01.md'), 'old\n')
    await put(wsf('memory/2026-04-02.md'), 'kept\n')
    await put(wsf('memory/2026-04-03.md'), 'third\n')
    await replicate()
    await rm(wsf('memory/2026-04-01.md'))
    await rm(wsf('memory/2026-04-02.md'))
    await put(mem('openclaw/daily/2026-04-02.md'), 'kept\nand edited by claude\n')
    const result = await replicate()
    expect(result.replicas[0].changes).toEqual([
      {action: 'delete-memory', memoryPath: 'openclaw/daily/2026-04-01.md', workspacePath: 'memory/2026-04-01.md'},
      {action: 'to-workspace', memoryPath: 'openclaw/daily/2026-04-02.md', workspacePath: 'memory/2026-04-02.md'},
    ])
    expect(await read(mem('openclaw/daily/2026-04-01.md'))).toBeNull()
    expect(await read(wsf('memory/2026-04-02.md'))).toBe('kept\nand edited by claude\n')

    // A file that reached .memory/ from elsewhere (another machine) and never was in this workspace is new, not deleted.
    await put(mem('openclaw/daily/2026-04-09.md'), 'from the laptop\n')
    await replicate()
    expect(await read(wsf('memory/2026-04-09.md'))).toBe('from the laptop\n')
  })

  it('holds back a wiped workspace instead of deleting the shared copies, until --force', async () => {
    for (const day of ['01', '02', '03']) await put(wsf(`memory/2026-04-${day}.md`), `day ${day}\n`)
    await replicate()
    await rm(wsf('memory'), {recursive: true})
    const held = await replicate()
    expect(held.replicas[0].held).toHaveLength(3)
    expect(await readdir(mem('openclaw/daily'))).toHaveLength(3)
    const forced = await replicate({force: true})
    expect(forced.replicas[0].changes.map((c) => c.action)).toEqual(['delete-memory', 'delete-memory', 'delete-memory'])
  })

  it('refuses a secret: nothing of that file is written on either side, and the door exits 5', async () => {
    await put(wsf('memory/2026-05-01.md'), `token ${fakeGithubToken()}\n`)
    await put(wsf('MEMORY.md'), 'clean\n')
    const result = await replicate({screen: assertNoSensitive})
    expect(result.replicas[0].refused.map((r) => r.path)).toEqual(['openclaw/daily/2026-05-01.md'])
    expect(await read(mem('openclaw/daily/2026-05-01.md'))).toBeNull()
    expect(await read(mem('openclaw/MEMORY.md'))).toBe('clean\n')
    expect(replicaFailure(result)).toMatchObject({exit: 5, code: 'SECRET_REFUSED'})
  })

  it('leaves a file that changed while the run worked on it for the next run', async () => {
    await put(wsf('MEMORY.md'), 'first\n')
    const typing = async () => put(wsf('MEMORY.md'), 'typed meanwhile\n')
    const result = await replicate({screen: typing})
    expect(result.replicas[0]).toMatchObject({left: ['openclaw/MEMORY.md'], changes: []})
    expect(await read(mem('openclaw/MEMORY.md'))).toBeNull()
    await replicate()
    expect(await read(mem('openclaw/MEMORY.md'))).toBe('typed meanwhile\n')
  })

  it('dry run: reports the plan and writes nothing', async () => {
    await put(wsf('MEMORY.md'), 'x\n')
    const result = await replicate({dryRun: true})
    expect(result.replicas[0].changes).toEqual([{action: 'to-memory', memoryPath: 'openclaw/MEMORY.md', workspacePath: 'MEMORY.md'}])
    expect(await read(mem('openclaw/MEMORY.md'))).toBeNull()
    expect(await readdir(join(root, '.nexus'))).not.toContain('replicas')
  })

  it('skips a workspace that does not exist (creates nothing), and a paused one', async () => {
    const missing = join(ws, 'nope')
    await configure([{kind: 'openclaw', path: missing}, {kind: 'openclaw', path: ws, folder: 'oc2', enabled: false}])
    const result = await replicate()
    expect(result.replicas.map((r) => r.skipped)).toEqual([expect.stringContaining('not a directory'), 'paused (enabled: false)'])
    expect(await stat(missing).catch(() => null)).toBeNull()
    expect(replicaFailure(result)).toBeUndefined()
  })

  it('expands ~/ against the home directory and keys the bases by workspace and folder', async () => {
    await configure([{kind: 'openclaw', path: '~/ws', folder: 'agents/openclaw'}])
    await put(join(ws, 'ws/MEMORY.md'), 'home\n')
    const result = await replicate({home: ws})
    expect(result.replicas[0]).toMatchObject({workspace: join(ws, 'ws'), id: replicaId('openclaw', join(ws, 'ws'), 'agents/openclaw')})
    expect(await read(mem('agents/openclaw/MEMORY.md'))).toBe('home\n')
  })

  it('runs inside a caller that already holds the tree lock (as jarvis sync will)', async () => {
    await put(wsf('MEMORY.md'), 'locked\n')
    await withTreeLock(root, {}, () => replicate())
    expect(await read(mem('openclaw/MEMORY.md'))).toBe('locked\n')
  })

  it.each([
    [{kind: 'notion', path: '/vault'}, '.nexus/config.json: replicas.0.kind: unknown replica kind "notion" (this version knows: openclaw, ai-memory, obsidian)'],
    [{kind: 'openclaw', path: 'relative/ws'}, '.nexus/config.json: replicas.0.path: must be an absolute path or start with ~/'],
    [{kind: 'openclaw', path: '/ws', folder: '../out'}, '.nexus/config.json: replicas.0.folder: must be a relative folder'],
    [{kind: 'openclaw', path: '/ws', folder: 'jarvis'}, '.nexus/config.json: replicas.0.folder: jarvis/ holds worker memory'],
  ])('a malformed entry %o is exit 2 naming the field', async (entry, message) => {
    await configure([entry])
    await expect(replicate()).rejects.toMatchObject({exit: 2, message: expect.stringContaining(message)})
  })

  it('refuses two replicas sharing or nesting a folder', async () => {
    await configure([{kind: 'openclaw', path: '/a'}, {kind: 'openclaw', path: '/b', folder: 'openclaw/b'}])
    await expect(replicate()).rejects.toMatchObject({exit: 2, message: expect.stringContaining('replicas.1.folder: .memory/openclaw/b/ overlaps replicas.0.folder')})
  })
})
