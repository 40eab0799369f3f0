import {spawn, spawnSync} from 'node:child_process'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {initTree, readAudit} from '../../src/store/index.js'
import {envelope, jarvisBin, runJarvis} from '../helpers/cli.js'
import {removeAll, startTestServer, storageFlags, tempDir, TOKENS, type TestServer} from '../helpers/world.js'
import {agentEnv, cleanEnv, eventsOnServer} from './memory-helpers.js'

/** util-linux `script` gives the command a pseudo-terminal: the only way to test a y/N question for real. */
const hasScript = process.platform === 'linux' && spawnSync('script', ['--version'], {stdio: 'ignore'}).status === 0

function quote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`
}

/** Runs jarvis on a terminal (stdin and stdout are TTYs), typing `typed`. */
function runOnTerminal(args: string[], env: NodeJS.ProcessEnv, typed: string): Promise<{code: number | null; output: string}> {
  return new Promise((resolve, reject) => {
    const command = [process.execPath, jarvisBin, ...args].map(quote).join(' ')
    const child = spawn('script', ['-qec', command, '/dev/null'], {env: {...process.env, NO_COLOR: '1', ...env}, stdio: ['pipe', 'pipe', 'pipe']})
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({code, output}))
    child.stdin.end(typed)
  })
}

interface ConsolidateJson {
  changed: boolean
  pinned: number
  ttl_candidates: number
  conflicts: {scope: string; dedupe_key: string; event_ids: string[]; resolution_event_id: string | null}[]
  masked: {event_id: string}[]
  audited: boolean
}

interface CleanupJson {
  dry_run: boolean
  candidates: {event_id: string; reason?: string}[]
  deleted: string[]
  approved_by: string | null
  audited: boolean
}

describe('jarvis memory consolidate and cleanup', () => {
  const dirs: string[] = []
  let server: TestServer
  let root: string

  beforeEach(async () => {
    root = await tempDir('jarvis-janitor-')
    server = await startTestServer()
    dirs.push(root, server.dataDir)
  })
  afterEach(async () => {
    await server.close()
    await removeAll(dirs.splice(0))
  })

  async function append(env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> {
    const run = await runJarvis(['memory', 'append', '--json', ...args], {cwd: root, env})
    expect(run.code, run.stdout + run.stderr).toBe(0)
    return envelope<{event_id: string}>(run).result!.event_id
  }

  it('consolidate reports a conflict with its resolution event, audits it in the tree; a second run changes nothing', async () => {
    await initTree(root, {server: server.url, agent: 'claude'})
    const claude = cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})
    const a = await append(claude, '--dir', root, '--kind', 'decision', '--key', 'decision:db', '--content', 'Use Postgres.')
    const b = await append(agentEnv(root, server.url, 'gemini'), '--kind', 'decision', '--key', 'decision:db', '--content', 'Use SQLite.')

    const first = await runJarvis(['memory', 'consolidate', '--dir', root, '--json'], {env: claude})
    expect(first.code, first.stderr).toBe(0)
    const report = envelope<ConsolidateJson>(first).result!
    expect(report.changed).toBe(true)
    expect(report.conflicts).toHaveLength(1)
    expect(report.conflicts[0]).toMatchObject({scope: 'global', dedupe_key: 'decision:db'})
    expect([...report.conflicts[0].event_ids].sort()).toEqual([a, b].sort())
    expect(report.conflicts[0].resolution_event_id).toEqual(expect.any(String))
    expect(report.audited).toBe(true)

    const audit = (await readAudit(root)).filter((entry) => entry.type === 'conflict')
    expect(audit).toHaveLength(1)
    expect(audit[0]).toMatchObject({dedupe_key: 'decision:db', resolution_event_id: report.conflicts[0].resolution_event_id})

    const second = await runJarvis(['memory', 'consolidate', '--dir', root, '--json'], {env: claude})
    expect(second.code, second.stderr).toBe(0)
    expect(envelope<ConsolidateJson>(second).result!).toMatchObject({changed: false, conflicts: [], masked: []})
    expect((await readAudit(root)).filter((entry) => entry.type === 'conflict')).toHaveLength(1)

    const human = await runJarvis(['memory', 'consolidate', '--dir', root], {env: claude})
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toMatch(/nothing changed/)
    expect(human.stdout).toMatch(/pinned \d+/)
    expect(human.stdout).toMatch(/TTL candidates \d+/)
    expect(human.stdout).toMatch(/conflicts 0/)
    expect(human.stdout).toMatch(/masked 0/)
  })

  it('consolidate works outside a tree (CI: --server and JARVIS_TOKEN), without an audit log', async () => {
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.openclaw})
    const run = await runJarvis(['memory', 'consolidate', '--server', server.url, '--json'], {cwd: root, env})
    expect(run.code, run.stderr).toBe(0)
    expect(envelope<ConsolidateJson>(run).result!).toMatchObject({audited: false, changed: false})
  })

  it('consolidate with a CI job key flags a conflict that every agent can still read', async () => {
    const key = await runJarvis(['serve', 'token', 'create', '--agent', 'ci-bot', '--json', ...storageFlags(server)], {env: cleanEnv(root)})
    expect(key.code, key.stderr).toBe(0)
    const ci = cleanEnv(root, {JARVIS_TOKEN: envelope<{token: string}>(key).result!.token, CI: 'true'})
    await append(agentEnv(root, server.url, 'claude'), '--kind', 'decision', '--key', 'decision:db', '--content', 'Use Postgres.')
    await append(agentEnv(root, server.url, 'gemini'), '--kind', 'decision', '--key', 'decision:db', '--content', 'Use SQLite.')
    const run = await runJarvis(['memory', 'consolidate', '--server', server.url, '--json'], {cwd: root, env: ci})
    expect(run.code, run.stderr).toBe(0)
    expect(envelope<ConsolidateJson>(run).result!.conflicts).toEqual([expect.objectContaining({dedupe_key: 'decision:db', resolution_event_id: expect.any(String)})])
    const snapshot = await runJarvis(['memory', 'snapshot', '--server', server.url, '--agent', 'claude', '--json'], {cwd: root, env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})
    expect(snapshot.code, snapshot.stderr).toBe(0)
    const flag = envelope<{recent_events: {kind: string; agent_id: string; source: Record<string, unknown>}[]}>(snapshot).result!.recent_events.find((e) => e.kind === 'conflict_resolution')
    // Written as one of the agents that disagree (the log knows four agents), naming the key that asked for it.
    expect(flag).toMatchObject({agent_id: 'claude', source: {consolidated_by: 'ci-bot', conflict_key: 'decision:db'}})
  })

  it('cleanup: needs a person’s approval — no terminal and no --yes → exit 2 and nothing deleted; --dry-run lists; --yes deletes and audits', async () => {
    await initTree(root, {server: server.url, agent: 'claude'})
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})
    const old = await append(env, '--dir', root, '--kind', 'config', '--key', 'config:port', '--scope', 'agent:claude', '--content', 'Port 8080.')
    const current = await append(env, '--dir', root, '--kind', 'config', '--key', 'config:port', '--scope', 'agent:claude', '--supersedes', old, '--content', 'Port 8787.')

    const refused = await runJarvis(['memory', 'cleanup', '--dir', root, '--older-than', '0d', '--scope', 'agent:*', '--json'], {env})
    expect(refused.code).toBe(2)
    expect(envelope(refused).error!.message).toMatch(/--yes/)
    expect((await eventsOnServer(server.url, 'claude')).map((e) => e.event_id)).toContain(old)

    const dry = await runJarvis(['memory', 'cleanup', '--dir', root, '--older-than', '0d', '--scope', 'agent:*', '--dry-run', '--json'], {env})
    expect(dry.code, dry.stderr).toBe(0)
    const listed = envelope<CleanupJson>(dry).result!
    expect(listed.candidates.map((c) => c.event_id)).toEqual([old])
    expect(listed.deleted).toEqual([])
    const dryHuman = await runJarvis(['memory', 'cleanup', '--dir', root, '--older-than', '0d', '--dry-run'], {env})
    expect(dryHuman.code, dryHuman.stderr).toBe(0)
    expect(dryHuman.stdout).toContain(old)
    expect(dryHuman.stdout).toMatch(/dry run: nothing was deleted/)
    expect((await eventsOnServer(server.url, 'claude')).map((e) => e.event_id)).toContain(old)
    expect((await readAudit(root)).filter((e) => e.type === 'delete')).toEqual([])

    const yes = await runJarvis(['memory', 'cleanup', '--dir', root, '--older-than', '0d', '--scope', 'agent:*', '--yes', '--json'], {env})
    expect(yes.code, yes.stderr).toBe(0)
    expect(envelope<CleanupJson>(yes).result!).toMatchObject({deleted: [old], approved_by: '--yes', audited: true})
    const remaining = (await eventsOnServer(server.url, 'claude')).map((e) => e.event_id)
    expect(remaining).not.toContain(old)
    expect(remaining).toContain(current)
    const deletions = (await readAudit(root)).filter((e) => e.type === 'delete')
    expect(deletions).toHaveLength(1)
    expect(deletions[0]).toMatchObject({event_id: old, approved_by: '--yes', via: 'jarvis memory cleanup'})

    const nothing = await runJarvis(['memory', 'cleanup', '--dir', root, '--older-than', '0d'], {env})
    expect(nothing.code, nothing.stderr).toBe(0)
    expect(nothing.stdout).toMatch(/nothing to clean up/)
  })

  it.skipIf(!hasScript)('cleanup on a terminal asks y/N: "n" deletes nothing, "y" deletes and audits', async () => {
    await initTree(root, {server: server.url, agent: 'gemini'})
    const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS.gemini})
    const old = await append(env, '--dir', root, '--kind', 'fact', '--key', 'fact:office', '--content', 'Office on floor 3.')
    await append(env, '--dir', root, '--kind', 'fact', '--key', 'fact:office', '--supersedes', old, '--content', 'Office on floor 5.')

    const no = await runOnTerminal(['memory', 'cleanup', '--dir', root, '--older-than', '0d'], env, 'n\n')
    expect(no.code, no.output).toBe(0)
    expect(no.output).toMatch(/Delete these 1 event\(s\) from the shared memory\? \[y\/N\]/)
    expect(no.output).toMatch(/not approved: nothing was deleted/)
    expect((await eventsOnServer(server.url, 'gemini')).map((e) => e.event_id)).toContain(old)

    const yes = await runOnTerminal(['memory', 'cleanup', '--dir', root, '--older-than', '0d'], env, 'y\n')
    expect(yes.code, yes.output).toBe(0)
    expect(yes.output).toMatch(/deleted \(approved by prompt\) 1 event/)
    expect((await eventsOnServer(server.url, 'gemini')).map((e) => e.event_id)).not.toContain(old)
    expect((await readAudit(root)).filter((e) => e.type === 'delete')).toEqual([expect.objectContaining({event_id: old, approved_by: 'prompt'})])
  })

  it('cleanup: a bad duration exits 2', async () => {
    const env = agentEnv(root, server.url, 'claude')
    for (const bad of ['30', 'thirty days', '30x', '-1d']) {
      const run = await runJarvis(['memory', 'cleanup', '--older-than', bad, '--json'], {cwd: root, env})
      expect(run.code, bad).toBe(2)
      expect(envelope(run).error!.message).toMatch(/--older-than/)
    }
  })
})
