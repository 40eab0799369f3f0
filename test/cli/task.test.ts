import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {MemoryClient} from '../../src/protocol/client.js'
import {workerMemorySchema} from '../../src/schemas/index.js'
import {initTree, readOutbox} from '../../src/store/index.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {removeAll, startTestServer, tempDir, TOKENS, type TestServer} from '../helpers/world.js'
import {closedPort} from './memory-helpers.js'

/** A port nothing listens on: bound by the OS, then released. */

/**
 * The environment of a command run: no user config. (runJarvis starts from process.env; an empty JARVIS_SERVER
 * would not unset it — settings.ts reads '' as a value — so a developer's own JARVIS_* must not be exported here.)
 */
function cleanEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {XDG_CONFIG_HOME: join(home, 'xdg'), ...extra}
}

async function workerMemoryOnServer(server: TestServer, agent: string) {
  const client = new MemoryClient({server: server.url, token: TOKENS[agent]})
  try {
    const pulled = await client.pull([`jarvis/${agent}.json`])
    const file = pulled.files[`jarvis/${agent}.json`]
    if (!file) return null
    return workerMemorySchema.parse(typeof file.content === 'string' ? JSON.parse(file.content) : file.content)
  } finally {
    await client.close()
  }
}

interface TaskJson {
  queued: false
  agentId: string
  taskId: string
  workerMemory: {workerId: string; recentTasks: {taskId: string; success: boolean; filesModified?: string[]; responseTime?: number}[]}
}

