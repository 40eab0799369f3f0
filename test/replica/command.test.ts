import {appendFile, mkdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import type {SyncOnceResult} from '../../src/ops/index.js'
import type {ReplicasResult} from '../../src/replica/ops.js'
import {initTree} from '../../src/store/index.js'
import {fakeGithubToken} from '../files/helpers.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {makeClient, removeAll, startTestServer, tempDir, TOKENS} from '../helpers/world.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

/** A tree whose config names `~/workspace`, and a HOME that holds that workspace. */
async function setup(replicas: unknown[] = [{kind: 'openclaw', path: '~/workspace'}]) {
  const home = await tempDir('jarvis-replicate-home-')
  const root = join(home, 'project')
  dirs.push(home)
  await initTree(root, {agent: 'openclaw'})
  const file = join(root, '.nexus/config.json')
  await writeFile(file, JSON.stringify({...JSON.parse(await readFile(file, 'utf8')), replicas}, null, 2))
  await mkdir(join(home, 'workspace/memory'), {recursive: true})
  const env = {HOME: home, XDG_CONFIG_HOME: join(home, 'xdg')}
  return {home, root, env, run: (...args: string[]) => runJarvis(['replicate', ...args], {cwd: root, env})}
}

describe('jarvis replicate', () => {
  it('--json: one envelope with what moved; the files are there; a second run moves nothing', async () => {
    const {home, root, run} = await setup()
    await writeFile(join(home, 'workspace/memory/2026-05-01.md'), '- shipped v2\n')
    const first = await run('--json')
    expect(first.code, first.stderr).toBe(0)
    const {result} = envelope<ReplicasResult>(first)
    expect(result!.replicas[0]).toMatchObject({kind: 'openclaw', workspace: join(home, 'workspace'), folder: 'openclaw', changes: [{action: 'to-memory', memoryPath: 'openclaw/daily/2026-05-01.md'}]})
    expect(await readFile(join(root, '.memory/openclaw/daily/2026-05-01.md'), 'utf8')).toBe('- shipped v2\n')
    const second = await run()
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).toContain('already in step')
  })

  it('--dry-run says what would move and moves nothing', async () => {
    const {home, root, run} = await setup()
    await writeFile(join(home, 'workspace/MEMORY.md'), '# long-term\n')
    const dry = await run('--dry-run')
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toMatch(/dry run; nothing was changed\n.*\n {2}would be copied into \.memory\/: openclaw\/MEMORY\.md/)
    await expect(readFile(join(root, '.memory/openclaw/MEMORY.md'), 'utf8')).rejects.toThrow()
  })

  it('a conflict that keeps the workspace text as a backup is exit 4 naming the backup, as a sync conflict is', async () => {
    const {home, root, run} = await setup()
    await writeFile(join(home, 'workspace/MEMORY.md'), 'a\nb\nc\n')
    expect((await run()).code).toBe(0)
    await writeFile(join(home, 'workspace/MEMORY.md'), 'a\nb-workspace\nc\n')
    await writeFile(join(root, '.memory/openclaw/MEMORY.md'), 'a\nb-memory\nc\n')
    const conflict = await run()
    expect(conflict.code, conflict.stderr).toBe(4)
    expect(conflict.stderr).toContain('openclaw/MEMORY.md: the merge is in .memory/openclaw/MEMORY.md, the replica\'s text in .memory/openclaw/MEMORY.local.bak')
    expect(await readFile(join(root, '.memory/openclaw/MEMORY.local.bak'), 'utf8')).toBe('a\nb-workspace\nc\n')
    const again = await run()
    expect(again.code, again.stderr).toBe(0)
  })

  it('an unknown kind in .nexus/config.json is exit 2 naming the field', async () => {
    const {run} = await setup([{kind: 'notion', path: '~/vault'}])
    const bad = await run('--json')
    expect(bad.code).toBe(2)
    expect(envelope(bad).error!.message).toContain('.nexus/config.json: replicas.0.kind: unknown replica kind "notion"')
    const human = await run()
    expect(human.code).toBe(2)
    expect(human.stderr).toContain('replicas.0.kind')
    expect(human.stderr).not.toMatch(/\n\s+at /) // no stack trace
  })

  it('a secret in an OpenClaw note is exit 5 and stays out of .memory/', async () => {
    const {home, root, run} = await setup()
    await writeFile(join(home, 'workspace/memory/2026-05-02.md'), `key ${fakeGithubToken()}\n`)
    const refused = await run('--json')
    expect(refused.code).toBe(5)
    expect(envelope(refused).error!.message).toContain('.memory/openclaw/daily/2026-05-02.md')
    await expect(readFile(join(root, '.memory/openclaw/daily/2026-05-02.md'), 'utf8')).rejects.toThrow()
  })

  it('without replicas it says how to add one', async () => {
    const {run} = await setup([])
    const none = await run()
    expect(none.code, none.stderr).toBe(0)
    expect(none.stdout).toContain('no replicas configured')
  })
})

