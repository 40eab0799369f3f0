/**
 * The warm path (src/warm/): a real `jarvis sync --watch` (the built bin/run.js, against a real `jarvis serve`)
 * answers `recall`, `memory search` (its files), `memory ls` and the prompt hook of other jarvis processes in its tree. What a user would notice:
 * the same output as without it, byte for byte; a file written the moment before is found; a server killed, silent
 * or of another protocol never fails or stalls a call. Which calls the server answered is read from its debug log
 * (`DEBUG=jarvis:warm`): one "answered <call>" line each.
 */
import {spawn} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {mkdir, rename, rm, stat, writeFile} from 'node:fs/promises'
import {createServer, type Server} from 'node:net'
import {join} from 'node:path'

import {afterEach, describe, expect, it} from 'vitest'

import {askWarm} from '../../src/warm/client.js'
import {warmSocketOf, realRoot} from '../../src/warm/protocol.js'
import {cleanEnv} from '../cli/memory-helpers.js'
import {runHook, runJarvisBuilt, runJs} from '../hook/helpers.js'
import {makeClient, tempDir, TOKENS, until} from '../helpers/world.js'
import {startWatchProcess, treeAtLongPath, warmWorld, type WatchProcess} from './world.js'

interface Watch extends WatchProcess {
  /** How many calls of `op` it answered so far. */
  answered(op: string): number
}