describe('jarvis task complete', () => {
  const dirs: string[] = []
  let server: TestServer | undefined
  let root: string

  beforeEach(async () => {
    root = await tempDir('jarvis-task-')
    dirs.push(root)
  })
  afterEach(async () => {
    await server?.close()
    server = undefined
    await removeAll(dirs.splice(0))
  })

  it('records the task on the server: the worker memory has it in recentTasks', async () => {
    server = await startTestServer()
    dirs.push(server.dataDir)
    await initTree(root, {server: server.url, agent: 'claude'})
    const run = await runJarvis(
      ['task', 'complete', '--dir', root, '--json', '--task-id', 'task-1', '--type', 'code-review', '--input', 'review PR 12', '--output', '2 issues',
        '--no-success', '--response-time', '5400', '--model', 'claude-sonnet', '--files-modified', 'src/a.ts', '--files-modified', 'src/b.ts'],
      {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})},
    )
    expect(run.code, run.stderr).toBe(0)
    const result = envelope<TaskJson>(run).result!
    expect(result).toMatchObject({queued: false, agentId: 'claude', taskId: 'task-1'})
    expect(result.workerMemory.recentTasks[0]).toMatchObject({taskId: 'task-1', success: false, responseTime: 5400, filesModified: ['src/a.ts', 'src/b.ts']})

    const stored = await workerMemoryOnServer(server, 'claude')
    expect(stored?.recentTasks.map((t) => t.taskId)).toContain('task-1')

    // Defaults: a new UUID, now, success; the agent from the environment this time.
    const second = await runJarvis(['task', 'complete', '--dir', root, '--json', '--type', 'test'], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude, JARVIS_AGENT: 'claude'})})
    expect(second.code, second.stderr).toBe(0)
    const task = envelope<TaskJson>(second).result!
    expect(task.taskId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(task.workerMemory.recentTasks.find((t) => t.taskId === task.taskId)?.success).toBe(true)
  })

  it('reads a whole task result from a file or stdin', async () => {
    server = await startTestServer()
    dirs.push(server.dataDir)
    await initTree(root, {server: server.url, agent: 'gemini'})
    const file = join(root, 'task.json')
    await writeFile(file, JSON.stringify({taskId: 'from-file', timestamp: '2026-02-02T10:00:00Z', type: 'refactor', success: true}))
    const fromFile = await runJarvis(['task', 'complete', '--dir', root, '--json', '--file', file], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.gemini})})
    expect(fromFile.code, fromFile.stderr).toBe(0)
    expect(envelope<TaskJson>(fromFile).result!.taskId).toBe('from-file')

    const input = JSON.stringify({taskId: 'from-stdin', timestamp: '2026-02-02T11:00:00+09:00', type: 'test', success: false})
    const fromStdin = await runJarvis(['task', 'complete', '--dir', root, '--json', '--file', '-'], {input, env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.gemini})})
    expect(fromStdin.code, fromStdin.stderr).toBe(0)
    const stored = await workerMemoryOnServer(server, 'gemini')
    expect(stored?.recentTasks.map((t) => t.taskId).sort()).toEqual(['from-file', 'from-stdin'])
  })

  it('offline: queues the task, exits 3 saying so, and the next sync sends it', async () => {
    const port = await closedPort()
    await initTree(root, {server: `http://127.0.0.1:${port}`, agent: 'claude'})
    const offline = await runJarvis(['task', 'complete', '--dir', root, '--json', '--task-id', 'offline-1', '--type', 'deploy'], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})
    expect(offline.code).toBe(3)
    const error = envelope(offline).error!
    expect(error.code).toBe('UNREACHABLE')
    expect(error.message).toMatch(/queued/)
    expect(error.data).toMatchObject({queued: true, kind: 'task-result', taskId: 'offline-1'})
    const outbox = await readOutbox(root)
    expect(outbox).toHaveLength(1)
    expect(outbox[0]).toMatchObject({id: error.data!.id, kind: 'task-result', payload: {taskId: 'offline-1', type: 'deploy', success: true, agentId: 'claude'}})

    const human = await runJarvis(['task', 'complete', '--dir', root, '--type', 'deploy'], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})
    expect(human.code).toBe(3)
    expect(human.stderr).toMatch(/queued in \.nexus\/outbox\.jsonl.*next `jarvis sync`/s)
    expect(await readOutbox(root)).toHaveLength(2)

    server = await startTestServer()
    dirs.push(server.dataDir)
    const sync = await runJarvis(['sync', '--dir', root, '--server', server.url, '--json'], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})
    expect(sync.code, sync.stdout + sync.stderr).toBe(0)
    expect(envelope<{outbox: {sent: number; left: number}}>(sync).result!.outbox).toEqual({sent: 2, left: 0})
    expect(await readOutbox(root)).toEqual([])
    const stored = await workerMemoryOnServer(server, 'claude')
    expect(stored?.recentTasks.map((t) => t.taskId)).toContain('offline-1')
    expect(stored?.recentTasks).toHaveLength(2)
  })

  it('a bad --file exits 2 naming the file and the field', async () => {
    await initTree(root, {server: 'http://127.0.0.1:9', agent: 'claude'})
    const file = join(root, 'bad-task.json')
    await writeFile(file, JSON.stringify({taskId: 'x', timestamp: 'yesterday', type: 'test', success: 'yes'}))
    const run = await runJarvis(['task', 'complete', '--dir', root, '--json', '--file', file], {env: cleanEnv(root)})
    expect(run.code).toBe(2)
    const message = envelope(run).error!.message
    expect(message).toContain(`${file}: timestamp:`)
    expect(message).toContain(`${file}: success:`)

    await writeFile(file, '{"taskId": "x",\n  "type": }\n')
    const broken = await runJarvis(['task', 'complete', '--dir', root, '--file', file], {env: cleanEnv(root)})
    expect(broken.code).toBe(2)
    expect(broken.stderr).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: line 2, column \\d+`))
    expect(broken.stderr).not.toMatch(/\n\s+at /) // no stack trace

    expect(await readOutbox(root)).toEqual([])
  })

  it('exits 2 without an agent, and without --type', async () => {
    await initTree(root, {server: 'http://127.0.0.1:9'})
    const noAgent = await runJarvis(['task', 'complete', '--dir', root, '--json', '--type', 'test'], {env: cleanEnv(root)})
    expect(noAgent.code).toBe(2)
    expect(envelope(noAgent).error!.message).toMatch(/--agent/)

    const noType = await runJarvis(['task', 'complete', '--dir', root, '--json', '--agent', 'claude'], {env: cleanEnv(root)})
    expect(noType.code).toBe(2)
    expect(envelope(noType).error!.message).toMatch(/--type/)
  })

  it('a usage error (--file with a field flag) exits 2', async () => {
    // Needs package.json oclif.exitCodes to map oclif's parse errors to 2 (only `default: 1` is set there).
    const both = await runJarvis(['task', 'complete', '--dir', root, '--json', '--agent', 'claude', '--type', 'x', '--file', 'x.json'], {env: cleanEnv(root)})
    expect(envelope(both).error!.message).toMatch(/--file=x.json cannot also be provided when using --type/)
    expect(both.code).toBe(2)
  })
})
