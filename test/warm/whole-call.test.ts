/**
 * `jarvis` as installed (bin/jarvis) hands `memory ls`, `memory search`, `recall`, a one-shot `sync` and an agent's
 * hooks of every prompt and turn whole to a watch of the tree (bin/warm-call.pl, src/cli/warm-call.ts), so that no Node process starts
 * for them. What a user would notice: the same stdout, stderr and exit code as jarvis run by itself
 * (`JARVIS_WARM=off`), byte for byte; a call the watch must not run (another environment, a flag the fast door
 * leaves to oclif, another tree) is run by jarvis itself, as is any call whose watch was killed, before or during
 * it, or stopped answering — a hook with the stdin the agent wrote. Which calls the watch ran and which it
 * declined is read from its debug log (`DEBUG=jarvis:warm`).
 */
import {execFileSync, spawn} from 'node:child_process'
import {chmod, mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import {createServer as createHttpServer, request as httpRequest} from 'node:http'
import {createServer} from 'node:net'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {withTreeLock} from '../../src/store/index.js'
import {WARM_PROTOCOL} from '../../src/warm/protocol.js'
import {envDifference, hookEnvDifference} from '../../src/cli/warm-call.js'
import {cleanEnv} from '../cli/memory-helpers.js'
import {claudeTranscript, hooksLog, installedJarvis, runCollected, runJarvisBuilt, runJs, waitForBackgroundSyncs} from '../hook/helpers.js'
import {makeClient, startTestServer, tempDir, TOKENS, until} from '../helpers/world.js'
import {startWatchProcess, treeAtLongPath, warmWorld} from './world.js'

const warmCallScript = join(installedJarvis, '..', 'warm-call.pl')
const onDemandWatcher = join(installedJarvis, '..', '..', 'dist', 'cli', 'on-demand-watch.js')

describe('bin/jarvis: a watch of the tree runs memory ls and search, recall, sync and the agents’ hooks whole', () => {
  const world = warmWorld()
  const servers: {close(): Promise<void>}[] = []
  afterAll(async () => {
    for (const server of servers.splice(0)) await server.close()
  })

  /**
   * The network between a tree and its server, which can stop answering (a server that hangs, a link gone quiet):
   * while stalled, each request is held, and noted with whether its client dropped it.
   */
  async function stallingNetwork(target: string) {
    const held: {path: string; dropped: boolean}[] = []
    let stalled = false
    const proxy = createHttpServer((request, response) => {
      if (stalled) {
        const waiting = {path: request.url ?? '', dropped: false}
        held.push(waiting)
        response.once('close', () => (waiting.dropped = true))
        return
      }
      const onward = httpRequest(new URL(request.url ?? '/', target), {method: request.method, headers: request.headers}, (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(response)
      })
      onward.on('error', () => response.destroy())
      request.pipe(onward)
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    const {port} = proxy.address() as {port: number}
    const network = {
      url: `http://127.0.0.1:${port}`,
      held,
      stall: (on: boolean) => void (stalled = on),
      close: () => new Promise<void>((resolve) => {
        proxy.closeAllConnections()
        proxy.close(() => resolve())
      }),
    }
    servers.push(network)
    return network
  }

  /**
   * A tree with a server of its own (the tests' syncs would meet each other's files in a shared one), and the
   * environment of both its watch and its calls (the shell finds node and perl on PATH); `stalling`: it reaches
   * its server through a network that can stop answering.
   */
  async function tree(options: {longPath?: boolean; stalling?: boolean} = {}) {
    const server = await startTestServer()
    servers.push(server)
    world.dirs.push(server.dataDir)
    const network = options.stalling ? await stallingNetwork(server.url) : undefined
    const parent = options.longPath ? await tempDir('jarvis-warm-long-') : undefined
    const url = network?.url ?? server.url
    const made = parent ? await treeAtLongPath(parent, url) : await makeClient(url, 'claude')
    world.dirs.push(parent ?? made.root)
    const env = cleanEnv(made.root, {JARVIS_TOKEN: TOKENS.claude, NO_COLOR: '1', DEBUG: 'jarvis:warm', PATH: process.env.PATH ?? ''})
    await mkdir(join(made.memory, 'ops'), {recursive: true})
    await writeFile(join(made.memory, 'ops', 'deploy.md'), '---\ntitle: Deploy\ntags: [ops]\n---\nWe deploy with kamal to the hetzner box.\n')
    await writeFile(join(made.memory, 'gateway.md'), '# Gateway\n\nThe gateway deploy runs after the database migration.\n')
    return {...made, env, server, parent, network}
  }

  /** `jarvis sync --watch`, the watch a call starts on demand (which answers only: it does not sync by itself), or an agent's `jarvis mcp`. */
  async function startWatch(root: string, env: NodeJS.ProcessEnv, kind: 'sync --watch' | 'on demand' | 'mcp' = 'sync --watch') {
    const args = kind === 'sync --watch' ? [runJs, 'sync', '--watch', '--dir', root] : kind === 'mcp' ? [runJs, 'mcp', '--dir', root] : [onDemandWatcher, root]
    const watch = await startWatchProcess(world, args, root, env, kind === 'sync --watch' ? 'Ctrl-C to stop' : 'answering at', kind === 'mcp' ? 'pipe' : 'ignore')
    const lines = (text: string) => watch.stderr().split('\n').filter((line) => line.includes(text))
    return {...watch, running: () => lines('running a call').length, ran: () => lines('ran a call').length, declined: () => lines('declined a call').map((line) => line.replace(/.*declined a call: /, ''))}
  }

  const installed = (args: string[], cwd: string, env: NodeJS.ProcessEnv) => runJarvisBuilt(args, {cwd, env, installed: true})
  const byItself = (args: string[], cwd: string, env: NodeJS.ProcessEnv) => runJarvisBuilt(args, {cwd, env: {...env, JARVIS_WARM: 'off'}})
  const runProcessOf = (file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) =>
    new Promise<{code: number | null; stdout: string}>((resolve, reject) => {
      const child = spawn(file, args, {cwd, env, stdio: ['ignore', 'pipe', 'inherit']})
      let stdout = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
      child.on('error', reject)
      child.on('close', (code) => resolve({code, stdout}))
    })
  const seen = ({code, stdout, stderr}: {code: number | null; stdout: string; stderr: string}) => ({code, stdout, stderr})

  it('prints what jarvis prints by itself and exits as it does, from the root or a folder below it', async () => {
    const t = await tree()
    const watch = await startWatch(t.root, t.env)
    const calls = [
      ['memory', 'ls'],
      ['memory', 'ls', 'ops/', '--json'],
      ['recall', 'deploy'],
      ['recall', 'deploy', '--limit', '1', '--tag', 'ops', '--json'],
      ['memory', 'search', 'deploy'],
      ['memory', 'search', 'kamal', '--prefix', 'ops/', '--json'],
      ['sync'],
      ['sync', '--json'],
      // A bad value the action itself refuses: exit 2 and its message, from the watch.
      ['memory', 'search', 'deploy', '--since', 'last tuesday'],
    ]
    for (const [index, args] of calls.entries()) {
      const cwd = index % 2 === 0 ? t.root : t.memory
      const warm = seen(await installed(args, cwd, t.env))
      expect(warm, args.join(' ')).toEqual(seen(await byItself(args, cwd, t.env)))
    }
    expect(watch.ran()).toBe(calls.length)
    expect(watch.declined()).toEqual([])
    expect((await installed(['memory', 'search', 'deploy', '--since', 'last tuesday'], t.root, t.env)).code).toBe(2)
    // jarvis status names the watch and what it did.
    const status = await installed(['status', '--offline'], t.root, t.env)
    expect(status.stdout).toContain(`watched by jarvis sync --watch (pid ${watch.child.pid}) since `)
    expect(status.stdout).toContain(`: ran ${calls.length + 1} call(s)\n`)
    expect(status.stdout).not.toContain('left')
  })

  it('a sync run by the watch pushes an edit made the moment before, and pulls what another machine pushed', async () => {
    const t = await tree()
    const other = await makeClient(t.server.url, 'claude')
    world.dirs.push(other.root)
    const watch = await startWatch(t.root, t.env, 'on demand')
    await writeFile(join(t.memory, 'gateway.md'), '# Gateway\n\nThe gateway deploy now runs before the migration.\n')
    const pushed = await installed(['sync'], t.root, t.env)
    expect(pushed.code, pushed.stderr).toBe(0)
    const otherEnv = {...t.env, DEBUG: '', JARVIS_WARM: 'off'}
    expect((await runJarvisBuilt(['sync'], {cwd: other.root, env: otherEnv})).code).toBe(0)
    expect(await readFile(join(other.memory, 'gateway.md'), 'utf8')).toContain('now runs before')
    await writeFile(join(other.memory, 'ops', 'rollback.md'), '# Rollback\n\nkamal rollback to the previous image.\n')
    expect((await runJarvisBuilt(['sync'], {cwd: other.root, env: otherEnv})).code).toBe(0)
    const pulled = await installed(['sync', '--json'], t.root, t.env)
    expect(JSON.parse(pulled.stdout).result.pulled).toContain('ops/rollback.md')
    expect(await readFile(join(t.memory, 'ops', 'rollback.md'), 'utf8')).toContain('kamal rollback')
    expect(watch.ran()).toBe(2)
  })

  it('an agent’s jarvis mcp session runs them too', async () => {
    const t = await tree()
    const session = await startWatch(t.root, t.env, 'mcp')
    for (const args of [['memory', 'ls'], ['recall', 'kamal', '--json']]) {
      expect(seen(await installed(args, t.memory, t.env)), args.join(' ')).toEqual(seen(await byItself(args, t.memory, t.env)))
    }
    expect(session.ran()).toBe(2)
  })

  it('a sync the watch runs stops with its client: Ctrl-C drops the request it waits on, and the next sync runs at once', async () => {
    const t = await tree({stalling: true})
    const network = t.network!
    const watch = await startWatch(t.root, t.env, 'on demand')
    expect((await installed(['sync'], t.root, t.env)).code).toBe(0)
    network.stall(true)
    const client = spawn(installedJarvis, ['sync'], {cwd: t.root, env: t.env, stdio: 'ignore'})
    world.children.push(client)
    const exited = new Promise((resolve) => client.once('exit', (code, signal) => resolve({code, signal})))
    await until('the sync to wait for the server', () => (network.held.length > 0 ? true : undefined))
    expect(watch.running()).toBe(2)
    client.kill('SIGINT')
    expect(await exited).toEqual({code: null, signal: 'SIGINT'})
    // Before, the watch waited on for the answer (sync.requestTimeout, 60 s), the tree locked all that time.
    await until('the watch to drop the request', () => (network.held.every((request) => request.dropped) ? true : undefined))
    network.stall(false)
    await writeFile(join(t.memory, 'gateway.md'), '# Gateway\n\nThe gateway deploy waits for the health check.\n')
    const next = await installed(['sync', '--json'], t.root, t.env)
    expect(next.code, next.stderr).toBe(0)
    expect(JSON.parse(next.stdout).result.pushed).toContain('gateway.md')
    expect(watch.running()).toBe(3)
    expect(watch.declined()).toEqual([])
  })

  it('a sync at a terminal counts its files there, as jarvis does by itself', async () => {
    const t = await tree()
    const watch = await startWatch(t.root, t.env, 'on demand')
    await mkdir(join(t.memory, 'bulk'))
    await Promise.all(Array.from({length: 60}, (_, i) => writeFile(join(t.memory, 'bulk', `n${i}.md`), `# Note ${i}\n`)))
    // util-linux's script gives the call a terminal for its stdout and stderr.
    const atTerminal = await runProcessOf('script', ['-qec', `${installedJarvis} sync`, '/dev/null'], t.root, t.env)
    expect(atTerminal.code, atTerminal.stdout).toBe(0)
    // The 60 and the tree's first two files, each counted.
    expect(atTerminal.stdout).toContain('\rsyncing 1/62\rsyncing 2/62')
    expect(atTerminal.stdout).toContain('\rsyncing 62/62')
    expect(watch.ran()).toBe(1)
  })

  it('leaves to jarvis what the watch must not run: another environment, flags for oclif, another tree, no tree', async () => {
    const t = await tree()
    const other = await tree()
    const watch = await startWatch(t.root, t.env)
    const cases: Array<{args: string[]; env?: NodeJS.ProcessEnv; cwd?: string; why: string}> = [
      {args: ['recall', 'deploy'], env: {...t.env, JARVIS_EMBEDDINGS: 'off'}, why: 'JARVIS_EMBEDDINGS differs'},
      {args: ['memory', 'ls'], env: {...t.env, JARVIS_CONTENT_TYPE: 'json'}, why: 'JARVIS_CONTENT_TYPE is set'},
      // A locale the system lacks: no word from the client about it either, as jarvis by itself says none.
      {args: ['memory', 'ls'], env: {...t.env, LANG: 'xx_NOWHERE.UTF-8', LC_ALL: 'xx_NOWHERE.UTF-8'}, why: 'LANG differs'},
      {args: ['recall', 'deploy', '--limit', '11'], why: 'flags the fast door leaves to oclif'},
      {args: ['memory', 'ls', '--help'], why: 'flags the fast door leaves to oclif'},
      {args: ['memory', 'ls', '--dir', other.root], why: 'another tree'},
      {args: ['memory', 'ls', '--dir', join(t.root, 'nowhere')], why: 'not in a tree'},
    ]
    for (const {args, env = t.env, cwd = t.root} of cases) {
      const warm = seen(await installed(args, cwd, env))
      expect(warm, args.join(' ')).toEqual(seen(await byItself(args, cwd, env)))
    }
    expect(watch.ran()).toBe(0)
    expect(watch.declined().map((why, index) => why.startsWith(cases[index].why))).toEqual(cases.map(() => true))
    // Commands it never runs are not even sent.
    const status = await installed(['status', '--offline', '--json'], t.root, t.env)
    expect(watch.declined().length).toBe(cases.length)
    // jarvis status says how many it left to jarvis, and why the last. One more than the calls: the recall jarvis
    // then ran itself, with another embeddings provider, asked the watch for its answer, which it left too.
    expect(JSON.parse(status.stdout).result.watch).toMatchObject({process: 'jarvis sync --watch', pid: watch.child.pid, ran: 0, declined: cases.length + 1, lastDeclined: 'not in a tree'})
  })

  it('a tree whose path leaves no room for a socket inside it: the shell finds its watch in the user’s own folder, and trusts no other', async () => {
    const t = await tree({longPath: true})
    const runtime = join(t.parent!, 'run')
    await mkdir(runtime, {mode: 0o700})
    const input = hookInput(t.root)
    // The folder of the user's sockets, then, when there is none, the temporary folder (src/warm/protocol.ts, warmSocketOf).
    const envs = [{...t.env, XDG_RUNTIME_DIR: runtime}, {...t.env, TMPDIR: `${runtime}/`}]
    let watch: Awaited<ReturnType<typeof startWatch>> | undefined
    for (const env of envs) {
      if (watch) {
        watch.child.kill('SIGTERM')
        await watch.exited
      }
      watch = await startWatch(t.root, env)
      for (const args of [['memory', 'ls'], ['recall', 'kamal', '--json']]) {
        expect(seen(await installed(args, t.memory, env)), args.join(' ')).toEqual(seen(await byItself(args, t.memory, env)))
      }
      expect(seen(await hookBy('installed', t.root, env, input))).toEqual(seen(await hookBy('itself', t.root, env, input)))
      expect(watch.ran()).toBe(3)
    }
    // Once others may read or write the folder, whoever listens there would get the call's environment, its token
    // among it: the call is not sent, and jarvis runs it itself.
    await chmod(join(runtime, `jarvis-${process.getuid!()}`), 0o755)
    expect(seen(await installed(['memory', 'ls'], t.root, envs[1]))).toEqual(seen(await byItself(['memory', 'ls'], t.root, envs[1])))
    expect(watch!.ran()).toBe(3)
    expect(watch!.declined()).toEqual([])
  })

  it('a watch killed with SIGKILL, before a call or while it runs one, leaves the call to jarvis: nothing lost', async () => {
    const t = await tree()
    const first = await startWatch(t.root, t.env)
    first.child.kill('SIGKILL')
    await first.exited
    // A socket nobody answers at.
    expect(seen(await installed(['memory', 'ls'], t.root, t.env))).toEqual(seen(await byItself(['memory', 'ls'], t.root, t.env)))
    expect(JSON.parse((await installed(['status', '--offline', '--json'], t.root, t.env)).stdout).result).not.toHaveProperty('watch')

    // A sync of 300 new files, the watch killed once it runs the call: whenever it dies, the call ends as jarvis's own.
    const watch = await startWatch(t.root, t.env)
    await mkdir(join(t.memory, 'bulk'))
    await Promise.all(Array.from({length: 300}, (_, i) => writeFile(join(t.memory, 'bulk', `n${i}.md`), `# Note ${i}\n\n${'words '.repeat(200)}\n`)))
    const call = installed(['sync'], t.root, t.env)
    await until('the watch to run the call', () => (watch.running() > 0 ? true : undefined))
    watch.child.kill('SIGKILL')
    await watch.exited
    const synced = await call
    expect(synced.code, synced.stderr).toBe(0)
    const after = await byItself(['sync', '--json'], t.root, t.env)
    expect(JSON.parse(after.stdout).result).toMatchObject({pushed: [], pulled: []})
    const other = await makeClient(t.server.url, 'claude')
    world.dirs.push(other.root)
    expect((await runJarvisBuilt(['sync'], {cwd: other.root, env: {...t.env, DEBUG: '', JARVIS_WARM: 'off'}})).code).toBe(0)
    expect(await readFile(join(other.memory, 'bulk', 'n299.md'), 'utf8')).toContain('# Note 299')
  })

  it('the client script speaks the protocol the server does, and passes Perl’s strict and warnings', async () => {
    const script = await readFile(warmCallScript, 'utf8')
    expect(script).toContain(`'{"v":${WARM_PROTOCOL},"op":"call"`)
    expect(execFileSync('perl', ['-Mstrict', '-Mwarnings', '-c', warmCallScript], {encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']})).toBe('')
  })

  /** An agent's prompt hook as Claude Code runs it: its input on stdin, its project folder in CLAUDE_PROJECT_DIR. */
  const promptHook = ['hook', 'prompt', '--agent', 'claude']
  const hookInput = (cwd: string, prompt = 'How do we deploy with “kamal”? A \\ backslash,\na second line\tand a tab.') =>
    JSON.stringify({session_id: 'session-1', hook_event_name: 'UserPromptSubmit', cwd, transcript_path: join(cwd, 'none.jsonl'), prompt})
  const hookBy = (how: 'installed' | 'itself', cwd: string, env: NodeJS.ProcessEnv, input: string, args = promptHook) =>
    runJarvisBuilt(args, {cwd, env: how === 'itself' ? {...env, JARVIS_WARM: 'off'} : env, input, installed: how === 'installed'})

  it('an agent’s prompt hook: the watch answers from the stdin the agent wrote what jarvis answers by itself', async () => {
    const t = await tree()
    // The watch with the few variables an agent hands the jarvis mcp it starts (Codex: a dozen, and its config's).
    const session = await startWatch(t.root, t.env, 'mcp')
    // The hook gets all of the user's: another token (a prompt hook never uses it), the agent's own variables, the
    // user's folders, locale, proxy, certificates, Node options and embeddings provider. None changes its answer.
    const env = {
      ...t.env,
      CLAUDE_PROJECT_DIR: t.root,
      JARVIS_TOKEN: `${TOKENS.claude}-not-the-watch's`,
      XDG_RUNTIME_DIR: join(t.root, 'run'),
      LANG: 'C.UTF-8',
      LC_CTYPE: 'C.UTF-8',
      HTTPS_PROXY: 'http://127.0.0.1:9',
      NO_PROXY: 'localhost',
      SSL_CERT_FILE: join(t.root, 'corporate-ca.pem'),
      NODE_OPTIONS: '--max-old-space-size=3072',
      JARVIS_EMBEDDINGS_URL: 'http://127.0.0.1:9/v1',
      JARVIS_EMBEDDINGS_KEY: 'not-a-key',
    }
    const input = hookInput(t.root)
    const warm = seen(await hookBy('installed', t.memory, env, input))
    expect(warm.stdout).toContain('[MEMORY CONTEXT]')
    expect(warm.stdout).toContain('ops/deploy.md')
    expect(warm).toEqual(seen(await hookBy('itself', t.memory, env, input)))
    expect(session.ran()).toBe(1)
    expect(session.declined()).toEqual([])
  })

  it('an agent’s stop hook: the watch records the session’s episode as jarvis records it by itself', async () => {
    const t = await tree()
    const session = await startWatch(t.root, t.env, 'mcp')
    const env = {...t.env, CLAUDE_PROJECT_DIR: t.root}
    const transcript = join(t.root, 'session.jsonl')
    const deploy = join(t.memory, 'ops', 'deploy.md')
    const turn = {prompt: 'Move the deploys to Fridays', tools: [['Edit', {file_path: deploy, old_string: 'kamal', new_string: 'kamal on Fridays'}]] as Array<[string, Record<string, unknown>]>, answer: 'We decided to deploy on Fridays from now on.'}
    await writeFile(transcript, claudeTranscript('session-stop', t.root, [turn]))
    const input = JSON.stringify({session_id: 'session-stop', hook_event_name: 'Stop', cwd: t.root, transcript_path: transcript, stop_hook_active: false})
    const stop = ['hook', 'stop', '--agent', 'claude']
    const warm = seen(await hookBy('installed', t.root, env, input, stop))
    expect(warm).toEqual({code: 0, stdout: '', stderr: ''})
    expect(session.ran()).toBe(1)
    const episode = join(t.memory, 'episodes', '2026-09-01', 'claude-session-stop.md')
    const recorded = await readFile(episode, 'utf8')
    expect(recorded).toContain('## Decided\n- We decided to deploy on Fridays from now on.')
    expect(recorded).toContain('`.memory/ops/deploy.md` (edited)')
    // jarvis by itself, from the same stdin, would write the same episode: it finds nothing to change.
    expect(seen(await hookBy('itself', t.root, env, input, stop))).toEqual(warm)
    expect(await readFile(episode, 'utf8')).toBe(recorded)
    expect(await hooksLog(t.root)).toBe('')
    await waitForBackgroundSyncs(t.root)
  })

  it('leaves a hook to jarvis, with the same stdin, when the watch must not run it, is killed or stops answering', async () => {
    const t = await tree()
    const other = await tree()
    const watch = await startWatch(t.root, t.env)
    const cases: Array<{args?: string[]; env?: NodeJS.ProcessEnv; input?: string; byClient?: boolean; why: string}> = [
      // A time zone of its own: a hook reads it from its process, not from its call.
      {env: {...t.env, TZ: 'Asia/Tokyo'}, why: 'TZ differs'},
      // The session is in another tree than the one the shell found from its working folder.
      {input: hookInput(other.root, 'Where is the gateway deploy?'), why: 'the session is not in'},
      {args: [...promptHook, '--help'], why: 'not a hook a watch runs'},
      // bin/jarvis does not even send session-start; the client script itself does, and the watch declines it.
      {args: ['hook', 'session-start', '--agent', 'claude'], byClient: true, why: 'not a hook a watch runs'},
    ]
    const byClient = (args: string[], env: NodeJS.ProcessEnv, input: string) => runCollected('perl', [warmCallScript, join(t.root, '.nexus', 'warm.sock'), t.root, ...args], {cwd: t.root, env, input})
    // Session start names the moment it read the memory.
    const untimed = (run: {code: number | null; stdout: string; stderr: string}) => ({...seen(run), stdout: run.stdout.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>')})
    for (const {args = promptHook, env = t.env, input = hookInput(t.root), byClient: direct} of cases) {
      const warm = untimed(direct ? await byClient(args, env, input) : await hookBy('installed', t.root, env, input, args))
      expect(warm, args.join(' ')).toEqual(untimed(await hookBy('itself', t.root, env, input, args)))
      expect(warm.stdout.length, args.join(' ')).toBeGreaterThan(0)
    }
    expect(watch.ran()).toBe(0)
    expect(watch.declined().map((why, index) => why.startsWith(cases[index].why))).toEqual(cases.map(() => true))

    const input = hookInput(t.root)
    const answer = seen(await hookBy('itself', t.root, t.env, input))
    expect(answer.stdout).toContain('ops/deploy.md')
    // Stopped: it takes the connection but never answers it.
    watch.child.kill('SIGSTOP')
    try {
      expect(seen(await hookBy('installed', t.root, t.env, input))).toEqual(answer)
    } finally {
      watch.child.kill('SIGCONT')
    }
    watch.child.kill('SIGKILL')
    await watch.exited
    expect(seen(await hookBy('installed', t.root, t.env, input))).toEqual(answer)
  })

  it('a hook the watch took and then never answered is run by jarvis itself, in seconds', async () => {
    const t = await tree()
    // A watch hung after taking the call, which no real one can be made to do on demand: a socket that says
    // `accepted` and nothing more.
    const hung = createServer((connection) => {
      connection.on('error', () => {})
      connection.once('data', () => connection.write('accepted\n'))
    })
    await new Promise<void>((resolve) => hung.listen(join(t.root, '.nexus', 'warm.sock'), resolve))
    try {
      const input = hookInput(t.root)
      const answer = seen(await hookBy('itself', t.root, t.env, input))
      expect(answer.stdout).toContain('ops/deploy.md')
      expect(seen(await hookBy('installed', t.root, t.env, input))).toEqual(answer)
    } finally {
      await new Promise((resolve) => hung.close(resolve))
    }
  })

  it('a stop hook in a locked tree runs once, in the watch (the client waits out its wait for the lock), and what it recorded is written once the tree is free', async () => {
    const t = await tree()
    const session = await startWatch(t.root, t.env, 'mcp')
    const env = {...t.env, CLAUDE_PROJECT_DIR: t.root}
    const input = JSON.stringify({session_id: 'locked-session', hook_event_name: 'Stop', cwd: t.root, last_assistant_message: 'We decided to use Redis for the job queue.'})
    // Another jarvis holds the tree for longer than sync.lockTimeout (5 s, the default) while the agent's turn ends.
    let release!: () => void
    let locked!: () => void
    const taken = new Promise<void>((resolve) => (locked = resolve))
    const holder = withTreeLock(t.root, {}, () => new Promise<void>((resolve) => ((release = resolve), locked())))
    await taken
    try {
      expect(seen(await hookBy('installed', t.root, env, input, ['hook', 'stop', '--agent', 'claude']))).toEqual({code: 0, stdout: '', stderr: ''})
    } finally {
      release()
      await holder
    }
    // The watch ran it; jarvis did not run it a second time after it: one wait for the lock, one line about it.
    expect(session.running()).toBe(1)
    const lines = (await hooksLog(t.root)).trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/ claude stop .* is locked by process \d+.*: the episode waits in \.nexus\/pending-episodes\//)
    // Kept, the session's decision reaches its episode once the tree is free.
    await waitForBackgroundSyncs(t.root)
    const episodes = await readdir(join(t.memory, 'episodes'), {recursive: true})
    const episode = episodes.find((name) => name.endsWith('claude-locked-session.md'))
    expect(await readFile(join(t.memory, 'episodes', episode!), 'utf8')).toContain('- We decided to use Redis for the job queue.')
  })

  it('compares only the variables that change a call, a missing one as an empty one', () => {
    expect(envDifference({PATH: '/a', JARVIS_TOKEN: 'x', TERM: 'xterm'}, {PATH: '/b', JARVIS_TOKEN: 'x'})).toBeUndefined()
    expect(envDifference({JARVIS_AGENT: ''}, {})).toBeUndefined()
    expect(envDifference({}, {JARVIS_AGENT: 'gemini'})).toBe('JARVIS_AGENT')
    expect(envDifference({HOME: '/home/a'}, {HOME: '/home/b'})).toBe('HOME')
    expect(envDifference({DEBUG: 'jarvis:*'}, {})).toBe('DEBUG')
    expect(envDifference({CLAUDE_PROJECT_DIR: '/a'}, {})).toBe('CLAUDE_PROJECT_DIR')
    // A hook reads only the home folder, the time zone and the debug switch from its process; all else from its call.
    const user = {HOME: '/home/a', TZ: 'Europe/Berlin', LANG: 'de_DE.UTF-8', LC_CTYPE: 'de_DE.UTF-8', NODE_EXTRA_CA_CERTS: '/etc/corp.pem', HTTPS_PROXY: 'http://proxy:3128', JARVIS_EMBEDDINGS_KEY: 'k', CLAUDE_PROJECT_DIR: '/a'}
    expect(hookEnvDifference(user, {HOME: '/home/a', TZ: 'Europe/Berlin', LANG: 'C.UTF-8'})).toBeUndefined()
    expect(hookEnvDifference(user, {HOME: '/home/a'})).toBe('TZ')
    expect(hookEnvDifference({...user, DEBUG: 'jarvis:*'}, {HOME: '/home/a', TZ: 'Europe/Berlin'})).toBe('DEBUG')
  })
})