describe('jarvis sync with an OpenClaw replica', () => {
  it("carries OpenClaw's daily note to another agent's tree, and that agent's edit back into the workspace", async () => {
    const server = await startTestServer()
    try {
      const {home, root, env} = await setup()
      const sync = (cwd: string, agent: string) =>
        runJarvis(['sync', '--json', '--server', server.url], {cwd, env: {...env, JARVIS_TOKEN: TOKENS[agent], JARVIS_AGENT: agent}})
      const other = await makeClient(server.url, 'claude')
      dirs.push(other.root)

      await writeFile(join(home, 'workspace/memory/2026-05-03.md'), '- OpenClaw: the deploy key moved to the vault\n')
      const up = await sync(root, 'openclaw')
      expect(up.code, up.stderr).toBe(0)
      const upResult = envelope<SyncOnceResult>(up).result!
      expect(upResult.pushed).toContain('openclaw/daily/2026-05-03.md')
      expect(upResult.replicas![0].changes).toEqual([expect.objectContaining({action: 'to-memory', memoryPath: 'openclaw/daily/2026-05-03.md'})])

      await other.sync()
      expect(await other.read('openclaw/daily/2026-05-03.md')).toBe('- OpenClaw: the deploy key moved to the vault\n')
      await other.write('openclaw/daily/2026-05-03.md', '- OpenClaw: the deploy key moved to the vault\n- Claude: rotated it on 2026-05-03\n')
      await other.sync()

      const down = await sync(root, 'openclaw')
      expect(down.code, down.stderr).toBe(0)
      expect(await readFile(join(home, 'workspace/memory/2026-05-03.md'), 'utf8')).toBe(
        '- OpenClaw: the deploy key moved to the vault\n- Claude: rotated it on 2026-05-03\n',
      )
      const again = await sync(root, 'openclaw')
      expect(envelope<SyncOnceResult>(again).result!.replicas!.flatMap((r) => r.changes)).toEqual([])
    } finally {
      await server.close()
    }
  })
})

describe('what a replica leaves undone is the exit of jarvis sync and jarvis replicate', () => {
  it('a replica that fails: sync exits 1 once it synced, replicate 1, status names it until a run succeeds; a conflict of the sync itself still exits 4', async () => {
    const server = await startTestServer()
    try {
      const {home, root, env} = await setup()
      const as = {...env, JARVIS_TOKEN: TOKENS.openclaw, JARVIS_AGENT: 'openclaw', JARVIS_SERVER: server.url}
      const jarvis = (...args: string[]) => runJarvis(args, {cwd: root, env: as})
      await writeFile(join(home, 'workspace/MEMORY.md'), '# m\n')
      expect((await jarvis('sync', '--quiet')).code).toBe(0)
      // A folder where OpenClaw's MEMORY.md was: the replica cannot read nor write it (as a read-only mount cannot be written).
      await rm(join(home, 'workspace/MEMORY.md'))
      await mkdir(join(home, 'workspace/MEMORY.md'))
      await appendFile(join(root, '.memory/openclaw/MEMORY.md'), 'more\n')
      await writeFile(join(root, '.memory/notes.md'), 'still synced\n')

      const failed = await jarvis('sync')
      expect(failed.code, failed.stderr).toBe(1)
      expect(failed.stdout).toContain('failed: EISDIR')
      expect(failed.stderr).toContain('replication failed')
      const json = envelope<never>(await jarvis('sync', '--json'))
      expect(json.status).toBe(1)
      expect((json.error!.data!.result as SyncOnceResult).replicas![0].error).toMatchObject({code: 'EISDIR'})
      const other = await makeClient(server.url, 'claude')
      dirs.push(other.root)
      await other.sync()
      expect(await other.read('notes.md')).toBe('still synced\n') // the sync itself was done before the exit
      expect((await jarvis('replicate')).code).toBe(1)

      const status = await jarvis('status', '--offline')
      expect(status.stdout).toContain('Replicas that failed at their last run')
      expect(status.stdout).toContain(`openclaw ${join(home, 'workspace')}: EISDIR`)

      // A conflict of the sync itself is the higher exit, and the message tells of both.
      await other.write('notes.md', 'theirs\n')
      await other.sync()
      await writeFile(join(root, '.memory/notes.md'), 'mine\n')
      const both = await jarvis('sync')
      expect(both.code).toBe(4)
      expect(both.stderr).toContain('conflict(s) wait for you')
      expect(both.stderr).toContain('replication failed')

      await rm(join(home, 'workspace/MEMORY.md'), {recursive: true})
      const fixed = await jarvis('sync')
      expect(fixed.code, fixed.stderr).toBe(0)
      expect(await readFile(join(home, 'workspace/MEMORY.md'), 'utf8')).toBe('# m\nmore\n')
      expect((await jarvis('status', '--offline')).stdout).not.toContain('Replicas that failed')
    } finally {
      await server.close()
    }
  })

  it('a workspace whose only file vanished (an empty mount point) is held back: exit 4 naming --force, nothing deleted anywhere, until --force', async () => {
    const server = await startTestServer()
    try {
      const {home, root, env} = await setup()
      const as = {...env, JARVIS_TOKEN: TOKENS.openclaw, JARVIS_AGENT: 'openclaw', JARVIS_SERVER: server.url}
      const jarvis = (...args: string[]) => runJarvis(args, {cwd: root, env: as})
      await writeFile(join(home, 'workspace/MEMORY.md'), '# long-term\n')
      expect((await jarvis('sync', '--quiet')).code).toBe(0)
      await rm(join(home, 'workspace/MEMORY.md'))

      const held = await jarvis('sync')
      expect(held.code).toBe(4)
      expect(held.stdout).toContain('held back')
      expect(held.stderr).toContain('jarvis sync --force')
      expect(await readFile(join(root, '.memory/openclaw/MEMORY.md'), 'utf8')).toBe('# long-term\n')
      const other = await makeClient(server.url, 'claude')
      dirs.push(other.root)
      await other.sync()
      expect(await other.read('openclaw/MEMORY.md')).toBe('# long-term\n')
      const replicate = await jarvis('replicate')
      expect(replicate.code).toBe(4)
      expect(replicate.stderr).toContain('jarvis replicate --force')

      const forced = await jarvis('sync', '--force')
      expect(forced.code, forced.stderr).toBe(0)
      await expect(readFile(join(root, '.memory/openclaw/MEMORY.md'), 'utf8')).rejects.toThrow()
    } finally {
      await server.close()
    }
  })
})

