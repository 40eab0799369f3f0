/**
 * MCP test helpers: a real `jarvis serve` on 127.0.0.1, temp trees, and the SDK's own Client over both doors:
 * `StdioClientTransport` spawning the built `node bin/run.js mcp`, and `StreamableHTTPClientTransport` on `/mcp`.
 */
import {existsSync} from 'node:fs'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {CallToolResult, Tool} from '@modelcontextprotocol/sdk/types.js'

import {afterAll, afterEach, beforeAll} from 'vitest'

import {initTree, readConfig, withTreeLock} from '../../src/store/index.js'
import {cleanEnv} from '../cli/memory-helpers.js'
import {removeAll, startTestServer, tempDir, TOKENS, type TestServer} from '../helpers/world.js'

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
/** The built binary: agents start `jarvis mcp` from dist, so do the tests (`npm run build` first). */
export const builtBin = `${repoRoot}bin/run.js`

export const TOOL_NAMES = [
  'memory_snapshot',
  'memory_append',
  'memory_search',
  'recall',
  'memory_ls',
  'memory_read',
  'memory_write',
  'memory_edit',
  'memory_grep',
  'task_complete',
  'sync',
] as const

export function assertBuilt(): void {
  if (!existsSync(`${repoRoot}dist/commands/mcp.js`)) throw new Error('dist/commands/mcp.js is missing: run `npm run build` before the MCP tests')
}

export interface Session {
  client: Client
  /**
   * The tools as listed when the session opened. Every agent lists the tools before it calls one, and from then on
   * the SDK's client checks each result against the tool's published output schema (a mismatch throws -32602):
   * so do the sessions of the tests.
   */
  tools: Tool[]
  /** What the server wrote to stderr (diagnostics only). */
  stderr(): string
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>
  close(): Promise<void>
}

async function session(client: Client, stderr: () => string): Promise<Session> {
  const {tools} = await client.listTools()
  return {
    client,
    tools,
    stderr,
    call: async (name, args = {}) => (await client.callTool({name, arguments: args})) as CallToolResult,
    close: () => client.close(),
  }
}

/** `jarvis mcp` in `cwd` as `agent`, with that agent's token, spawned as an agent would spawn it. */
export async function stdioSession(options: {cwd: string; home: string; agent?: string; token?: string; args?: string[]; env?: Record<string, string>}): Promise<Session> {
  assertBuilt()
  const agent = options.agent ?? 'claude'
  const env = cleanEnv(options.home, {JARVIS_AGENT: agent, JARVIS_TOKEN: options.token ?? TOKENS[agent], NO_COLOR: '1', ...options.env}) as Record<string, string>
  const transport = new StdioClientTransport({command: process.execPath, args: [builtBin, 'mcp', ...(options.args ?? [])], cwd: options.cwd, env, stderr: 'pipe'})
  let stderr = ''
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
  const client = new Client({name: 'jarvis-test', version: '1.0.0'})
  await client.connect(transport)
  return session(client, () => stderr)
}

/** The `/mcp` endpoint of `server` as the holder of `token`. */
export async function httpSession(server: string, token: string): Promise<Session> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server}/mcp`), {requestInit: {headers: {authorization: `Bearer ${token}`}}})
  const client = new Client({name: 'jarvis-test', version: '1.0.0'})
  await client.connect(transport)
  return session(client, () => '')
}

/** A tree synced with `server` as `agent`, project `demo`. */
export async function makeTree(server: string, agent = 'claude'): Promise<string> {
  const dir = await tempDir(`jarvis-mcp-${agent}-`)
  await initTree(dir, {server, agent, project: 'demo'})
  return dir
}

export function structured<T = Record<string, any>>(result: CallToolResult): T {
  return result.structuredContent as T
}

export function textOf(result: CallToolResult): string {
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n')
}

/** The exit code a tool error carries, or undefined for a success. */
export function exitOf(result: CallToolResult): number | undefined {
  return result.isError ? (result.structuredContent as {error?: {exit?: number}} | undefined)?.error?.exit : undefined
}

export interface McpWorld {
  server: TestServer
  /** The HOME of the spawned `jarvis mcp` processes (no user config). */
  home: string
  /** Removed after the suite. */
  dirs: string[]
  /** Closed after each test. */
  sessions: Session[]
}

/** For the enclosing `describe`: a real `jarvis serve` and a home, its sessions closed after each test, all removed at the end. */
export function useMcpWorld(): McpWorld {
  const world: McpWorld = {server: undefined as unknown as TestServer, home: '', dirs: [], sessions: []}
  beforeAll(async () => {
    world.server = await startTestServer()
    world.home = await tempDir('jarvis-mcp-home-')
    world.dirs.push(world.server.dataDir, world.home)
  })
  afterEach(async () => {
    for (const session of world.sessions.splice(0)) await session.close()
  })
  afterAll(async () => {
    await world.server.close()
    await removeAll(world.dirs)
  })
  return world
}

/**
 * Runs `during` while another holder (as another process would) has the tree lock, the tree's lock timeout made
 * short meanwhile; the lock is released and the config restored however `during` ends.
 */
export async function whileLocked(tree: string, during: () => Promise<void>): Promise<void> {
  const config = await readConfig(tree)
  const file = join(tree, '.nexus', 'config.json')
  await writeFile(file, JSON.stringify({...config, sync: {...config.sync, lockTimeout: 100}}, null, 2))
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let locked!: () => void
  const taken = new Promise<void>((resolve) => (locked = resolve))
  const holder = withTreeLock(tree, {timeoutMs: 1000, command: 'test holder'}, async () => {
    locked()
    await held
  })
  await taken
  try {
    await during()
  } finally {
    release()
    await holder
    await writeFile(file, JSON.stringify(config, null, 2))
  }
}
