/** What the warm path's tests share: a real `jarvis serve`, and the watches they start, each stopped after its test. */
import {spawn, type ChildProcess} from 'node:child_process'
import {mkdir} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, afterEach, beforeAll} from 'vitest'

import {assertBuilt} from '../hook/helpers.js'
import {removeAll, startTestServer, type TestServer, until} from '../helpers/world.js'

export interface WarmWorld {
  /** Set before the first test. */
  server: TestServer
  /** Removed after the last test. */
  dirs: string[]
  /** Killed (SIGKILL) after each test, when still running. */
  children: ChildProcess[]
}

/** Registers the describe block's set-up and clean-up; the world is ready in its tests. */
export function warmWorld(): WarmWorld {
  const world = {dirs: [], children: []} as unknown as WarmWorld
  beforeAll(async () => {
    assertBuilt()
    world.server = await startTestServer()
    world.dirs.push(world.server.dataDir)
  })
  afterEach(async () => {
    for (const child of world.children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGKILL')
        await exited
      }
    }
  })
  afterAll(async () => {
    await world.server.close()
    await removeAll(world.dirs)
  })
  return world
}

export interface WatchProcess {
  child: ChildProcess
  /** Everything it printed on stderr so far (its debug lines included). */
  stderr(): string
  exited: Promise<number | null>
}

/**
 * `node <args>` in `root`, a process that watches the tree, once its stderr shows `ready`; stopped after the test.
 * `stdin: 'pipe'` for `jarvis mcp`, whose session ends with its stdin.
 */
export async function startWatchProcess(world: WarmWorld, args: string[], root: string, env: NodeJS.ProcessEnv, ready: string, stdin: 'ignore' | 'pipe' = 'ignore'): Promise<WatchProcess> {
  const child = spawn(process.execPath, args, {cwd: root, env, stdio: [stdin, 'pipe', 'pipe']})
  world.children.push(child)
  let stderr = ''
  child.stdout!.resume()
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  await until('the watch to start', () => (stderr.includes(ready) ? true : child.exitCode !== null ? Promise.reject(new Error(stderr)) : undefined))
  return {child, exited, stderr: () => stderr}
}

/**
 * A tree `jarvis init`-ed against `server` in a folder of `parent` whose path is too long for a socket inside the
 * tree (src/warm/protocol.ts, warmSocketOf): its watch listens in a folder of the user's own.
 */
export async function treeAtLongPath(parent: string, server: string): Promise<{root: string; memory: string; agent: string}> {
  const {initTree} = await import('../../src/store/index.js')
  const deep = join(parent, 'a-folder-name-long-enough-to-push-the-socket-path-past-what-sun-path-holds', 'project')
  await mkdir(deep, {recursive: true})
  const {root} = await initTree(deep, {server, agent: 'claude'})
  return {root, memory: join(root, '.memory'), agent: 'claude'}
}
