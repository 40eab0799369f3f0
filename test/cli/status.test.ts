/**
 * The newcomer's first hour as the CLI tells it: two trees, a conflict that exits 4 and names the backup, a
 * `jarvis status` that shows it waiting, reminders at every sync, `jarvis resolve` either way, and a clean
 * status at the end. Real `jarvis serve`, real processes.
 */
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {digestOf} from '../../src/hook/episode.js'
import {keepPendingEpisode} from '../../src/hook/pending.js'
import {MemoryClient} from '../../src/protocol/client.js'
import {readConfig, writeConfig} from '../../src/store/index.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {removeAll, startTestServer, type TestServer, TOKENS} from '../helpers/world.js'
import {initedTree} from './memory-helpers.js'

let server: TestServer
const dirs: string[] = []

beforeAll(async () => {
  server = await startTestServer()
  dirs.push(server.dataDir)
})

afterAll(async () => {
  await server?.close()
  await removeAll(dirs)
})

async function tree(agent: 'claude' | 'gemini'): Promise<{root: string; run: (args: string[]) => ReturnType<typeof runJarvis>}> {
  const made = await initedTree(server.url, agent, 'jarvis-status')
  dirs.push(made.root)
  return made
}

const note = (root: string) => join(root, '.memory', 'notes', 'plan.md')
const write = async (root: string, text: string) => {
  await mkdir(join(root, '.memory', 'notes'), {recursive: true})
  await writeFile(note(root), text)
}
const flat = (text: string) => text.replace(/\s*›\s*/g, ' ').replace(/\s+/g, ' ')