describe('jarvis replicate and jarvis sync with the event-log replicas', () => {
  it('writes the decisions and the daily note, a person’s edit in the note becomes an event the other agents read, and a secret is exit 5', async () => {
    const server = await startTestServer()
    try {
      const {home, root, env} = await setup([
        {kind: 'ai-memory', path: '~/AI_MEMORY'},
        {kind: 'obsidian', path: '~/vault'},
      ])
      await mkdir(join(home, 'vault/.obsidian'), {recursive: true})
      const as = {...env, JARVIS_TOKEN: TOKENS.openclaw, JARVIS_AGENT: 'openclaw', JARVIS_SERVER: server.url}
      const jarvis = (...args: string[]) => runJarvis(args, {cwd: root, env: as})
      const appended = await jarvis('memory', 'append', '--kind', 'decision', '--key', 'decision:deploy_day', '--content', 'Deploys go out on Tuesdays.', '--json')
      expect(appended.code, appended.stderr).toBe(0)

      const first = await jarvis('replicate', '--json')
      expect(first.code, first.stderr).toBe(0)
      const reports = envelope<ReplicasResult>(first).result!.replicas
      const day = reports[1].written[0]
      expect(reports.map((r) => [r.kind, r.written])).toEqual([
        ['ai-memory', ['global/decision.deploy_day.md']],
        ['obsidian', [expect.stringMatching(/^\d{4}-\d{2}-\d{2}\.md$/)]],
      ])
      expect(await readFile(join(home, 'AI_MEMORY/global/decision.deploy_day.md'), 'utf8')).toContain('Deploys go out on Tuesdays.')
      const note = join(home, 'vault', day)
      await writeFile(note, (await readFile(note, 'utf8')).replace('  Deploys go out on Tuesdays.', '  Deploys go out on Wednesdays.'))

      const synced = await jarvis('sync', '--json')
      expect(synced.code, synced.stderr).toBe(0)
      const syncReports = envelope<SyncOnceResult>(synced).result!.replicas!
      expect(syncReports[1].appended).toEqual([expect.objectContaining({dedupe_key: 'decision:deploy_day', status: 'created'})])
      const snapshot = await runJarvis(['memory', 'snapshot', '--json'], {cwd: root, env: {...as, JARVIS_TOKEN: TOKENS.claude, JARVIS_AGENT: 'claude'}})
      expect(envelope<{pinned_md: string}>(snapshot).result!.pinned_md).toContain('decision:deploy_day: Deploys go out on Wednesdays.')
      expect(await readFile(join(home, 'AI_MEMORY/global/decision.deploy_day.md'), 'utf8')).toContain('Deploys go out on Wednesdays.')

      const quiet = await jarvis('replicate')
      expect(quiet.code, quiet.stderr).toBe(0)
      expect(quiet.stdout).toBe(`ai-memory ${join(home, 'AI_MEMORY')} ← the event log\n  already in step\nobsidian ${join(home, 'vault')} ← the event log\n  already in step\n`)

      await writeFile(note, (await readFile(note, 'utf8')).replace('  Deploys go out on Wednesdays.', `  Deploys go out on Wednesdays. Key ${fakeGithubToken()}`))
      const refused = await jarvis('replicate', '--json')
      expect(refused.code).toBe(5)
      expect(envelope(refused).error!.message).toContain(`not replicated, left as they are:\n${note}: refused: the event holds a GitHub token in ${day} (decision:deploy_day)`)
      const human = await jarvis('replicate')
      expect(human.code).toBe(5)
      expect(human.stdout).toContain(`  left as you wrote it: ${day}: refused: the event holds a GitHub token`)
    } finally {
      await server.close()
    }
  })
})
