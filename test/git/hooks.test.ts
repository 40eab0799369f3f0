import {spawnSync} from 'node:child_process'
import {chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile} from 'node:fs/promises'
import {createServer, type Socket} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {BLOCK_END, BLOCK_START, hookBlock, HOOK_NAMES, withBlock, withoutBlock} from '../../src/git/hooks.js'
import {initTree, isTreeLockHeld} from '../../src/store/index.js'
import {MemoryClient} from '../../src/protocol/client.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {startTestServer, TOKENS, until} from '../helpers/world.js'
import {closedPort} from '../cli/memory-helpers.js'

const tempDir = (prefix: string) => mkdtemp(join(tmpdir(), prefix))
const removeAll = (paths: string[]) => Promise.all(paths.map((p) => rm(p, {recursive: true, force: true, maxRetries: 5, retryDelay: 100})))

interface HooksJson {
  hooksDir: string
  installed: string[]
  unchanged: string[]
  removed: string[]
  skipped: string[]
  command: string
}

function git(cwd: string, ...args: string[]): {status: number | null; stdout: string; stderr: string} {
  return gitWith({}, cwd, ...args)
}

function gitWith(env: Record<string, string>, cwd: string, ...args: string[]): {status: number | null; stdout: string; stderr: string} {
  const run = spawnSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {...process.env, ...env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.invalid', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.invalid'},
  })
  return {status: run.status, stdout: run.stdout, stderr: run.stderr}
}

/** `jarvis hooks install` on `repo`; the working directory stays the project's (see the report on test/helpers/cli.ts). */
async function hooks(repo: string, ...extra: string[]) {
  const run = await runJarvis(['hooks', 'install', '--dir', repo, '--json', ...extra])
  const env = envelope<HooksJson>(run)
  return {run, env, result: env.result!}
}

/**
 * The files on the server once the hook's background sync pushed `path` (a 20 s deadline, not a timed assertion),
 * after that sync finished its bookkeeping (bases, audit line, lock), so the tree can be removed.
 */
async function backgroundSyncPushed(repo: string, client: MemoryClient, path: string): Promise<string[]> {
  const end = Date.now() + 20_000
  let files: Record<string, unknown> = {}
  while (!(path in files) && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    files = (await client.status()).files
  }
  while (Date.now() < end && ((await isTreeLockHeld(repo)) || !(await readFile(join(repo, '.nexus', 'audit.jsonl'), 'utf8').catch(() => '')).includes('"type":"sync"'))) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return Object.keys(files)
}

const isExecutable = async (path: string) => ((await stat(path)).mode & 0o111) !== 0

