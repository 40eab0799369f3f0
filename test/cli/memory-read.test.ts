import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {initTree} from '../../src/store/index.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {removeAll, startTestServer, tempDir, TOKENS, type TestServer} from '../helpers/world.js'
import {agentEnv, cleanEnv} from './memory-helpers.js'

interface SnapshotJson {
  pinned_md: string
  recent_events: {event_id: string; dedupe_key: string; content_md: string; scope: string; created_at?: string}[]
  ruleset_stamp: string
  snapshot_id: string
  agent_id: string
  scopes: string[]
  cached: null | {at: string; age_seconds: number}
}

interface ListJson {
  total: number
  events: {event_id: string; dedupe_key: string; scope: string; agent_id: string; kind: string}[]
}

describe('jarvis memory snapshot, list, search', () => {
  const dirs: string[] = []
  let server: TestServer | undefined
  let root: string

  beforeEach(async () => {
    root = await tempDir('jarvis-read-')
    dirs.push(root)
  })
  afterEach(async () => {
    await server?.close()
    server = undefined
    await removeAll(dirs.splice(0))
  })

  async function serve(): Promise<TestServer> {
    server = await startTestServer()
    dirs.push(server.dataDir)
    return server
  }

  async function append(env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> {
    const run = await runJarvis(['memory', 'append', '--json', ...args], {cwd: root, env})
    expect(run.code, run.stdout + run.stderr).toBe(0)
    return envelope<{event_id: string}>(run).result!.event_id
  }

  it('append → snapshot shows it: pinned first, then the recent events, under a header with the ruleset and snapshot id', async () => {
    const {url} = await serve()
    await initTree(root, {server: url, agent: 'claude', project: 'demo'})
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})
    const id = await append(env, '--dir', root, '--kind', 'decision', '--key', 'decision:memory_ssot', '--content', 'The gateway is the single source of truth.')
    const projectId = await append(env, '--dir', root, '--kind', 'workflow', '--key', 'workflow:release', '--scope', 'project:demo', '--content', 'Release on Fridays.')

    const run = await runJarvis(['memory', 'snapshot', '--dir', root, '--json'], {env})
    expect(run.code, run.stderr).toBe(0)
    const snapshot = envelope<SnapshotJson>(run).result!
    expect(snapshot.ruleset_stamp).toBe('JARVIS_RULESET=v1.0')
    expect(snapshot.scopes).toEqual(['global', 'project:demo', 'agent:claude'])
    expect(snapshot.cached).toBeNull()
    expect(snapshot.recent_events.map((e) => e.event_id)).toEqual(expect.arrayContaining([id, projectId]))
    expect(snapshot.pinned_md).toContain('The gateway is the single source of truth.')
    expect(snapshot.snapshot_id).toEqual(expect.any(String))

    const human = await runJarvis(['memory', 'snapshot', '--dir', root], {env})
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toContain('# Shared memory (JARVIS_RULESET=v1.0)')
    expect(human.stdout).toContain(`snapshot_id: ${snapshot.snapshot_id}`)
    const pinnedAt = human.stdout.indexOf('# Pinned memory')
    const recentAt = human.stdout.indexOf('# Recent events')
    expect(pinnedAt).toBeGreaterThan(-1)
    expect(recentAt).toBeGreaterThan(pinnedAt)
    expect(human.stdout.slice(pinnedAt, recentAt)).toContain('The gateway is the single source of truth.')
    expect(human.stdout.slice(recentAt)).toContain(id)

    // Only the scopes asked for; --limit-recent bounds the recent list.
    const onlyProject = await runJarvis(['memory', 'snapshot', '--dir', root, '--json', '--scopes', 'project:demo', '--limit-recent', '1'], {env})
    expect(onlyProject.code, onlyProject.stderr).toBe(0)
    const narrowed = envelope<SnapshotJson>(onlyProject).result!
    expect(narrowed.recent_events.map((e) => e.event_id)).toEqual([projectId])

    const badScope = await runJarvis(['memory', 'snapshot', '--dir', root, '--json', '--scopes', 'global,everything'], {env})
    expect(badScope.code).toBe(2)
    expect(envelope(badScope).error!.message).toMatch(/--scopes: "everything"/)
    // A value only the server bounds: refused by it, told as the flag (exit 2), never "cannot be read".
    const tooMany = await runJarvis(['memory', 'snapshot', '--dir', root, '--json', '--limit-recent', '501'], {env})
    expect(tooMany.code).toBe(2)
    expect(envelope(tooMany).error!.message).toBe('--limit-recent must be an integer from 1 to 500 (refused by the server)')
    const listed = await runJarvis(['memory', 'list', '--dir', root, '--json', '--limit', '501'], {env})
    expect(listed.code).toBe(2)
    expect(envelope(listed).error!.message).toBe('--limit must be an integer from 1 to 500 (refused by the server)')
    // A day given to --until is that whole day, so --since D --until D is the day D.
    const day = narrowed.recent_events[0].created_at!.slice(0, 10)
    const ofTheDay = await runJarvis(['memory', 'list', '--dir', root, '--json', '--since', day, '--until', day], {env})
    expect(envelope<{events: {event_id: string}[]}>(ofTheDay).result!.events.map((e) => e.event_id)).toContain(projectId)
    const reversed = await runJarvis(['memory', 'list', '--dir', root, '--json', '--since', day, '--until', '2000-01-01'], {env})
    expect(reversed.code).toBe(2)
    expect(envelope(reversed).error!.message).toMatch(/^--since \d{4}-\d{2}-\d{2} is not before --until 2000-01-01/)
  })

  it('server down → exit 3 saying what to fix, never the cache; --offline shows the cache labelled with its age', async () => {
    const {url} = await serve()
    await initTree(root, {server: url, agent: 'gemini'})
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.gemini})

    const none = await runJarvis(['memory', 'snapshot', '--dir', root, '--offline', '--json'], {env})
    expect(none.code).toBe(3)
    expect(envelope(none).error!.message).toMatch(/no cached snapshot/)

    const id = await append(env, '--dir', root, '--kind', 'fact', '--key', 'fact:cache_me', '--content', 'Cached fact.')
    const online = await runJarvis(['memory', 'snapshot', '--dir', root, '--json'], {env})
    expect(online.code, online.stderr).toBe(0)
    const current = envelope<SnapshotJson>(online).result!
    const cache = JSON.parse(await readFile(join(root, '.nexus', 'snapshot-cache.json'), 'utf8'))
    expect(cache).toMatchObject({agent_id: 'gemini', snapshot: {snapshot_id: current.snapshot_id}})

    await server!.close()
    server = undefined
    const down = await runJarvis(['memory', 'snapshot', '--dir', root, '--json'], {env})
    expect(down.code).toBe(3)
    const error = envelope(down)
    expect(error.error!.code).toBe('UNREACHABLE')
    expect(error.error!.message).toMatch(/the shared memory cannot be read, so nothing is shown/)
    expect(error.error!.message).toMatch(/server is running/)
    expect(error).not.toHaveProperty('result')
    const downHuman = await runJarvis(['memory', 'snapshot', '--dir', root], {env})
    expect(downHuman.code).toBe(3)
    expect(downHuman.stdout).toBe('')
    expect(downHuman.stderr).toMatch(/--offline/)

    const offline = await runJarvis(['memory', 'snapshot', '--dir', root, '--offline', '--json'], {env})
    expect(offline.code, offline.stderr).toBe(0)
    const cached = envelope<SnapshotJson>(offline)
    expect(cached.result!.snapshot_id).toBe(current.snapshot_id)
    expect(cached.result!.recent_events.map((e) => e.event_id)).toContain(id)
    expect(cached.result!.cached).toMatchObject({at: cache.cached_at})
    expect(cached.warnings.join('\n')).toMatch(/cached .* ago .*not current/)

    // An older cache says how old.
    await writeFile(join(root, '.nexus', 'snapshot-cache.json'), JSON.stringify({...cache, cached_at: new Date(Date.now() - 3 * 3600_000 - 60_000).toISOString()}))
    const human = await runJarvis(['memory', 'snapshot', '--dir', root, '--offline'], {env})
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toMatch(/CACHED SNAPSHOT — taken 3 h ago .* NOT CURRENT/)
    expect(human.stderr).toMatch(/cached 3 h ago .* not current/)
  })

  it('a refused token is exit 3 too, and says to fix JARVIS_TOKEN', async () => {
    const {url} = await serve()
    const run = await runJarvis(['memory', 'snapshot', '--json'], {cwd: root, env: agentEnv(root, url, 'claude', {JARVIS_TOKEN: 'not-a-token'})})
    expect(run.code).toBe(3)
    expect(envelope(run).error!.message).toMatch(/JARVIS_TOKEN/)
  })

  it('private scopes: gemini cannot read agent:claude (list exit 2, snapshot exit 3), and never sees claude’s private events', async () => {
    const {url} = await serve()
    const claude = agentEnv(root, url, 'claude')
    const gemini = agentEnv(root, url, 'gemini')
    const secretPlan = await append(claude, '--kind', 'todo', '--key', 'todo:private_plan', '--scope', 'agent:claude', '--content', 'Refactor the zebra module first.')
    await append(claude, '--kind', 'fact', '--key', 'fact:shared', '--content', 'The zebra module is shared.')

    const list = await runJarvis(['memory', 'list', '--json', '--scope', 'agent:claude'], {cwd: root, env: gemini})
    expect(list.code).toBe(2)
    expect(envelope(list).error!.message).toMatch(/gemini cannot read agent:claude/)

    const snapshot = await runJarvis(['memory', 'snapshot', '--json', '--scopes', 'global,agent:claude'], {cwd: root, env: gemini})
    expect(snapshot.code).toBe(3)
    expect(envelope(snapshot).error!.message).toMatch(/private/)

    const all = await runJarvis(['memory', 'list', '--json'], {cwd: root, env: gemini})
    expect(all.code, all.stderr).toBe(0)
    const seen = envelope<ListJson>(all).result!.events.map((e) => e.event_id)
    expect(seen).not.toContain(secretPlan)
    expect(seen.length).toBe(1)

    const search = await runJarvis(['memory', 'search', 'zebra', '--json'], {cwd: root, env: gemini})
    expect(search.code, search.stderr).toBe(0)
    expect(envelope<{events: ListJson}>(search).result!.events.events.map((e) => e.dedupe_key)).toEqual(['fact:shared'])

    const own = await runJarvis(['memory', 'list', '--json', '--scope', 'agent:claude'], {cwd: root, env: claude})
    expect(own.code, own.stderr).toBe(0)
    expect(envelope<ListJson>(own).result!.events.map((e) => e.event_id)).toEqual([secretPlan])
  })

  it('search finds both the memory files of the tree and the events of the shared log', async () => {
    const {url} = await serve()
    await initTree(root, {server: url, agent: 'claude'})
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})
    await append(env, '--kind', 'decision', '--key', 'decision:kestrel', '--content', 'Kestrel replaces the old queue.')
    const write = await runJarvis(['memory', 'write', 'projects/kestrel/summary.md', '--title', 'Kestrel rollout'], {cwd: root, env, input: 'The kestrel queue ships on Monday.\n'})
    expect(write.code, write.stderr).toBe(0)
    const search = await runJarvis(['memory', 'search', 'kestrel', '--json'], {cwd: root, env})
    expect(search.code, search.stderr).toBe(0)
    const result = envelope<{files: {hits: {path: string}[]}; events: ListJson}>(search).result!
    expect(result.files.hits.map((h) => h.path)).toEqual(['projects/kestrel/summary.md'])
    expect(result.events.events.map((e) => e.dedupe_key)).toEqual(['decision:kestrel'])

    // A question longer than a server searches (a pasted paragraph): an answer all the same, not a refusal. The log
    // is searched for its first words (each must match, so here none does), the files for all of them.
    const long = `kestrel ${'when does the queue ship and who owns it '.repeat(20)}monday`
    expect(long.length).toBeGreaterThan(800)
    const pasted = await runJarvis(['memory', 'search', long, '--json'], {cwd: root, env})
    expect(pasted.code, pasted.stderr).toBe(0)
    const answer = envelope<{files: {hits: {path: string}[]}; events: ListJson; notes: string[]}>(pasted).result!
    expect(answer.events.events).toEqual([])
    expect(answer.files.hits.map((h) => h.path)).toContain('projects/kestrel/summary.md')
    expect(answer.notes).toContainEqual(expect.stringMatching(/^the shared event log was searched for the first 4\d\d characters of the query/))
  })

  it('list and search filter by scope, kind, key, author and time; human output is a compact table', async () => {
    const {url} = await serve()
    const claude = agentEnv(root, url, 'claude')
    await append(claude, '--kind', 'decision', '--key', 'decision:db', '--content', 'Use Postgres for the ledger.')
    await append(claude, '--kind', 'bug', '--key', 'bug:flaky_ci', '--scope', 'project:demo', '--content', 'CI flakes on the ledger tests.')
    await append(agentEnv(root, url, 'chatgpt'), '--kind', 'fact', '--key', 'fact:team', '--content', 'The ledger team owns billing.')

    const byKind = await runJarvis(['memory', 'list', '--json', '--kind', 'bug'], {cwd: root, env: claude})
    expect(envelope<ListJson>(byKind).result!.events.map((e) => e.dedupe_key)).toEqual(['bug:flaky_ci'])
    const byScope = await runJarvis(['memory', 'list', '--json', '--scope', 'project:demo'], {cwd: root, env: claude})
    expect(envelope<ListJson>(byScope).result!.events.map((e) => e.dedupe_key)).toEqual(['bug:flaky_ci'])
    const byKey = await runJarvis(['memory', 'list', '--json', '--key', 'decision:db'], {cwd: root, env: claude})
    expect(envelope<ListJson>(byKey).result!.events.map((e) => e.dedupe_key)).toEqual(['decision:db'])
    // --agent is the author here, not who asks (JARVIS_AGENT is claude).
    const byAuthor = await runJarvis(['memory', 'list', '--json', '--agent', 'chatgpt'], {cwd: root, env: claude})
    expect(envelope<ListJson>(byAuthor).result!.events.map((e) => e.agent_id)).toEqual(['chatgpt'])
    const recent = await runJarvis(['memory', 'list', '--json', '--since', '1h', '--limit', '2'], {cwd: root, env: claude})
    const limited = envelope<ListJson>(recent).result!
    expect(limited.events).toHaveLength(2)
    expect(limited.total).toBe(3)
    const future = await runJarvis(['memory', 'list', '--json', '--since', '2999-01-01'], {cwd: root, env: claude})
    expect(envelope<ListJson>(future).result!.events).toEqual([])

    const badSince = await runJarvis(['memory', 'list', '--json', '--since', 'yesterday'], {cwd: root, env: claude})
    expect(badSince.code).toBe(2)
    expect(envelope(badSince).error!.message).toMatch(/--since/)

    const search = await runJarvis(['memory', 'search', 'ledger', '--json', '--kind', 'decision'], {cwd: root, env: claude})
    expect(search.code, search.stderr).toBe(0)
    expect(envelope<{events: ListJson}>(search).result!.events.events.map((e) => e.dedupe_key)).toEqual(['decision:db'])

    const table = await runJarvis(['memory', 'list'], {cwd: root, env: claude})
    expect(table.code, table.stderr).toBe(0)
    const lines = table.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^TIME\s+SCOPE\s+KIND\s+KEY\s+AGENT/)
    expect(lines).toHaveLength(5)
    expect(lines[4]).toBe('3 event(s)')
  })
})