describe('the warm path: jarvis sync --watch answers recall, memory search and ls, and the prompt hook', () => {
  const world = warmWorld()

  async function tree(parent?: string) {
    const made = parent ? await treeAtLongPath(parent, world.server.url) : await makeClient(world.server.url, 'claude')
    world.dirs.push(made.root)
    const env = cleanEnv(made.root, {JARVIS_TOKEN: TOKENS.claude, NO_COLOR: '1', DEBUG: ''})
    return {...made, env}
  }

  async function startWatch(root: string, env: NodeJS.ProcessEnv): Promise<Watch> {
    const watch = await startWatchProcess(world, [runJs, 'sync', '--watch', '--dir', root], root, {...env, DEBUG: 'jarvis:warm'}, 'Ctrl-C to stop')
    return {...watch, answered: (op) => watch.stderr().split('\n').filter((line) => line.includes(`answered ${op} `)).length}
  }

  const run = (args: string[], cwd: string, env: NodeJS.ProcessEnv) => runJarvisBuilt(args, {cwd, env})
  const strip = ({code, stdout, stderr}: {code: number | null; stdout: string; stderr: string}) => ({code, stdout, stderr})

  it('answers recall and memory ls exactly as the cold path does, human and --json', async () => {
    const t = await tree()
    await mkdir(join(t.memory, 'ops'), {recursive: true})
    await writeFile(join(t.memory, 'ops', 'deploy.md'), '---\ntitle: Deploy\ntags: [ops]\n---\nWe deploy with kamal to the hetzner box.\n')
    await writeFile(join(t.memory, 'gateway.md'), '# Gateway\n\nThe gateway deploy runs after the database migration.\n')
    const watch = await startWatch(t.root, t.env)
    const cold = {...t.env, JARVIS_WARM: 'off'}
    const calls = [
      ['recall', 'deploy'],
      ['recall', 'deploy', '--json'],
      ['recall', 'deploy', '--limit', '1', '--tag', 'ops'],
      ['memory', 'ls'],
      ['memory', 'ls', 'ops/', '--json'],
      ['memory', 'search', 'deploy'],
      ['memory', 'search', 'deploy', '--prefix', 'ops/', '--json'],
    ]
    for (const args of calls) {
      const warm = strip(await run(args, t.root, t.env))
      expect(warm.code, warm.stderr).toBe(0)
      expect(warm, args.join(' ')).toEqual(strip(await run(args, t.root, cold)))
    }
    expect((await run(['recall', 'kamal'], t.root, t.env)).stdout).toContain('ops/deploy.md')
    expect(watch.answered('recall')).toBe(4)
    expect(watch.answered('memory-ls')).toBe(2)
    expect(watch.answered('memory-search-files')).toBe(2)
  })

  it('finds a file written, edited in place or deleted the moment before the call', async () => {
    const t = await tree()
    // Keyword ranking only: a note whose word was edited away must be gone from the answer, not be a near match by meaning.
    t.env.JARVIS_EMBEDDINGS = 'off'
    const watch = await startWatch(t.root, t.env)
    const env = {...t.env, JARVIS_WARM: ''}
    // In this process, so that nothing but the write comes between the change and the request: the cookie's proof.
    for (let i = 0; i < 40; i++) {
      const path = join(t.memory, i % 4 === 0 ? `deep/er/n${i}.md` : `n${i}.md`)
      if (i % 4 === 0) await mkdir(join(t.memory, 'deep', 'er'), {recursive: true})
      writeFileSync(path, `# Note ${i}\n\nthe word zebra${i} is here\n`)
      const found = await askWarm<{block: string}>(t.root, 'recall', {query: `zebra${i}`, limit: 3}, {env})
      expect(found?.block, `note ${i}`).toContain(`n${i}.md`)
      // Edited in place: same file, same size, the new word found and the old one gone.
      writeFileSync(path, `# Note ${i}\n\nthe word okapi${i} is here\n`)
      const edited = await askWarm<{block: string}>(t.root, 'recall', {query: `okapi${i}`, limit: 3}, {env})
      expect(edited?.block, `edit ${i}`).toContain(`n${i}.md`)
      expect((await askWarm<{block: string}>(t.root, 'recall', {query: `zebra${i}`, limit: 3}, {env}))?.block).not.toContain(`n${i}.md`)
    }
    await rm(join(t.memory, 'n1.md'))
    const afterDelete = await askWarm<{block: string}>(t.root, 'recall', {query: 'okapi1', limit: 10}, {env})
    expect(afterDelete?.block).toContain('- n2.md\n')
    expect(afterDelete?.block).not.toContain('- n1.md\n')
    await rm(join(t.memory, 'deep'), {recursive: true})
    const listed = await askWarm<{files: Array<{path: string}>}>(t.root, 'memory-ls', {limit: 100}, {env})
    expect(listed?.files.map((file) => file.path).filter((path) => path.startsWith('deep/'))).toEqual([])
    // And as a script would: write, then run jarvis.
    for (let i = 0; i < 5; i++) {
      await writeFile(join(t.memory, `script${i}.md`), `# Script ${i}\n\nthe word quokka${i}\n`)
      expect((await run(['recall', `quokka${i}`], t.root, t.env)).stdout).toContain(`script${i}.md`)
    }
    expect(watch.answered('recall')).toBe(40 * 3 + 1 + 5)
  })

  it('still sees an edit in a folder moved over another one it watched', async () => {
    const t = await tree()
    await mkdir(join(t.memory, 'a'))
    await mkdir(join(t.memory, 'b'))
    await writeFile(join(t.memory, 'a', 'n.md'), '# Note\n\nthe word zebra is here\n')
    const watch = await startWatch(t.root, t.env)
    const env = {...t.env, JARVIS_WARM: ''}
    expect((await askWarm<{block: string}>(t.root, 'recall', {query: 'zebra', limit: 3}, {env}))?.block).toContain('a/n.md')
    // `a` replaces the empty `b`: both names are reported, and `b` is a folder the watch knew, now another one.
    await rename(join(t.memory, 'a'), join(t.memory, 'b'))
    expect((await askWarm<{block: string}>(t.root, 'recall', {query: 'zebra', limit: 3}, {env}))?.block).toContain('b/n.md')
    // Edited in place, same size: only a watch of the new `b` reports it.
    writeFileSync(join(t.memory, 'b', 'n.md'), '# Note\n\nthe word okapi is here\n')
    expect((await askWarm<{block: string}>(t.root, 'recall', {query: 'okapi', limit: 3}, {env}))?.block).toContain('b/n.md')
    expect(watch.answered('recall')).toBe(3)
  })

  it('the prompt hook is answered by the watch, with the cold path’s answer', async () => {
    const t = await tree()
    await writeFile(join(t.memory, 'deploy.md'), '---\ntitle: Deploy\n---\nWe deploy the gateway with kamal to the hetzner box.\n')
    const watch = await startWatch(t.root, t.env)
    const input = {hook_event_name: 'UserPromptSubmit', cwd: t.root, prompt: 'how do we deploy the gateway with kamal?'}
    const warm = await runHook('prompt', 'claude', input, {cwd: t.root, env: t.env})
    expect(warm.stdout).toContain('deploy.md')
    expect(watch.answered('prompt-recall')).toBe(1)
    const cold = await runHook('prompt', 'claude', input, {cwd: t.root, env: {...t.env, JARVIS_WARM: 'off'}})
    expect(strip(warm)).toEqual(strip(cold))
    expect(watch.answered('prompt-recall')).toBe(1)
  })

  it('a watch killed with SIGKILL leaves a stale socket: calls take the cold path, and the next watch replaces it', async () => {
    const t = await tree()
    await writeFile(join(t.memory, 'deploy.md'), '# Deploy\n\nkamal to the hetzner box\n')
    const first = await startWatch(t.root, t.env)
    const socket = warmSocketOf(realRoot(t.root))!.path
    expect(socket).toBe(join(realRoot(t.root), '.nexus', 'warm.sock'))
    expect((await stat(socket)).mode & 0o777).toBe(0o600)
    first.child.kill('SIGKILL')
    await first.exited
    expect((await stat(socket)).isSocket()).toBe(true)
    await writeFile(join(t.memory, 'after.md'), '# After\n\nwritten while no watch runs: kamal again\n')
    const cold = await run(['recall', 'kamal'], t.root, t.env)
    expect(cold).toMatchObject({code: 0})
    expect(cold.stdout).toContain('after.md')
    const second = await startWatch(t.root, t.env)
    expect((await run(['recall', 'kamal'], t.root, t.env)).stdout).toContain('after.md')
    expect(second.answered('recall')).toBe(1)
    second.child.kill('SIGINT')
    expect(await second.exited).toBe(0)
    await expect(stat(socket)).rejects.toMatchObject({code: 'ENOENT'})
  })

  it('a second watch in the tree leaves the socket to the first; JARVIS_WARM=off asks neither', async () => {
    const t = await tree()
    await writeFile(join(t.memory, 'deploy.md'), '# Deploy\n\nkamal to the hetzner box\n')
    const first = await startWatch(t.root, t.env)
    const second = await startWatch(t.root, t.env)
    expect(second.stderr()).toContain('another one answers')
    expect((await run(['recall', 'kamal'], t.root, t.env)).stdout).toContain('deploy.md')
    expect([first.answered('recall'), second.answered('recall')]).toEqual([1, 0])
    expect((await run(['recall', 'kamal'], t.root, {...t.env, JARVIS_WARM: 'off'})).stdout).toContain('deploy.md')
    expect([first.answered('recall'), second.answered('recall')]).toEqual([1, 0])
  })

  it('a tree whose path is too long for a socket gets one in a private folder of the user', async () => {
    const parent = await tempDir('jarvis-warm-long-')
    world.dirs.push(parent)
    const t = await tree(parent)
    const runtime = join(parent, 'run')
    await mkdir(runtime, {mode: 0o700})
    const env = {...t.env, XDG_RUNTIME_DIR: runtime}
    await writeFile(join(t.memory, 'deploy.md'), '# Deploy\n\nkamal to the hetzner box\n')
    const watch = await startWatch(t.root, env)
    const socket = warmSocketOf(realRoot(t.root), env)!
    expect(socket.privateDir).toBe(join(runtime, 'jarvis'))
    expect((await stat(socket.privateDir!)).mode & 0o777).toBe(0o700)
    expect((await stat(socket.path)).mode & 0o777).toBe(0o600)
    const warm = await run(['recall', 'kamal'], t.root, env)
    expect(warm.stdout).toContain('deploy.md')
    expect(watch.answered('recall')).toBe(1)
    expect(strip(warm)).toEqual(strip(await run(['recall', 'kamal'], t.root, {...env, JARVIS_WARM: 'off'})))
  })

  it('an agent’s jarvis mcp answers too, and removes its socket when the session ends', async () => {
    const t = await tree()
    await writeFile(join(t.memory, 'deploy.md'), '# Deploy\n\nkamal to the hetzner box\n')
    const mcp = spawn(process.execPath, [runJs, 'mcp', '--dir', t.root], {cwd: t.root, env: {...t.env, DEBUG: 'jarvis:warm'}, stdio: ['pipe', 'pipe', 'pipe']})
    world.children.push(mcp)
    let stderr = ''
    mcp.stdout!.resume()
    mcp.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const exited = new Promise((resolve) => mcp.once('exit', resolve))
    const socket = join(realRoot(t.root), '.nexus', 'warm.sock')
    await until('the session to listen', () => stat(socket).then(() => true, () => undefined))
    await writeFile(join(t.memory, 'fresh.md'), '# Fresh\n\nkamal once more\n')
    const warm = await run(['recall', 'kamal'], t.root, t.env)
    expect(warm.stdout).toContain('fresh.md')
    expect(stderr.split('\n').filter((line) => line.includes('answered recall')).length).toBe(1)
    expect(strip(warm)).toEqual(strip(await run(['recall', 'kamal'], t.root, {...t.env, JARVIS_WARM: 'off'})))
    mcp.stdin!.end()
    await exited
    await expect(stat(socket)).rejects.toMatchObject({code: 'ENOENT'})
  })

  it('a jarvis mcp started beside a sync --watch leaves it the socket and its cookies', async () => {
    const t = await tree()
    await writeFile(join(t.memory, 'deploy.md'), '# Deploy\n\nkamal to the hetzner box\n')
    const watch = await startWatch(t.root, t.env)
    const mcp = spawn(process.execPath, [runJs, 'mcp', '--dir', t.root], {cwd: t.root, env: {...t.env, DEBUG: 'jarvis:warm'}, stdio: ['pipe', 'pipe', 'pipe']})
    world.children.push(mcp)
    let stderr = ''
    mcp.stdout!.resume()
    mcp.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    await until('the session to find the watch', () => (stderr.includes('another one answers') ? true : undefined))
    for (let i = 0; i < 3; i++) {
      await writeFile(join(t.memory, `fresh${i}.md`), `# Fresh\n\nkamal ${['once', 'twice', 'thrice'][i]} more\n`)
      expect((await run(['recall', 'kamal', '--limit', '5'], t.root, t.env)).stdout).toContain(`fresh${i}.md`)
    }
    expect(watch.answered('recall')).toBe(3)
    expect(watch.stderr()).not.toContain('rescans the tree')
    mcp.stdin!.end()
  })

  describe('a socket that does not answer as a warm server must', () => {
    let listening: Server | undefined
    afterEach(async () => {
      await new Promise((resolve) => (listening ? listening.close(resolve) : resolve(undefined)))
      listening = undefined
    })

    it.each([
      ['never answers', () => {}],
      ['answers another protocol', (line: string, reply: (text: string) => void) => reply(JSON.stringify({v: 999, ok: true, result: {block: 'wrong'}}))],
      ['answers an error', (_line: string, reply: (text: string) => void) => reply(JSON.stringify({v: 1, ok: false, error: 'broken'}))],
      ['answers garbage', (_line: string, reply: (text: string) => void) => reply('not json')],
    ])('a server that %s: the call answers from the tree itself', async (_what, behave: (line: string, reply: (text: string) => void) => void) => {
      const t = await tree()
      await writeFile(join(t.memory, 'deploy.md'), '# Deploy\n\nkamal to the hetzner box\n')
      listening = createServer((connection) => {
        connection.setEncoding('utf8').on('data', (line: string) => behave(line, (text) => connection.end(`${text}\n`)))
      })
      await new Promise<void>((resolve) => listening!.listen(join(t.root, '.nexus', 'warm.sock'), resolve))
      const answered = await run(['recall', 'kamal'], t.root, t.env)
      expect(answered).toMatchObject({code: 0})
      expect(answered.stdout).toContain('deploy.md')
      expect(answered.stdout).not.toContain('wrong')
      const hook = await runHook('prompt', 'claude', {hook_event_name: 'UserPromptSubmit', cwd: t.root, prompt: 'deploy with kamal to hetzner'}, {cwd: t.root, env: t.env})
      expect(hook).toMatchObject({code: 0})
      expect(hook.stdout).toContain('deploy.md')
    })
  })
})