describe('jarvis hooks install', () => {
  const dirs: string[] = []
  let repo: string

  beforeEach(async () => {
    repo = await tempDir('jarvis-hooks-')
    dirs.push(repo)
    expect(git(repo, 'init', '-q').status).toBe(0)
  })
  afterEach(async () => {
    await removeAll(dirs.splice(0))
  })

  it('creates the three hooks, executable, and a second install changes nothing', async () => {
    const first = await hooks(repo)
    expect(first.run.code).toBe(0)
    expect(first.result.hooksDir).toBe(join(repo, '.git', 'hooks'))
    expect(first.result.installed.sort()).toEqual([...HOOK_NAMES].sort())
    for (const name of HOOK_NAMES) {
      const path = join(repo, '.git', 'hooks', name)
      const text = await readFile(path, 'utf8')
      expect(text.startsWith('#!/bin/sh\n')).toBe(true)
      expect(text).toContain(BLOCK_START)
      expect(text).toContain('sync --quiet')
      expect(await isExecutable(path)).toBe(true)
    }
    const before = await readFile(join(repo, '.git', 'hooks', 'post-commit'), 'utf8')

    const second = await hooks(repo)
    expect(second.run.code).toBe(0)
    expect(second.result.installed).toEqual([])
    expect(second.result.unchanged.sort()).toEqual([...HOOK_NAMES].sort())
    expect(await readFile(join(repo, '.git', 'hooks', 'post-commit'), 'utf8')).toBe(before)

    const human = await runJarvis(['hooks', 'install', '--dir', repo])
    expect(human.code).toBe(0)
    expect(human.stdout).toMatch(/nothing changed/)
  })

  it('keeps an existing hook and its content; uninstall gives it back byte for byte', async () => {
    const path = join(repo, '.git', 'hooks', 'post-commit')
    const mine = '#!/bin/sh\n# my own hook\necho "committed" >> "$(git rev-parse --git-dir)/my-log"\n'
    await writeFile(path, mine)
    await chmod(path, 0o750)

    const install = await hooks(repo)
    expect(install.result.installed).toContain('post-commit')
    const text = await readFile(path, 'utf8')
    expect(text.startsWith(mine)).toBe(true)
    expect(text.split(BLOCK_START)).toHaveLength(2)
    expect((await stat(path)).mode & 0o777).toBe(0o750)

    const uninstall = await hooks(repo, '--uninstall')
    expect(uninstall.run.code).toBe(0)
    expect(uninstall.result.removed.sort()).toEqual([...HOOK_NAMES].sort())
    expect(await readFile(path, 'utf8')).toBe(mine)
    // Hooks that held only our block are gone.
    await expect(stat(join(repo, '.git', 'hooks', 'post-merge'))).rejects.toThrow()
    await expect(stat(join(repo, '.git', 'hooks', 'post-checkout'))).rejects.toThrow()

    const again = await hooks(repo, '--uninstall')
    expect(again.result.removed).toEqual([])
    expect(again.result.unchanged.sort()).toEqual([...HOOK_NAMES].sort())
  })

  it('honours a relative core.hooksPath, from a subdirectory too', async () => {
    expect(git(repo, 'config', 'core.hooksPath', '.githooks').status).toBe(0)
    await mkdir(join(repo, 'sub', 'deeper'), {recursive: true})
    const {result} = await hooks(join(repo, 'sub', 'deeper'))
    expect(result.hooksDir).toBe(join(repo, '.githooks'))
    for (const name of HOOK_NAMES) expect(await isExecutable(join(repo, '.githooks', name))).toBe(true)
    await expect(stat(join(repo, '.git', 'hooks', 'post-commit'))).rejects.toThrow()
  })

  it('leaves a hook that is not a shell script alone and says so', async () => {
    const path = join(repo, '.git', 'hooks', 'post-merge')
    const script = '#!/usr/bin/env node\nconsole.log("merged")\n'
    await writeFile(path, script, {mode: 0o755})
    const {env, result} = await hooks(repo)
    expect(result.skipped).toEqual(['post-merge'])
    expect(env.warnings.join('\n')).toMatch(/post-merge is not a shell script/)
    expect(await readFile(path, 'utf8')).toBe(script)
  })

  it('says it is not a git repository (exit 2)', async () => {
    const plain = await tempDir('jarvis-nogit-')
    dirs.push(plain)
    const run = await runJarvis(['hooks', 'install', '--dir', plain, '--json'])
    expect(run.code).toBe(2)
    expect(envelope(run).error?.message).toMatch(/not inside a git repository/)
  })

  it('never blocks git: a commit with the server down succeeds at once', async () => {
    // Down in the worst way: it takes the connection and never answers (the sync would wait for its timeouts).
    const sockets = new Set<Socket>()
    /** The connections the server holds now, unanswered (a sync that gave up closed its own). */
    const waiting = new Set<Socket>()
    const silent = createServer((socket) => {
      sockets.add(socket)
      waiting.add(socket)
      socket.on('close', () => waiting.delete(socket))
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const {port} = silent.address() as {port: number}
    await initTree(repo, {server: `http://127.0.0.1:${port}`, agent: 'claude'})
    const {result} = await hooks(repo)
    expect(result.installed).toHaveLength(3)
    await writeFile(join(repo, '.memory', 'notes.md'), '# notes\n')
    expect(git(repo, 'add', '-A').status).toBe(0)
    const commit = git(repo, 'commit', '-q', '-m', 'memory')
    expect(commit.status, commit.stderr).toBe(0)
    // Back while the sync the hook started still waits on the server: a hook that waited would be back only once its
    // sync had given up and closed its connection.
    await until('the background sync to wait on the server', () => waiting.size > 0 || undefined)
    const checkout = git(repo, 'checkout', '-q', '-b', 'other')
    expect(checkout.status, checkout.stderr).toBe(0)
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => silent.close(() => resolve()))
  })

  it('with the server up, a commit syncs the memory in the background', async () => {
    const server = await startTestServer()
    dirs.push(server.dataDir)
    const client = new MemoryClient({server: server.url, token: TOKENS.claude})
    try {
      await initTree(repo, {server: server.url, agent: 'claude'})
      expect((await hooks(repo)).result.installed).toHaveLength(3)
      await writeFile(join(repo, '.memory', 'from-hook.md'), 'synced by the post-commit hook\n')
      expect(git(repo, 'add', '-A').status).toBe(0)
      const commit = gitWith({JARVIS_TOKEN: TOKENS.claude, XDG_CONFIG_HOME: join(repo, 'xdg')}, repo, 'commit', '-q', '-m', 'memory')
      expect(commit.status, commit.stderr).toBe(0)
      expect(await backgroundSyncPushed(repo, client, 'from-hook.md')).toContain('from-hook.md')
    } finally {
      await client.close()
      await server.close()
    }
  })

  it('a sync that fails from a git hook is a line in .nexus/hooks.log, and jarvis status shows it', async () => {
    const port = await closedPort()
    await initTree(repo, {server: `http://127.0.0.1:${port}`, agent: 'claude'})
    expect((await hooks(repo)).result.installed).toHaveLength(3)
    await writeFile(join(repo, '.memory', 'notes.md'), '# notes\n')
    expect(git(repo, 'add', '-A').status).toBe(0)
    expect(gitWith({JARVIS_TOKEN: TOKENS.claude, XDG_CONFIG_HOME: join(repo, 'xdg')}, repo, 'commit', '-q', '-m', 'memory').status).toBe(0)
    const log = join(repo, '.nexus', 'hooks.log')
    const end = Date.now() + 20_000 // a deadline for the background sync, not a timed assertion
    while (!(await readFile(log, 'utf8').catch(() => '')).includes('git sync') && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await readFile(log, 'utf8')).toMatch(/^\S+ git sync jarvis sync from a git hook failed \(exit 3\)/m)
    const status = await runJarvis(['status', '--offline', '--dir', repo])
    expect(status.stdout).toContain('git sync: jarvis sync from a git hook failed (exit 3)')
  })

  it('survives a moved clone or a reinstalled node: the hook falls back to jarvis on PATH', async () => {
    const server = await startTestServer()
    dirs.push(server.dataDir)
    const client = new MemoryClient({server: server.url, token: TOKENS.claude})
    try {
      await initTree(repo, {server: server.url, agent: 'claude'})
      expect((await hooks(repo)).result.installed).toHaveLength(3)
      // What a move does to the hook: the recorded script is no longer there.
      const hook = join(repo, '.git', 'hooks', 'post-commit')
      const text = await readFile(hook, 'utf8')
      const recorded = /\[ -f '?([^' ]+)'? \]/.exec(text)![1]
      await writeFile(hook, text.replaceAll(recorded, join(repo, 'moved-away', 'bin', 'run.js')))
      // …and jarvis is on PATH (as `npm link` or `npm install -g` puts it).
      const bin = join(repo, 'path-bin')
      await mkdir(bin)
      await writeFile(join(bin, 'jarvis'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(recorded)} "$@"\n`)
      await chmod(join(bin, 'jarvis'), 0o755)
      await writeFile(join(repo, '.memory', 'after-move.md'), 'synced through jarvis on PATH\n')
      expect(git(repo, 'add', '-A').status).toBe(0)
      const env = {JARVIS_TOKEN: TOKENS.claude, XDG_CONFIG_HOME: join(repo, 'xdg'), PATH: `${bin}:${process.env.PATH}`}
      expect(gitWith(env, repo, 'commit', '-q', '-m', 'memory').status).toBe(0)
      expect(await backgroundSyncPushed(repo, client, 'after-move.md')).toContain('after-move.md')
    } finally {
      await client.close()
      await server.close()
    }
  })
})

describe('the hook block', () => {
  const block = hookBlock('jarvis')

  it('is added once and removed exactly', () => {
    const original = '#!/bin/bash\nset -e\nmake lint\n'
    const added = withBlock(original, block)
    expect(added).toBe(`${original}\n${block}\n`)
    expect(withBlock(added, block)).toBe(added)
    expect(withoutBlock(added)).toBe(original)
  })

  it('replaces an older block in place', () => {
    const old = withBlock('#!/bin/sh\necho a\n', hookBlock('/old/node /old/run.js'))
    const updated = withBlock(old, block)
    expect(updated).toContain('\n  jarvis sync --quiet || {')
    expect(updated).not.toContain('/old/run.js')
    expect(updated.split(BLOCK_END)).toHaveLength(2)
  })

  it('logs a sync that failed, not one that kept a conflict in a backup (exit 4); does nothing where jarvis is not set up', async () => {
    const dir = await tempDir('jarvis-hook-block-')
    try {
      const fake = join(dir, 'fake-jarvis')
      await writeFile(fake, '#!/bin/sh\necho ran >> "$RUNS"\nexit "$EXIT_WITH"\n')
      await chmod(fake, 0o755)
      const log = join(dir, '.nexus', 'hooks.log')
      // The block runs the sync in the background; `wait` lets this shell see it end.
      const script = `${hookBlock(fake)}\nwait\n`
      const env = (code: string) => ({...process.env, EXIT_WITH: code, RUNS: join(dir, 'runs')})
      // A checkout without .nexus/ (a linked worktree): no sync runs, nothing is written, git goes on.
      expect(spawnSync('sh', ['-c', script], {cwd: dir, env: env('3')}).status).toBe(0)
      await expect(readFile(join(dir, 'runs'), 'utf8')).rejects.toThrow()
      await mkdir(join(dir, '.nexus'))
      for (const code of ['4', '3', '0']) expect(spawnSync('sh', ['-c', script], {cwd: dir, env: env(code)}).status).toBe(0)
      expect(await readFile(join(dir, 'runs'), 'utf8')).toBe('ran\nran\nran\n')
      const lines = (await readFile(log, 'utf8')).trim().split('\n')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(/^\S+ git sync jarvis sync from a git hook failed \(exit 3\)/)
    } finally {
      await removeAll([dir])
    }
  })

  it('a hook without a final newline keeps its last line', () => {
    const added = withBlock('#!/bin/sh\necho a', block)
    expect(added.startsWith('#!/bin/sh\necho a\n\n')).toBe(true)
    expect(withoutBlock(added)).toBe('#!/bin/sh\necho a\n')
  })
})
