/**
 * CONTRACT §3: "A client must also work with a server that implements only the seed's fields (timestamps, no
 * hash/rev): it then decides by timestamps against its own recorded base and says that it ran in that mode."
 * Black-box: the real `jarvis` binary, as a user runs it, against a stand-in that answers only the seed's fields
 * (seed-stand-in.ts) — sync, append, snapshot, a finished task and a project switch. A server with still fewer
 * fields, and `jarvis status` against it: protocol-only-server.test.ts; the engine in process:
 * test/sync/timestamp-mode.test.ts.
 */
import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {envelope} from '../helpers/cli.js'
import {tokenMap} from '../helpers/world.js'
import {type SeedStandIn, startSeedStandIn} from './seed-stand-in.js'
import {cliTrees, flat, put, read, type SyncReport} from './cli-trees.js'

let standIn: SeedStandIn
const {tree, removeTrees} = cliTrees('jarvis-seed', () => standIn.url)

beforeEach(async () => {
  standIn = await startSeedStandIn(tokenMap)
})

afterEach(async () => {
  await standIn.close()
  await removeTrees()
})

describe('jarvis against a server with only the seed’s fields', () => {
  it('sync: two trees push, pull, merge and settle a conflict, each run saying it decided by timestamps', async () => {
    const a = await tree('claude')
    const b = await tree('gemini')
    await put(a.root, 'PROJECT_MEMORY.md', '# P\n\n- one\n- two\n- three\n')
    await put(a.root, 'projects.json', '{"alpha": 1}\n')
    const first = await a.run(['sync'])
    expect(first.code, first.stderr).toBe(0)
    expect(flat(first.stdout)).toContain('timestamp mode')
    expect(standIn.files.get('projects.json')?.content).toEqual({alpha: 1})

    const pulled = envelope<SyncReport>(await b.run(['sync', '--json']))
    expect(pulled.status).toBe(0)
    expect(pulled.result).toMatchObject({mode: 'timestamp', pulled: ['PROJECT_MEMORY.md', 'projects.json']})
    // The stand-in sent projects.json as a JSON value: written pretty-printed.
    expect(await read(b.root, 'projects.json')).toBe('{\n  "alpha": 1\n}\n')

    // Edits to different lines merge three-way against the recorded base, not "newest file wins".
    await put(a.root, 'PROJECT_MEMORY.md', '# P\n\n- one, by A\n- two\n- three\n')
    await put(b.root, 'PROJECT_MEMORY.md', '# P\n\n- one\n- two\n- three, by B\n')
    expect((await a.run(['sync'])).code).toBe(0)
    const merged = envelope<SyncReport>(await b.run(['sync', '--json']))
    expect(merged.result).toMatchObject({mode: 'timestamp', merged: ['PROJECT_MEMORY.md']})
    expect((await a.run(['sync'])).code).toBe(0)
    expect(await read(a.root, 'PROJECT_MEMORY.md')).toBe('# P\n\n- one, by A\n- two\n- three, by B\n')

    // The same line on both sides: the server's wins, the local one waits in a backup (exit 4), resolve settles it.
    await put(a.root, 'PROJECT_MEMORY.md', '# P\n\n- one, by A\n- two on Monday\n- three, by B\n')
    await put(b.root, 'PROJECT_MEMORY.md', '# P\n\n- one, by A\n- two on Tuesday\n- three, by B\n')
    expect((await a.run(['sync'])).code).toBe(0)
    const conflicted = await b.run(['sync'])
    expect(conflicted.code, conflicted.stderr).toBe(4)
    expect(flat(conflicted.stderr)).toContain('yours in .memory/PROJECT_MEMORY.local.bak')
    expect(await read(b.root, 'PROJECT_MEMORY.md')).toContain('two on Monday')
    expect((await b.run(['resolve', 'PROJECT_MEMORY.md', '--keep', 'local'])).code).toBe(0)
    expect((await b.run(['sync'])).code).toBe(0)
    expect((await a.run(['sync'])).code).toBe(0)
    expect(await read(a.root, 'PROJECT_MEMORY.md')).toContain('two on Tuesday')

    // It asked only what such a server answers: no `?since=`, no `base` or `deletes` in a push, no backup pushed.
    expect(standIn.requests.filter((line) => line.includes('since='))).toEqual([])
    for (const push of standIn.pushes) expect(Object.keys(push)).toEqual(['files'])
    expect([...standIn.files.keys()].sort()).toEqual(['PROJECT_MEMORY.md', 'projects.json'])
  })

  it('sync: a push answered with no body at all (the seed names no answer) still syncs, and the next sync sends nothing', async () => {
    standIn.answers.push = null
    const a = await tree('claude')
    await put(a.root, 'notes.md', 'n\n')
    const first = await a.run(['sync', '--json'])
    expect(first.code, first.stderr).toBe(0)
    expect(envelope<SyncReport>(first).result).toMatchObject({mode: 'timestamp', pushed: ['notes.md']})
    expect(standIn.files.get('notes.md')?.content).toBe('n\n')
    const again = envelope<SyncReport>(await a.run(['sync', '--json']))
    expect(again.result).toMatchObject({pushed: [], pulled: [], merged: []})
    expect(standIn.pushes).toHaveLength(1)
  })

  it('memory append and snapshot: an answer without warnings, a status word the seed does not name, events with only the seed’s columns', async () => {
    const a = await tree('claude')
    const b = await tree('gemini')
    const first = await a.run(['memory', 'append', '--kind', 'decision', '--key', 'decision:deploy_day', '--content', 'Deploys go out on Fridays.', '--json'])
    expect(first.code, first.stderr).toBe(0)
    const firstId = envelope<{event_id: string; status: string; warnings: string[]}>(first).result!
    expect(firstId).toMatchObject({event_id: standIn.events[0].event_id, status: 'created', warnings: []})

    standIn.answers.appendStatus = 'ok'
    const second = await a.run(['memory', 'append', '--kind', 'decision', '--key', 'decision:deploy_day', '--content', 'Deploys go out on Tuesdays.', '--supersedes', firstId.event_id])
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).toContain('appended decision decision:deploy_day to global')
    expect(standIn.events.map((event) => event.content_md)).toEqual(['Deploys go out on Fridays.', 'Deploys go out on Tuesdays.'])

    const snapshot = await b.run(['memory', 'snapshot'])
    expect(snapshot.code, snapshot.stderr).toBe(0)
    expect(snapshot.stdout).toContain('Deploys go out on Tuesdays.')
    expect(snapshot.stdout).not.toContain('Fridays')
    const json = envelope<{recent_events: Array<{event_id: string; content_md: string}>; ruleset_stamp: string}>(await b.run(['memory', 'snapshot', '--json']))
    expect(json.status).toBe(0)
    expect(json.result!.recent_events.map((event) => event.content_md)).toEqual(['Deploys go out on Tuesdays.'])
    expect(json.result!.ruleset_stamp).toBe('JARVIS_RULESET=v1.0')

    // Such a server keeps no event list to filter: listing or searching events cannot read the memory (exit 3),
    // and says what still works, rather than blame the user's input (exit 2).
    for (const args of [['memory', 'list'], ['memory', 'search', 'deploys']]) {
      const listed = await b.run(args)
      expect(listed.code, `${args.join(' ')}: ${listed.stderr}`).toBe(3)
      expect(listed.stderr).toContain('has no event list')
      expect(listed.stderr).toContain('jarvis memory snapshot')
    }
  })

  it('a finished task and a project switch, answered as the seed describes them', async () => {
    const a = await tree('claude')
    const task = await a.run(['task', 'complete', '--type', 'code-review', '--input', 'review the parser', '--output', 'two fixes', '--json'])
    expect(task.code, task.stderr).toBe(0)
    expect(envelope<{workerMemory: {recentTasks: Array<{type: string}>}}>(task).result!.workerMemory.recentTasks.map((t) => t.type)).toEqual(['code-review'])
    const switched = await a.run(['switch-project', 'billing'])
    expect(switched.code, switched.stderr).toBe(0)
    expect(standIn.active?.projectId).toBe('billing')
  })
})