describe('jarvis status and jarvis resolve', () => {
  it('an episode kept while the tree was locked shows in status, and the next sync writes it and sends it', async () => {
    const a = await tree('claude')
    const digest = digestOf([{kind: 'answer', text: 'We decided to use Redis for the job queue.'}])
    await keepPendingEpisode(a.root, {agent: 'claude', sessionId: 's-locked', digest, adds: true, startDate: '2026-09-01', at: '2026-09-01T10:00:00.000Z'})
    const status = await a.run(['status', '--offline'])
    expect(status.stdout).toContain('1 session episode(s) kept while the tree was locked wait in .nexus/pending-episodes/; the next jarvis sync writes and sends them.')
    expect(envelope<{pendingEpisodes: number}>(await a.run(['status', '--offline', '--json'])).result!.pendingEpisodes).toBe(1)

    const synced = await a.run(['sync', '--json'])
    expect(synced.code, synced.stderr).toBe(0)
    expect(envelope<{pushed: string[]}>(synced).result!.pushed).toEqual(['episodes/2026-09-01/claude-s-locked.md'])
    const pulled = await new MemoryClient({server: server.url, token: TOKENS.claude}).pull(['episodes/2026-09-01/claude-s-locked.md'])
    expect(JSON.stringify(pulled)).toContain('We decided to use Redis for the job queue.')
    expect(envelope<{pendingEpisodes: number}>(await a.run(['status', '--offline', '--json'])).result!.pendingEpisodes).toBe(0)
  })

  it('a conflict exits 4 naming the backup, waits in status, is recalled at each sync, and resolve settles it', async () => {
    const a = await tree('claude')
    const b = await tree('gemini')
    await write(a.root, '# Plan\n\nship on Friday\n')
    expect((await a.run(['sync'])).code).toBe(0)
    expect((await b.run(['sync'])).code).toBe(0)
    await write(a.root, '# Plan\n\nship on Monday\n')
    await write(b.root, '# Plan\n\nship on Tuesday\n')
    expect((await a.run(['sync'])).code).toBe(0)

    const conflicted = await b.run(['sync'])
    expect(conflicted.code).toBe(4)
    expect(flat(conflicted.stderr)).toContain("notes/plan.md: the server's version is in the file, yours in .memory/notes/plan.local.bak")
    expect(flat(conflicted.stderr)).toContain('jarvis resolve <file> --keep server')
    expect(await readFile(note(b.root), 'utf8')).toBe('# Plan\n\nship on Monday\n')

    const status = await b.run(['status'])
    expect(status.code).toBe(0)
    expect(status.stdout).toContain('Conflicts waiting for you (1)')
    expect(status.stdout).toContain('.memory/notes/plan.local.bak   (notes/plan.md)')
    // Each choice said by what it does to the file and the backup, true whichever side is where.
    expect(status.stdout).toContain('jarvis resolve <file> --keep server   (keep the file as it is, drop the backup)')
    expect(status.stdout).toMatch(/server http:\/\/127\.0\.0\.1:\d+: answers \(\d+ files?\)/) // the server other tests here sync to too

    const again = await b.run(['sync'])
    expect(again.code).toBe(0)
    expect(flat(again.stderr)).toContain('1 earlier conflict(s) still wait for you: .memory/notes/plan.local.bak')

    const resolved = await b.run(['resolve', 'notes/plan.md', '--keep', 'local'])
    expect(resolved.code, resolved.stderr).toBe(0)
    expect(resolved.stdout).toContain('your version is back in .memory/notes/plan.md')
    expect(await readFile(note(b.root), 'utf8')).toBe('# Plan\n\nship on Tuesday\n')
    const pending = envelope<{changes: {modified: string[]}; backups: string[]}>(await b.run(['status', '--offline', '--json'])).result!
    expect(pending.changes.modified).toEqual(['notes/plan.md'])
    expect(pending.backups).toEqual([])
    expect((await b.run(['sync'])).code).toBe(0)
    expect((await a.run(['sync'])).code).toBe(0)
    expect(await readFile(note(a.root), 'utf8')).toBe('# Plan\n\nship on Tuesday\n')

    const clean = await a.run(['status'])
    expect(clean.stdout).toContain('No local changes since the last sync.')
    expect(clean.stdout).not.toContain('Conflicts waiting')
    const audit = await readFile(join(b.root, '.nexus', 'audit.jsonl'), 'utf8')
    expect(audit).toMatch(/"type":"resolve","path":"notes\/plan\.md","backup":"notes\/plan\.local\.bak","keep":"local"/)
  })

  it('a sync stopped by a file it leaves behind still says what it did, the conflict it kept included, and the next one reminds of it', async () => {
    const a = await tree('claude')
    const b = await tree('gemini')
    // A file of its own: the trees of this file share one server.
    const write = async (root: string, text: string) => writeFile(join(root, '.memory', 'notes', 'launch.md'), text)
    await mkdir(join(a.root, '.memory', 'notes'), {recursive: true})
    await mkdir(join(b.root, '.memory', 'notes'), {recursive: true})
    await write(a.root, '# Plan\n\nship on Friday\n')
    expect((await a.run(['sync'])).code).toBe(0)
    expect((await b.run(['sync'])).code).toBe(0)
    await write(a.root, '# Plan\n\nship on Monday\n')
    expect((await a.run(['sync'])).code).toBe(0)
    await write(b.root, '# Plan\n\nship on Tuesday\n')
    await writeFile(join(b.root, '.memory', 'notes', 'other.md'), 'pushed all the same\n')
    await writeFile(join(b.root, '.memory', 'notes', 'menu.md'), Buffer.from('caf\xe9\n', 'latin1'))

    const stopped = await b.run(['sync'])
    expect(stopped.code).toBe(2)
    expect(flat(stopped.stdout)).toContain('pushed 1: notes/other.md')
    expect(flat(stopped.stdout)).toContain("conflict in notes/launch.md: the server's version won, yours is kept in .memory/notes/launch.local.bak")
    expect(flat(stopped.stderr)).toContain('.memory/notes/menu.md: line 1: not UTF-8 text')
    expect(await readFile(join(b.root, '.memory', 'notes', 'launch.local.bak'), 'utf8')).toBe('# Plan\n\nship on Tuesday\n')

    const again = await b.run(['sync'])
    expect(again.code).toBe(2)
    expect(flat(again.stderr)).toContain('1 earlier conflict(s) still wait for you: .memory/notes/launch.local.bak')
  })

  it('--keep server drops the backup and leaves the file; a path with nothing to decide is exit 2', async () => {
    const b = await tree('gemini')
    await write(b.root, 'server side\n')
    await writeFile(join(b.root, '.memory', 'notes', 'plan.local.bak'), 'my side\n')
    const kept = await b.run(['resolve', '.memory/notes/plan.local.bak', '--keep', 'server', '--json'])
    expect(envelope(kept)).toMatchObject({status: 0, result: {file: 'notes/plan.md', backup: 'notes/plan.local.bak', kept: 'server', waiting: []}})
    expect(await readFile(note(b.root), 'utf8')).toBe('server side\n')
    const nothing = await b.run(['resolve', 'notes/plan.md', '--keep', 'local'])
    expect(nothing.code).toBe(2)
    expect(nothing.stderr).toContain('no conflict backup of notes/plan.md is waiting')
  })

  it('--offline lists what the next sync sends, asks no server, and names what is not wired', async () => {
    const a = await tree('claude')
    await write(a.root, 'one\n')
    const run = await a.run(['status', '--offline', '--json'])
    const result = envelope<{remote: {state: string}; changes: {added: string[]}; lastSync?: unknown; agents: Array<{agent: string; server: {state: string}}>}>(run).result!
    expect(result.remote.state).toBe('not-asked')
    expect(result.changes.added).toEqual(['notes/plan.md'])
    expect(result.lastSync).toBeUndefined()
    expect(result.agents.map((x) => [x.agent, x.server.state])).toEqual([['claude', 'not-registered'], ['gemini', 'not-registered'], ['codex', 'not-registered'], ['openclaw', 'not-registered']])
    const human = await a.run(['status', '--offline'])
    expect(human.stdout).toContain('never synced: run jarvis sync')
    expect(human.stdout).toContain('No agent is wired to this memory: jarvis agents install')
  })

  it('a bad line in the audit log is skipped with a warning naming it; a bad outbox line says what it is and what to do', async () => {
    const a = await tree('claude')
    await writeFile(join(a.root, '.memory', 'audit-line.md'), 'one\n')
    expect((await a.run(['sync'])).code).toBe(0)
    await writeFile(join(a.root, '.nexus', 'audit.jsonl'), `${await readFile(join(a.root, '.nexus', 'audit.jsonl'), 'utf8')}garbage\n`)
    const lines = (await readFile(join(a.root, '.nexus', 'audit.jsonl'), 'utf8')).trimEnd().split('\n').length
    const status = await a.run(['status', '--offline'])
    expect(status.code).toBe(0)
    expect(status.stdout).toMatch(/last sync \S+: 1 pushed/)
    expect(status.stderr).toContain(`warning: .nexus/audit.jsonl: line ${lines} skipped, it is not an audit entry (invalid JSON:`)
    expect(status.stderr).toContain('fix or remove that line to stop this warning')
    expect((await a.run(['sync'])).code).toBe(0)

    await writeFile(join(a.root, '.nexus', 'outbox.jsonl'), 'junk\n')
    for (const args of [['status', '--offline'], ['sync']]) {
      const run = await a.run(args)
      expect(run.code, args.join(' ')).toBe(2)
      expect(flat(run.stderr)).toContain('.nexus/outbox.jsonl: line 1: invalid JSON')
      expect(flat(run.stderr)).toContain(
        '.nexus/outbox.jsonl: line 1 is a write the server has not received yet (a memory event, a task result or a project switch, queued while it could not be reached): fix that line, or remove it and run `jarvis sync` again, knowing that what it holds is then never sent',
      )
    }
  })

  it('sync.enabled false switches syncing off: sync and sync --watch refuse, saying where, and send nothing', async () => {
    const a = await tree('claude')
    await writeFile(join(a.root, '.memory', 'switched-off.md'), 'stays here\n')
    const config = await readConfig(a.root)
    await writeConfig(a.root, {...config, sync: {...config.sync, enabled: false}})
    for (const args of [['sync'], ['sync', '--watch']]) {
      const run = await a.run(args)
      expect(run.code).toBe(2)
      expect(run.stderr.replace(/\s*›\s*/g, ' ')).toContain('sync is switched off for this tree (sync.enabled is false in .nexus/config.json)')
    }
    const onServer = await new MemoryClient({server: server.url, token: TOKENS.claude}).status()
    expect(Object.keys(onServer.files)).not.toContain('switched-off.md')
  })
})
