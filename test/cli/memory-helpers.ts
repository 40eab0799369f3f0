/** Shared by the `jarvis memory` / `jarvis prompt` command tests. */
import {createServer} from 'node:net'
import {join} from 'node:path'

import {EventsClient} from '../../src/protocol/events.js'
import type {StoredMemoryEvent} from '../../src/schemas/index.js'
import {runJarvis} from '../helpers/cli.js'
import {tempDir, TOKENS} from '../helpers/world.js'

/** A port nothing listens on: bound by the OS, then released. */
export async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const {port} = server.address() as {port: number}
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/**
 * The environment of a command run: no user config, and every JARVIS_* of the developer's shell blanked
 * except what the test sets (settings.ts reads an empty variable as unset).
 */
export function cleanEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // JARVIS_WATCHER stays as the run set it (off: no watch started on demand outlives a test, test/global-setup.ts).
  const blank = Object.fromEntries(Object.keys(process.env).filter((name) => name.startsWith('JARVIS_')).map((name) => [name, name === 'JARVIS_WATCHER' ? process.env[name] : '']))
  return {...blank, XDG_CONFIG_HOME: join(home, 'xdg'), ...extra}
}

/** A tree `jarvis init`-ed against `server` as `agent`, and `run` to run jarvis in it with that agent's token only. */
export async function initedTree(server: string, agent: 'claude' | 'gemini', prefix: string): Promise<{root: string; run: (args: string[]) => ReturnType<typeof runJarvis>}> {
  const root = await tempDir(`${prefix}-${agent}-`)
  const env = cleanEnv(root, {JARVIS_TOKEN: TOKENS[agent]})
  const run = (args: string[]) => runJarvis(args, {cwd: root, env})
  const init = await run(['init', '--agent', agent, '--server', server])
  if (init.code !== 0) throw new Error(`jarvis init failed (exit ${init.code}): ${init.stderr}`)
  return {root, run}
}

/** The env of an agent talking to a server, outside any tree. */
export function agentEnv(home: string, server: string, agent: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cleanEnv(home, {JARVIS_SERVER: server, JARVIS_AGENT: agent, JARVIS_TOKEN: TOKENS[agent], ...extra})
}

/** What the server holds, read directly (not through the command under test). */
export async function eventsOnServer(server: string, agent: string, query: Record<string, string | number | boolean> = {}): Promise<StoredMemoryEvent[]> {
  const client = new EventsClient({server, token: TOKENS[agent]})
  return (await client.events({limit: 500, include_deprecated: true, ...query})).events
}

export {fakeGithubToken} from '../files/helpers.js'
