/**
 * The door that skips oclif (bin/run.js → src/cli/fast.ts) answers exactly as oclif would: `--version` prints
 * oclif's own line, the hot commands print the same bytes and exit with the same code whichever door runs them,
 * and anything the fast door cannot read exactly as oclif would (help, a bad value) still reaches oclif.
 * Each call runs the built bin/run.js twice — once as a user runs it, once through oclif's `execute` — with a
 * preload that tells whether oclif was loaded, so that a call quietly falling back to oclif fails the test.
 */
import {execFile, spawn} from 'node:child_process'
import {mkdir, readFile, utimes, writeFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'
import {promisify} from 'node:util'

import type {Command} from '@oclif/core'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {ActionSpec} from '../../src/cli/actions/spec.js'
import {FAST_ACTIONS} from '../../src/cli/fast.js'
import {nexusConfigSchema} from '../../src/schemas/nexus.js'
import {fakeGithubToken} from '../files/helpers.js'
import {assertBuilt, runJs} from '../hook/helpers.js'
import {largeCorpus, writeCorpusFast} from '../search/corpus.js'
import {makeClient, removeAll, startTestServer, tempDir, TOKENS, type TestClient, type TestServer} from '../helpers/world.js'

const run = promisify(execFile)
const OCLIF_LOADED = 'jarvis-test: oclif was loaded'
const oclifEntry = pathToFileURL(createRequire(import.meta.url).resolve('@oclif/core')).href

/** bin/run.js without its fast door: oclif's `execute` from the package's root, with the process's argv as bin/run.js would see it (oclif's help reads it). */
function throughOclif(args: string[]): string {
  return `process.argv.splice(1, Infinity, ${JSON.stringify(runJs)}, ...${JSON.stringify(args)}); const {execute} = await import(${JSON.stringify(oclifEntry)}); await execute({dir: ${JSON.stringify(join(runJs, '..', '..'))}})`
}

/** The oclif command class of each fast action, to hold the two flag definitions to each other. */
const COMMANDS: Record<string, () => Promise<{default: typeof Command}>> = {
  'memory-snapshot': () => import('../../src/commands/memory/snapshot.js'),
  'memory-append': () => import('../../src/commands/memory/append.js'),
  'memory-ls': () => import('../../src/commands/memory/ls.js'),
  'memory-search': () => import('../../src/commands/memory/search.js'),
  recall: () => import('../../src/commands/recall.js'),
  sync: () => import('../../src/commands/sync.js'),
}
/** Flags the fast door leaves to oclif on purpose. */
const LEFT_TO_OCLIF: Record<string, string[]> = {sync: ['watch']}

describe('fast doors', () => {
  let work: string
  let preload: string
  let server: TestServer
  let client: TestClient
  let env: NodeJS.ProcessEnv

  beforeAll(async () => {
    assertBuilt()
    work = await tempDir('jarvis-fast-')
    preload = join(work, 'tell-oclif.cjs')
    // oclif is CommonJS: its modules requiring each other pass through Module._load.
    await writeFile(
      preload,
      `const Module = require('node:module'); const load = Module._load; let seen = false
Module._load = function (request, parent, ...rest) { if (parent && parent.filename && parent.filename.includes('@oclif')) seen = true; return load.call(this, request, parent, ...rest) }
process.on('exit', () => { if (seen) require('node:fs').writeSync(2, ${JSON.stringify(`${OCLIF_LOADED}\n`)}) })`,
    )
    server = await startTestServer()
    client = await makeClient(server.url, 'claude')
    await writeCorpusFast(client.memory, largeCorpus(40))
    await client.sync()
    env = {...process.env, NO_COLOR: '1', JARVIS_TOKEN: TOKENS.claude, JARVIS_AGENT: '', JARVIS_SERVER: '', JARVIS_DIR: '', XDG_CONFIG_HOME: join(work, 'xdg'), DEBUG: ''}
  }, 60_000)

  afterAll(async () => {
    await server?.close()
    await removeAll([work, client?.root].filter(Boolean) as string[])
  })

  interface Door {
    code: number
    stdout: string
    stderr: string
    oclif: boolean
  }

  async function door(which: 'fast' | 'oclif', args: string[], cwd: string): Promise<Door> {
    const argv =
      which === 'fast'
        ? ['--require', preload, runJs, ...args]
        : ['--require', preload, '--input-type=module', '-e', throughOclif(args)]
    const done = await run(process.execPath, argv, {cwd, env}).then(
      ({stdout, stderr}) => ({code: 0, stdout, stderr}),
      (error: {code: number; stdout: string; stderr: string}) => ({code: error.code, stdout: error.stdout, stderr: error.stderr}),
    )
    return {...done, stderr: done.stderr.replace(`${OCLIF_LOADED}\n`, ''), oclif: done.stderr.includes(OCLIF_LOADED)}
  }

  /** Both doors, one after the other, in the same tree: the same bytes and exit code. */
  async function bothDoors(args: string[], cwd = client.root): Promise<Door> {
    const fast = await door('fast', args, cwd)
    const oclif = await door('oclif', args, cwd)
    expect(oclif.oclif, 'the preload sees oclif when it is loaded').toBe(true)
    expect({code: fast.code, stdout: fast.stdout, stderr: fast.stderr}).toEqual({code: oclif.code, stdout: oclif.stdout, stderr: oclif.stderr})
    return fast
  }

  it('--version is the line oclif prints', async () => {
    const fast = await run(process.execPath, [runJs, '--version'])
    const oclif = await run(process.execPath, ['--input-type=module', '-e', throughOclif(['--version'])])
    expect(fast.stdout).toMatch(/^jarvis-memory\/\d+\.\d+\.\d+ \S+ node-v\d+/)
    expect(fast.stdout).toBe(oclif.stdout)
  })

  it('hook --help is oclif’s help, not a hook run', async () => {
    const help = await run(process.execPath, [runJs, 'hook', '--help'])
    expect(help.stdout).toContain('USAGE')
    expect(help.stdout).toContain('--max-tokens')
  })

  it.each([
    ['memory ls', ['memory', 'ls']],
    ['memory ls with a prefix, a limit and --json', ['memory', 'ls', 'bulk/00/', '--limit', '3', '--json']],
    ['recall with a repeated tag', ['recall', 'pgbouncer pooling', '--tag', 'database', '--tag', 'postgres', '--limit', '2']],
    ['recall --json', ['recall', 'clock skew', '--json']],
    ['memory search', ['memory', 'search', 'pgbouncer pooling']],
    ['memory search with file and event filters, --json', ['memory', 'search', 'clock skew', '--tag', 'security', '--kind', 'decision', '--limit', '3', '--json']],
    ['memory snapshot with scopes', ['memory', 'snapshot', '--scopes', 'global, project:none', '--limit-recent', '5']],
    ['memory snapshot --json', ['memory', 'snapshot', '--json']],
    ['a no-op sync', ['sync']],
    ['a no-op sync, -q', ['sync', '-q']],
    ['a no-op sync --json', ['sync', '--json']],
  ])('%s: the fast door prints what oclif prints', async (_label, args) => {
    const answer = await bothDoors(args)
    expect(answer.code).toBe(0)
    expect(answer.oclif).toBe(false)
  })

  it('a reader that stops reading (`| head`) ends the call quietly, exit 0, through either door', async () => {
    for (const args of [['memory', 'ls', '--json'], ['memory', '--help']]) {
      const child = spawn(process.execPath, [runJs, ...args], {cwd: client.root, env, stdio: ['ignore', 'pipe', 'pipe']})
      // Closed before anything is read: the call's first write finds no reader (EPIPE).
      child.stdout.destroy()
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
      expect({args, code, stderr}).toEqual({args, code: 0, stderr: ''})
    }
  })

  it('memory ls of new files, one front matter broken: the fast door parses them (yaml loaded on first use) as oclif does', async () => {
    const dir = join(client.memory, 'parsed')
    await mkdir(dir, {recursive: true})
    await writeFile(join(dir, 'good.md'), '---\ntitle: "Parsed here"\ntags: [yaml, lazy]\n---\nBody.\n')
    await writeFile(join(dir, 'broken.md'), '---\ntitle: [unclosed\n---\nBody.\n')
    const answer = await bothDoors(['memory', 'ls', 'parsed/', '--json'])
    expect(answer.code).toBe(0)
    expect(answer.oclif).toBe(false)
    const files = (JSON.parse(answer.stdout) as {result: {files: Array<{path: string; title?: string; tags: string[]; problem?: string}>}}).result.files
    expect(files.find((file) => file.path === 'parsed/good.md')).toMatchObject({title: 'Parsed here', tags: ['yaml', 'lazy']})
    expect(files.find((file) => file.path === 'parsed/broken.md')?.problem).toMatch(/line 2/)
  })

  it('a no-op sync loads neither node:crypto nor node:worker_threads, nor zod, nor runs an ES module (bin/run.js is CommonJS); a sync with an edit hashes it (crypto loaded on use) and pushes it, and neither it nor the sync that pulls it loads zod', async () => {
    const report = join(work, 'builtins.txt')
    const tell = join(work, 'tell-builtins.cjs')
    const watched = ['NativeModule crypto', 'NativeModule worker_threads', 'NativeModule internal/modules/esm/module_job']
    // zod's global registry is made when zod loads.
    await writeFile(tell, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(report)}, [...process.moduleLoadList.filter((m) => ${JSON.stringify(watched)}.includes(m)), ...(globalThis.__zod_globalRegistry ? ['zod'] : [])].join('\\n')))`)
    // A server of its own: files pulled from another test's tree would be new to the scan, and hashed.
    const alone = await startTestServer()
    const own = await makeClient(alone.url, 'claude')
    const other = await makeClient(alone.url, 'gemini')
    try {
      // Written an hour ago: a scan trusts their cached hashes at once (a file changed within the last 2 s is hashed again).
      const hourAgo = new Date(Date.now() - 3_600_000)
      for (const name of ['a.md', 'b.md']) {
        await writeFile(join(own.memory, name), `# ${name}\n`)
        await utimes(join(own.memory, name), hourAgo, hourAgo)
      }
      const sync = async (root = own.root) => {
        // Each tree with its own agent's token (a server refuses another agent's).
        await run(process.execPath, ['--require', tell, runJs, 'sync', '--quiet'], {cwd: root, env: root === own.root ? env : {...env, JARVIS_TOKEN: TOKENS.gemini}})
        return (await readFile(report, 'utf8')).split('\n').filter(Boolean)
      }
      await sync()
      await sync()
      expect(await sync()).toEqual([])
      // B's first call parses its config (zod) and keeps it (.nexus/config-read.json), as any tree's first sync does.
      await other.sync()
      await sync(other.root)
      await writeFile(join(own.memory, 'hashed-on-use.md'), '# hashed on use\n')
      const pushed = await sync()
      expect(pushed).toContain('NativeModule crypto')
      // The push's answer, the status that lists the file and the sync state's journal are read by hand checks.
      expect(pushed).not.toContain('zod')
      expect(await sync(other.root)).not.toContain('zod')
      expect(await readFile(join(other.memory, 'hashed-on-use.md'), 'utf8')).toBe('# hashed on use\n')
    } finally {
      await alone.close()
      await removeAll([own.root, other.root])
    }
  })

  it('keeps the config as zod parsed it (.nexus/config-read.json), taken only for the same text and schemas: an edit is read again', async () => {
    const alone = await startTestServer()
    const own = await makeClient(alone.url, 'claude')
    try {
      const sync = () => run(process.execPath, [runJs, 'sync', '--quiet'], {cwd: own.root, env}).then(() => 0, (error: {code: number; stderr: string}) => ({code: error.code, stderr: error.stderr}))
      const configFile = join(own.root, '.nexus', 'config.json')
      const keptFile = join(own.root, '.nexus', 'config-read.json')
      expect(await sync()).toBe(0)
      const kept = JSON.parse(await readFile(keptFile, 'utf8')) as {schemas: string; text: string; config: unknown}
      const text = await readFile(configFile, 'utf8')
      expect(kept.text).toBe(text)
      expect(kept.config).toEqual(nexusConfigSchema.parse(JSON.parse(text)))
      // Taken as it is: a kept answer that says otherwise than the file shows it is the one used.
      const off = {...(JSON.parse(text) as Record<string, unknown>), sync: {enabled: false}}
      await writeFile(keptFile, JSON.stringify({...kept, config: nexusConfigSchema.parse(off)}))
      const refused = await sync()
      expect(refused).toMatchObject({code: 2, stderr: expect.stringContaining('sync is switched off')})
      // Another text, or other schemas: parsed again.
      await writeFile(keptFile, JSON.stringify({...kept, text: `${text} `, config: nexusConfigSchema.parse(off)}))
      expect(await sync()).toBe(0)
      await writeFile(keptFile, JSON.stringify({...kept, schemas: '0000000000000000', config: nexusConfigSchema.parse(off)}))
      expect(await sync()).toBe(0)
      // An edit of the config is seen at once, whatever was kept.
      await writeFile(configFile, JSON.stringify(off))
      expect(await sync()).toMatchObject({code: 2, stderr: expect.stringContaining('sync is switched off')})
      expect((JSON.parse(await readFile(keptFile, 'utf8')) as {text: string}).text).toBe(JSON.stringify(off))
    } finally {
      await alone.close()
      await removeAll([own.root])
    }
  })

  it('errors: the same message and exit code (bad field 2, secret 5, server down 3, not a tree 2)', async () => {
    const badKind = await bothDoors(['memory', 'append', '--kind', 'opinion', '--key', 'fact:x', '--content', 'x'])
    expect(badKind.code).toBe(2)
    expect(badKind.stderr).toContain('kind')
    expect(badKind.oclif).toBe(false)

    const secret = await bothDoors(['memory', 'append', '--kind', 'fact', '--key', 'fact:bot', '--content', `The token is ${fakeGithubToken()}.`, '--json'])
    expect(secret.code).toBe(5)
    expect(JSON.parse(secret.stdout).status).toBe(5)

    const down = await bothDoors(['memory', 'snapshot', '--server', 'http://127.0.0.1:9'])
    expect(down.code).toBe(3)
    const searchDown = await bothDoors(['memory', 'search', 'pgbouncer', '--server', 'http://127.0.0.1:9'])
    expect(searchDown.code).toBe(3)
    expect(searchDown.oclif).toBe(false)

    const outside = await bothDoors(['memory', 'ls'], work)
    expect(outside.code).toBe(2)
    expect(outside.stderr).toContain('not a jarvis tree')
    expect(outside.oclif).toBe(false)
  })

  it('a sync that finds a secret, or a config zod refuses, answers as oclif does: what the on-use scripts throw is the bundle’s own error', async () => {
    // A server of its own: the refused file stays in the tree.
    const alone = await startTestServer()
    const own = await makeClient(alone.url, 'claude')
    try {
      await writeFile(join(own.memory, 'leak.md'), `# Leak\n\nThe token is ${fakeGithubToken()}.\n`)
      const secret = await bothDoors(['sync'], own.root)
      expect(secret.code).toBe(5)
      expect(secret.stderr).toContain('leak.md')
      expect(secret.oclif).toBe(false)

      const configFile = join(own.root, '.nexus', 'config.json')
      await writeFile(configFile, JSON.stringify({...(JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>), server: 'ftp://127.0.0.1'}))
      const refused = await bothDoors(['sync'], own.root)
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain('must be an http(s) URL')
      expect(refused.oclif).toBe(false)
    } finally {
      await alone.close()
      await removeAll([own.root])
    }
  })

  it('DEBUG=jarvis:* prints the debug lines through the fast door, and nothing without it', async () => {
    const withDebug = async (DEBUG: string) =>
      run(process.execPath, ['--require', preload, runJs, 'sync', '--quiet'], {cwd: client.root, env: {...env, DEBUG}}).then(({stderr}) => stderr)
    const asked = await withDebug('jarvis:*')
    expect(asked).not.toContain(OCLIF_LOADED)
    expect(asked).toMatch(/jarvis:protocol GET \/api\/memory\/status/)
    expect(asked).toMatch(/jarvis:store tree lock of .* taken/)
    // One namespace asked: only its lines.
    const storeOnly = await withDebug('jarvis:store')
    expect(storeOnly).toMatch(/jarvis:store tree lock of .* taken/)
    expect(storeOnly).not.toContain('jarvis:protocol')
    expect(await withDebug('')).toBe('')
    expect(await withDebug('express:*')).toBe('')
  })

  it('an append through the fast door is the same event as through oclif', async () => {
    const fast = await door('fast', ['memory', 'append', '--kind', 'fact', '--key', 'fact:fast_door', '--content', 'Written through the fast door.'], client.root)
    const oclif = await door('oclif', ['memory', 'append', '--kind', 'fact', '--key', 'fact:oclif_door', '--content', 'Written through oclif.'], client.root)
    const shape = (text: string) => text.replace(/evt_\w+/g, 'evt_…').replace(/fact:\w+_door/g, 'fact:…')
    expect(fast.oclif).toBe(false)
    expect([fast.code, shape(fast.stdout), fast.stderr]).toEqual([oclif.code, shape(oclif.stdout), oclif.stderr])
    const listed = await door('fast', ['memory', 'snapshot', '--json'], client.root)
    expect(listed.stdout).toContain('Written through the fast door.')
  })

  it.each([
    ['help', ['memory', 'ls', '--help']],
    ['-h', ['recall', '-h']],
    ['a value out of range', ['memory', 'ls', '--limit', '0']],
    ['not an integer', ['recall', 'x', '--limit', 'two']],
    ['an unknown flag', ['memory', 'snapshot', '--colour']],
    ['a missing argument', ['recall']],
    ['a flag given twice', ['memory', 'ls', '--limit', '2', '--limit', '3']],
    ['a word after a repeatable flag', ['recall', '--tag', 'database', 'pgbouncer']],
    ['flags that exclude each other', ['memory', 'append', '--from-file', 'events.json', '--kind', 'fact']],
  ])('%s goes to oclif, which answers as always', async (_label, args) => {
    const answer = await bothDoors(args)
    expect(answer.oclif).toBe(true)
  })

  it.each(Object.keys(FAST_ACTIONS))('%s: the fast door reads the same flags as the oclif command', async (id) => {
    const [{spec}, {default: command}] = (await Promise.all([FAST_ACTIONS[id](), COMMANDS[id]()])) as [{spec: ActionSpec}, {default: typeof Command & {baseFlags?: Record<string, unknown>}}]
    const oclifFlags = {...command.baseFlags, ...command.flags} as Record<string, Record<string, unknown> & {type: string; parse?: (input: string, ctx: unknown, opts: unknown) => Promise<unknown>}>
    expect(Object.keys(spec.flags).sort()).toEqual(Object.keys(oclifFlags).filter((name) => name !== 'dir' && !(LEFT_TO_OCLIF[id] ?? []).includes(name)).sort())
    for (const [name, flag] of Object.entries(spec.flags)) {
      const theirs = oclifFlags[name]
      expect({name, type: theirs.type}).toEqual({name, type: flag.type === 'boolean' ? 'boolean' : 'option'})
      if (flag.type === 'integer') expect(await theirs.parse!('7', undefined, theirs)).toBe(7)
      if (flag.type === 'string') expect(await (theirs.parse ?? (async (input: string) => input))('7', undefined, theirs)).toBe('7')
      expect({name, char: theirs.char, env: theirs.env, multiple: theirs.multiple || undefined, delimiter: theirs.delimiter, default: theirs.default, min: theirs.min, max: theirs.max}).toEqual({
        name,
        char: flag.char,
        env: flag.env,
        multiple: flag.multiple,
        delimiter: flag.delimiter,
        default: flag.default,
        min: flag.min,
        max: flag.max,
      })
      expect({name, exclusive: [...((theirs.exclusive as string[] | undefined) ?? [])].sort()}).toEqual({name, exclusive: [...(flag.exclusive ?? [])].sort()})
    }
    const args = Object.entries(command.args ?? {}).map(([name, arg]) => ({name, required: (arg as {required?: boolean}).required || undefined}))
    expect(args).toEqual(spec.args.map((arg) => ({name: arg.name, required: arg.required})))
  })
})
