import {readFile, writeFile} from 'node:fs/promises'
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {appendOutbox, initTree, readOutbox, removeFromOutbox} from '../../src/store/index.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {removeAll, startTestServer, tempDir, TOKENS, type TestServer} from '../helpers/world.js'
import {agentEnv, cleanEnv, closedPort, eventsOnServer, fakeGithubToken} from './memory-helpers.js'

interface AppendJson {
  agent_id: string
  run_id: string
  event_id?: string
  status?: 'created' | 'duplicate'
  events: {event_id: string; status: string; dedupe_key: string; scope: string}[]
  warnings: string[]
}

describe('jarvis memory append', () => {
  const dirs: string[] = []
  let server: TestServer | undefined
  let root: string

  beforeEach(async () => {
    root = await tempDir('jarvis-append-')
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

  it('appends an event and answers its id and status; the same event again (same run) is a duplicate', async () => {
    const {url} = await serve()
    await initTree(root, {server: url, agent: 'claude', project: 'demo'})
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude, JARVIS_RUN_ID: 'run-append-1'})
    const args = ['memory', 'append', '--dir', root, '--json', '--kind', 'decision', '--key', 'decision:memory_ssot', '--content', 'The gateway is the single source of truth (since 2026-02-02).']
    const first = await runJarvis(args, {env})
    expect(first.code, first.stderr).toBe(0)
    const created = envelope<AppendJson>(first)
    expect(created.result).toMatchObject({agent_id: 'claude', run_id: 'run-append-1', status: 'created'})
    expect(created.result!.event_id).toEqual(expect.any(String))

    const again = await runJarvis(args, {env})
    expect(again.code, again.stderr).toBe(0)
    expect(envelope<AppendJson>(again).result).toMatchObject({status: 'duplicate', event_id: created.result!.event_id})

    const stored = await eventsOnServer(url, 'claude', {dedupe_key: 'decision:memory_ssot'})
    expect(stored).toHaveLength(1)
    expect(stored[0]).toMatchObject({agent_id: 'claude', run_id: 'run-append-1', scope: 'global', confidence: 'high', ttl_days: 0, source: {system: 'cli'}})

    // Human output, --content - from stdin, and a scope, confidence and TTL from the flags.
    const human = await runJarvis(
      ['memory', 'append', '--dir', root, '--kind', 'bug', '--key', 'bug:gateway_401', '--scope', 'project:demo', '--confidence', 'med', '--ttl-days', '90', '--content', '-'],
      {env, input: 'Gateway answers 401 after key rotation.\n'},
    )
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toMatch(/appended bug bug:gateway_401 to project:demo: event \S+ \(created\)/)
    const [bug] = await eventsOnServer(url, 'claude', {dedupe_key: 'bug:gateway_401'})
    expect(bug).toMatchObject({scope: 'project:demo', confidence: 'med', ttl_days: 90, content_md: 'Gateway answers 401 after key rotation.'})
  })

  it('server warnings (a lower-confidence replacement) land in the --json envelope', async () => {
    const {url} = await serve()
    const env = agentEnv(root, url, 'claude')
    const high = await runJarvis(['memory', 'append', '--json', '--kind', 'config', '--key', 'config:region', '--content', 'Region is eu-west-1.'], {cwd: root, env})
    expect(high.code, high.stderr).toBe(0)
    const low = await runJarvis(['memory', 'append', '--json', '--kind', 'config', '--key', 'config:region', '--confidence', 'low', '--content', 'Region might be us-east-1.'], {
      cwd: root,
      env: agentEnv(root, url, 'gemini'),
    })
    expect(low.code, low.stderr).toBe(0)
    const result = envelope<AppendJson>(low)
    expect(result.warnings.length).toBeGreaterThan(0)
    expect(result.warnings.join('\n')).toMatch(/confidence/i)
    expect(result.result!.warnings).toEqual(result.warnings)
  })

  it('a secret is refused before anything is sent: exit 5 naming kind, field, line and column, never the secret', async () => {
    const {url} = await serve()
    await initTree(root, {server: url, agent: 'claude'})
    const secret = fakeGithubToken()
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})
    const content = `Deploy notes.\nThe bot token is ${secret} for now.`
    const run = await runJarvis(['memory', 'append', '--dir', root, '--json', '--kind', 'config', '--key', 'config:bot_token', '--content', content], {env})
    expect(run.code).toBe(5)
    const error = envelope(run).error!
    expect(error.code).toBe('SECRET_REFUSED')
    expect(error.message).toMatch(/content_md/)
    expect(error.message).toMatch(/line 2, column \d+/)
    expect(run.stdout + run.stderr).not.toContain(secret)

    const human = await runJarvis(['memory', 'append', '--dir', root, '--kind', 'config', '--key', 'config:bot_token', '--content', content], {env})
    expect(human.code).toBe(5)
    expect(human.stderr).toMatch(/content_md/)
    expect(human.stdout + human.stderr).not.toContain(secret)

    // Personal data too, and from a file.
    const file = join(root, 'pii.json')
    // Not a reserved example domain (those are allowed); built at run time.
    const address = `j.doe${Math.floor(Math.random() * 1e6)}@acme-widgets.io`
    await writeFile(file, JSON.stringify({kind: 'fact', dedupe_key: 'fact:owner', content_md: `Owner: ${address}`}))
    const pii = await runJarvis(['memory', 'append', '--dir', root, '--json', '--from-file', file], {env})
    expect(pii.code).toBe(5)
    expect(envelope(pii).error!.message).toMatch(/e-mail address in content_md at line 1, column 8/)
    expect(pii.stdout + pii.stderr).not.toContain(address)

    expect(await eventsOnServer(url, 'claude')).toEqual([])
    expect(await readOutbox(root)).toEqual([])
  })

  it('offline: queues the event (exit 3), the next sync delivers it once, and a replayed entry is not stored twice', async () => {
    const port = await closedPort()
    await initTree(root, {server: `http://127.0.0.1:${port}`, agent: 'gemini', project: 'demo'})
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.gemini})
    const offline = await runJarvis(['memory', 'append', '--dir', root, '--json', '--kind', 'todo', '--key', 'todo:rotate_keys', '--content', 'Rotate the staging keys.'], {env})
    expect(offline.code).toBe(3)
    const error = envelope(offline).error!
    expect(error.code).toBe('UNREACHABLE')
    expect(error.message).toMatch(/queued in \.nexus\/outbox\.jsonl.*next `jarvis sync`/s)
    expect(error.data).toMatchObject({queued: true, kind: 'memory-event'})
    const outbox = await readOutbox(root)
    expect(outbox).toHaveLength(1)
    expect(outbox[0]).toMatchObject({id: error.data!.id, kind: 'memory-event', payload: {agent_id: 'gemini', dedupe_key: 'todo:rotate_keys', scope: 'global'}})

    const human = await runJarvis(['memory', 'append', '--dir', root, '--kind', 'todo', '--key', 'todo:renew_cert', '--content', 'Renew the certificate.'], {env})
    expect(human.code).toBe(3)
    expect(human.stderr).toMatch(/queued in \.nexus\/outbox\.jsonl/)

    const {url} = await serve()
    // A dry run sends nothing and says what the sync would send first.
    const dry = await runJarvis(['sync', '--dir', root, '--server', url, '--dry-run'], {env})
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toContain('would send 2 queued write(s) made while the server was away')
    expect(dry.stdout).not.toContain('already in sync')
    expect(await readOutbox(root)).toHaveLength(2)
    const sync = await runJarvis(['sync', '--dir', root, '--server', url, '--json'], {env})
    expect(sync.code, sync.stdout + sync.stderr).toBe(0)
    expect(envelope<{outbox: {sent: number; left: number}}>(sync).result!.outbox).toEqual({sent: 2, left: 0})
    expect(await readOutbox(root)).toEqual([])
    expect(await eventsOnServer(url, 'gemini', {dedupe_key: 'todo:rotate_keys'})).toHaveLength(1)
    expect(await eventsOnServer(url, 'gemini', {dedupe_key: 'todo:renew_cert'})).toHaveLength(1)

    // Another agent's private scope is refused before anything is sent or queued: queued, it would wait for good.
    const foreign = await runJarvis(['memory', 'append', '--dir', root, '--server', `http://127.0.0.1:${port}`, '--kind', 'fact', '--key', 'fact:theirs', '--content', 'x', '--scope', 'agent:claude'], {env})
    expect(foreign.code).toBe(2)
    expect(foreign.stderr).toContain("scope agent:claude: another agent's private scope, which gemini may not write")
    expect(await readOutbox(root)).toEqual([])
    // One the server refuses all the same (here: written by hand) is kept, and the sync says why it waits.
    await appendOutbox(root, {id: 'refused-1', kind: 'memory-event', createdAt: new Date().toISOString(), payload: {...outbox[0].payload as object, scope: 'agent:claude'}})
    const kept = await runJarvis(['sync', '--dir', root, '--server', url], {env})
    expect(kept.code, kept.stderr).toBe(0)
    expect(kept.stdout).toContain('1 queued write(s) still waiting: 1 refused by the server, kept for you (why: .nexus/audit.jsonl)')
    await removeFromOutbox(root, ['refused-1'])

    // A crash between sending and removing leaves the entry behind: sending it again stores nothing new.
    await appendOutbox(root, outbox[0])
    const replay = await runJarvis(['sync', '--dir', root, '--server', url, '--json'], {env})
    expect(replay.code, replay.stdout + replay.stderr).toBe(0)
    expect(envelope<{outbox: {sent: number; left: number}}>(replay).result!.outbox).toEqual({sent: 1, left: 0})
    const second = await runJarvis(['sync', '--dir', root, '--server', url, '--json'], {env})
    expect(envelope<{outbox: {sent: number; left: number}}>(second).result!.outbox).toEqual({sent: 0, left: 0})
    expect(await eventsOnServer(url, 'gemini', {dedupe_key: 'todo:rotate_keys'})).toHaveLength(1)
  })

  it('a server that fails while appending (500): exit 3, nothing queued, and how to learn and retry safely', async () => {
    // A stand-in for a server failing mid-append, which a healthy jarvis serve never does on purpose.
    const failing = createServer((_request, response) => response.writeHead(500, {'content-type': 'application/json'}).end('{"error":"internal","message":"internal error"}'))
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(failing.address() as AddressInfo).port}`
      await initTree(root, {server: url, agent: 'gemini'})
      const run = await runJarvis(['memory', 'append', '--dir', root, '--json', '--kind', 'fact', '--key', 'fact:deploy_day', '--content', 'Deploys happen on Tuesdays.'], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.gemini})})
      expect(run.code).toBe(3)
      const error = envelope(run).error!
      expect(error.message).toContain('whether the event was stored (fact:deploy_day) is not known: `jarvis memory list --key fact:deploy_day` shows it')
      expect(error.message).toContain(`run the same command with JARVIS_RUN_ID=${error.data!.run_id as string}`)
      expect(await readOutbox(root)).toEqual([])
    } finally {
      await new Promise((resolve) => failing.close(resolve))
    }
  })

  it('offline, pointed at another server than the tree\'s: exit 3 and nothing queued, for the next sync would send it to the tree\'s server', async () => {
    const [own, other] = [`http://127.0.0.1:${await closedPort()}`, `http://127.0.0.1:${await closedPort()}`]
    await initTree(root, {server: own, agent: 'gemini'})
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.gemini})
    const append = await runJarvis(['memory', 'append', '--dir', root, '--server', other, '--json', '--kind', 'fact', '--key', 'fact:elsewhere', '--content', 'x'], {env})
    expect(append.code).toBe(3)
    expect(envelope(append).error).toMatchObject({data: {queued: false}, message: expect.stringContaining(`nothing was queued: this tree's outbox goes to ${own} at the next \`jarvis sync\`, not to ${other}`)})
    const task = await runJarvis(['task', 'complete', '--dir', root, '--server', `${other}/`, '--type', 'review'], {env})
    expect(task.code).toBe(3)
    expect(task.stderr).toContain('nothing was queued')
    expect(await readOutbox(root)).toEqual([])
    // Its own server, named with --server, queues as before.
    const queued = await runJarvis(['memory', 'append', '--dir', root, '--server', own, '--kind', 'fact', '--key', 'fact:here', '--content', 'x'], {env})
    expect(queued.code).toBe(3)
    expect(await readOutbox(root)).toHaveLength(1)
  })

  it('offline outside a tree: exit 3, nothing queued, and it says so', async () => {
    const port = await closedPort()
    const run = await runJarvis(['memory', 'append', '--json', '--kind', 'fact', '--key', 'fact:x', '--content', 'x'], {cwd: root, env: agentEnv(root, `http://127.0.0.1:${port}`, 'claude')})
    expect(run.code).toBe(3)
    expect(envelope(run).error!.message).toMatch(/nothing was queued/)
  })

  it('a batch from a file: up to 7 events are appended; 8 is refused with exit 2 and nothing is sent', async () => {
    const {url} = await serve()
    await initTree(root, {server: url, agent: 'openclaw'})
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.openclaw})
    const event = (i: number) => ({kind: 'fact', dedupe_key: `fact:batch_${i}`, content_md: `Fact number ${i}.`})
    const file = join(root, 'events.json')

    await writeFile(file, JSON.stringify(Array.from({length: 8}, (_, i) => event(i))))
    const eight = await runJarvis(['memory', 'append', '--dir', root, '--json', '--from-file', file], {env})
    expect(eight.code).toBe(2)
    expect(envelope(eight).error!.message).toMatch(/8 events in one run.*at most 7/)
    expect(await eventsOnServer(url, 'openclaw')).toEqual([])

    await writeFile(file, JSON.stringify(Array.from({length: 3}, (_, i) => event(i))))
    const three = await runJarvis(['memory', 'append', '--dir', root, '--json', '--from-file', file], {env})
    expect(three.code, three.stderr).toBe(0)
    const result = envelope<AppendJson>(three).result!
    expect(result.events.map((e) => e.dedupe_key)).toEqual(['fact:batch_0', 'fact:batch_1', 'fact:batch_2'])
    expect(result.event_id).toBeUndefined()
    const stored = await eventsOnServer(url, 'openclaw')
    expect(stored).toHaveLength(3)
    expect(new Set(stored.map((e) => e.run_id)).size).toBe(1)

    // One event from stdin.
    const one = await runJarvis(['memory', 'append', '--dir', root, '--json', '--from-file', '-'], {env, input: JSON.stringify(event(9))})
    expect(one.code, one.stderr).toBe(0)
    expect(envelope<AppendJson>(one).result!.status).toBe('created')
  })

  it('bad input exits 2 naming the field; no agent, a bad file, an agent_id that is not ours', async () => {
    const {url} = await serve()
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude, JARVIS_SERVER: url})
    const base = ['memory', 'append', '--json', '--agent', 'claude']

    const badKey = await runJarvis([...base, '--kind', 'decision', '--key', 'CONFIG:FOO', '--content', 'x'], {cwd: root, env})
    expect(badKey.code).toBe(2)
    expect(envelope(badKey).error!.message).toMatch(/--key \(dedupe_key\): must be 1-64 characters/)

    const badKind = await runJarvis([...base, '--kind', 'opinion', '--key', 'k', '--content', 'x'], {cwd: root, env})
    expect(badKind.code).toBe(2)
    expect(envelope(badKind).error!.message).toMatch(/--kind/)

    const badScope = await runJarvis([...base, '--kind', 'fact', '--key', 'k', '--scope', 'team:x', '--content', 'x'], {cwd: root, env})
    expect(badScope.code).toBe(2)
    expect(envelope(badScope).error!.message).toMatch(/--scope/)

    const noContent = await runJarvis([...base, '--kind', 'fact', '--key', 'k'], {cwd: root, env})
    expect(noContent.code).toBe(2)
    expect(envelope(noContent).error!.message).toMatch(/--content is required/)

    const noAgent = await runJarvis(['memory', 'append', '--json', '--kind', 'fact', '--key', 'k', '--content', 'x'], {cwd: root, env})
    expect(noAgent.code).toBe(2)
    expect(envelope(noAgent).error!.message).toMatch(/--agent/)

    const file = join(root, 'bad.json')
    await writeFile(file, JSON.stringify([{kind: 'fact', dedupe_key: 'ok', content_md: 'fine'}, {kind: 'fact', dedupe_key: 'ok2', content_md: 'x', confidence: 'sure'}]))
    const badFile = await runJarvis([...base, '--from-file', file], {cwd: root, env})
    expect(badFile.code).toBe(2)
    expect(envelope(badFile).error!.message).toContain(`${file}: [1]: confidence:`)

    await writeFile(file, '[{"kind": "fact",\n  "dedupe_key": }]\n')
    const broken = await runJarvis(['memory', 'append', '--agent', 'claude', '--from-file', file], {cwd: root, env})
    expect(broken.code).toBe(2)
    expect(broken.stderr).toMatch(/line 2, column \d+/)
    expect(broken.stderr).not.toMatch(/\n\s+at /)

    await writeFile(file, JSON.stringify({agent_id: 'gemini', kind: 'fact', dedupe_key: 'k', content_md: 'x'}))
    const notOurs = await runJarvis([...base, '--from-file', file], {cwd: root, env})
    expect(notOurs.code).toBe(2)
    expect(envelope(notOurs).error!.message).toMatch(/agent_id is "gemini", but this command runs as "claude"/)

    const both = await runJarvis([...base, '--from-file', file, '--kind', 'fact'], {cwd: root, env})
    expect(both.code).toBe(2)

    // Writing into another agent's private scope: refused before anything is sent (a server would answer 403).
    const foreign = await runJarvis([...base, '--kind', 'fact', '--key', 'k', '--scope', 'agent:gemini', '--content', 'x'], {cwd: root, env})
    expect(foreign.code).toBe(2)
    expect(envelope(foreign).error).toMatchObject({message: expect.stringMatching(/^scope agent:gemini: another agent's private scope/), data: {field: 'scope'}})

    expect(await eventsOnServer(url, 'claude')).toEqual([])
    await expect(readFile(join(root, '.nexus', 'outbox.jsonl'), 'utf8')).rejects.toThrow()
  })
})
