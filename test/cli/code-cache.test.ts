/**
 * The fast door's code cache (src/cli/code-cache.ts): the built bin/run.js writes one cache per call after a call
 * that succeeded, uses it on the next, and answers the same with a cache that is missing, broken, stale or cannot be
 * written. What a user would notice: the same output and exit code every time, and no cache piling up.
 */
import {cp, mkdir, readdir, readFile, rm, stat, symlink, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {initTree} from '../../src/store/index.js'
import {assertBuilt, repoRoot, runJarvisBuilt} from '../hook/helpers.js'
import {makeClient, removeAll, startTestServer, tempDir, TOKENS} from '../helpers/world.js'

describe('the fast door’s code cache', () => {
  let work: string
  let root: string

  beforeAll(async () => {
    assertBuilt()
    work = await tempDir('jarvis-code-cache-')
    root = (await initTree(join(work, 'tree'), {agent: 'claude'})).root
    await writeFile(join(root, '.memory', 'notes.md'), '# Notes\n\nThe cache test.\n')
  })

  afterAll(() => removeAll([work]))

  /** `memory ls` with its own cache folder; everything else as a user's shell has it, without a server. */
  async function ls(cacheHome: string, extra: NodeJS.ProcessEnv = {}) {
    const env = {...process.env, XDG_CACHE_HOME: cacheHome, XDG_CONFIG_HOME: join(work, 'xdg'), JARVIS_AGENT: '', JARVIS_SERVER: '', JARVIS_DIR: '', JARVIS_CODE_CACHE: '', NO_COLOR: '1', ...extra}
    const run = await runJarvisBuilt(['memory', 'ls'], {cwd: root, env})
    return {code: run.code, stdout: run.stdout, stderr: run.stderr}
  }

  /** Every file under the cache folder, by its path below `<cacheHome>/jarvis/code-cache`. */
  async function cacheFiles(cacheHome: string): Promise<string[]> {
    const entries = await readdir(join(cacheHome, 'jarvis', 'code-cache'), {recursive: true, withFileTypes: true}).catch(() => [])
    return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name).slice(join(cacheHome, 'jarvis', 'code-cache').length + 1)).sort()
  }

  it('writes one cache after the first call, uses it unchanged after, and the answer never changes', async () => {
    const cacheHome = join(work, 'cache-first')
    const first = await ls(cacheHome)
    expect(first).toMatchObject({code: 0, stderr: ''})
    expect(first.stdout).toContain('notes.md')
    const files = await cacheFiles(cacheHome)
    expect(files).toEqual([expect.stringMatching(new RegExp(`^node${process.versions.node}-${process.arch}/[0-9a-f]{16}/memory-ls\\.[0-9a-f]{16}\\.bin$`))])
    const written = await stat(join(cacheHome, 'jarvis', 'code-cache', files[0]))
    expect(written.size).toBeGreaterThan(0)

    expect(await ls(cacheHome)).toEqual(first)
    // Taken, not written again.
    expect((await stat(join(cacheHome, 'jarvis', 'code-cache', files[0]))).mtimeMs).toBe(written.mtimeMs)
  })

  it('a broken cache is replaced, and the call answers as if there were none', async () => {
    const cacheHome = join(work, 'cache-broken')
    const clean = await ls(cacheHome)
    const [file] = await cacheFiles(cacheHome)
    const path = join(cacheHome, 'jarvis', 'code-cache', file)
    const garbage = Buffer.alloc((await stat(path)).size, 7)
    await writeFile(path, garbage)
    expect(await ls(cacheHome)).toEqual(clean)
    expect((await readFile(path)).equals(garbage)).toBe(false)
    await writeFile(path, 'short')
    expect(await ls(cacheHome)).toEqual(clean)
    expect((await stat(path)).size).toBeGreaterThan(5)
  })

  it('caches of an older build of the same call, and of another Node, are removed when a new one is written', async () => {
    const cacheHome = join(work, 'cache-stale')
    const cacheRoot = join(cacheHome, 'jarvis', 'code-cache')
    await ls(cacheHome)
    const [current] = await cacheFiles(cacheHome)
    const folder = join(cacheRoot, dirname(current))
    await writeFile(join(folder, 'memory-ls.0123456789abcdef.bin'), 'from an older build')
    await writeFile(join(folder, 'recall.0123456789abcdef.bin'), 'another call’s, kept')
    await mkdir(join(cacheRoot, 'node0.0.0-x64', 'install'), {recursive: true})
    await writeFile(join(cacheRoot, 'node0.0.0-x64', 'install', 'memory-ls.0123456789abcdef.bin'), 'from another Node')
    // Gone, so that the next call writes it again.
    await rm(join(cacheRoot, current))
    expect((await ls(cacheHome)).code).toBe(0)
    expect(await cacheFiles(cacheHome)).toEqual([current, join(dirname(current), 'recall.0123456789abcdef.bin')].sort())
  })

  /** The cache files, by the name before their content's hash (`memory-ls`, `on-use-yaml`), and when each was written. */
  async function cachesByName(cacheHome: string): Promise<Record<string, number>> {
    const files = await cacheFiles(cacheHome)
    return Object.fromEntries(await Promise.all(files.map(async (file) => [file.split('/').at(-1)!.split('.')[0], (await stat(join(cacheHome, 'jarvis', 'code-cache', file))).mtimeMs] as const)))
  }

  it('yaml, read only with a front matter, is a script of its own with its own cache: the call’s cache is written once and never holds it', async () => {
    const cacheHome = join(work, 'cache-yaml')
    const tree = (await initTree(join(work, 'tree-yaml'), {agent: 'claude'})).root
    await writeFile(join(tree, '.memory', 'plain.md'), '# Plain\n\nNo front matter.\n')
    const env = {...process.env, XDG_CACHE_HOME: cacheHome, XDG_CONFIG_HOME: join(work, 'xdg'), JARVIS_AGENT: '', JARVIS_SERVER: '', JARVIS_DIR: '', JARVIS_CODE_CACHE: '', NO_COLOR: '1'}
    const list = async () => {
      const run = await runJarvisBuilt(['memory', 'ls', '--json'], {cwd: tree, env})
      expect(run).toMatchObject({code: 0, stderr: ''})
      return {caches: await cachesByName(cacheHome), files: (JSON.parse(run.stdout) as {result: {files: Array<{path: string; title?: string}>}}).result.files}
    }
    const first = await list()
    expect(Object.keys(first.caches)).toEqual(['memory-ls'])
    expect(await list()).toEqual(first)
    // A front matter to parse: yaml is loaded, from its own script, through its own cache.
    await writeFile(join(tree, '.memory', 'titled.md'), '---\ntitle: Titled\ntags: [a]\n---\nBody.\n')
    const parsed = await list()
    expect(parsed.files.find((file) => file.path === 'titled.md')?.title).toBe('Titled')
    expect(parsed.caches).toEqual({'memory-ls': first.caches['memory-ls'], 'on-use-yaml': expect.any(Number)})
    // Its file read again (the listing keeps what it read only past a racy window): both caches taken as they are.
    await writeFile(join(tree, '.memory', 'titled.md'), '---\ntitle: Titled again\n---\nBody.\n')
    const again = await list()
    expect(again.files.find((file) => file.path === 'titled.md')?.title).toBe('Titled again')
    expect(again.caches).toEqual(parsed.caches)
  })

  it('an install missing an on-use script says so when a call needs it, without a stack trace; calls that do not need it still answer', async () => {
    // The built package as an install has it, without its yaml script (a build stopped halfway, a file deleted).
    const install = join(work, 'install')
    for (const part of ['bin', 'dist', 'assets', 'package.json', 'oclif.manifest.json']) await cp(join(repoRoot, part), join(install, part), {recursive: true})
    await symlink(join(repoRoot, 'node_modules'), join(install, 'node_modules'))
    await rm(join(install, 'dist', 'fast', 'on-use', 'yaml.cjs'))
    const tree = (await initTree(join(work, 'tree-incomplete'), {agent: 'claude'})).root
    await writeFile(join(tree, '.memory', 'plain.md'), '# Plain\n\nNo front matter.\n')
    const env = {...process.env, XDG_CACHE_HOME: join(work, 'cache-incomplete'), XDG_CONFIG_HOME: join(work, 'xdg'), JARVIS_AGENT: '', JARVIS_SERVER: '', JARVIS_DIR: '', JARVIS_CODE_CACHE: '', NO_COLOR: '1'}
    const list = () => runJarvisBuilt(['memory', 'ls'], {cwd: tree, env, bin: join(install, 'bin', 'run.js')})

    expect(await list()).toMatchObject({code: 0, stderr: '', stdout: expect.stringContaining('plain.md')})
    // A front matter to parse needs yaml.
    await writeFile(join(tree, '.memory', 'titled.md'), '---\ntitle: Titled\n---\nBody.\n')
    const failed = await list()
    expect(failed.code).toBe(1)
    expect(failed.stderr).toBe('jarvis: this install of jarvis is incomplete: dist/fast/on-use/yaml.cjs is missing (run `npm run build` in its folder, or install it again)\n')
    expect(failed.stdout).toBe('')
    // Nothing of it was kept as the file's problem: the install made whole again, the file lists with its title.
    await cp(join(repoRoot, 'dist', 'fast', 'on-use', 'yaml.cjs'), join(install, 'dist', 'fast', 'on-use', 'yaml.cjs'))
    const whole = await list()
    expect(whole).toMatchObject({code: 0, stderr: ''})
    expect(whole.stdout).toMatch(/titled\.md +Titled/)
  })

  it('a sync that pushes runs secretlint, and one that reads a changed config zod and the schemas, from on-use scripts through caches of their own; a no-op sync reads none of them, and its cache stays as a no-op wrote it', async () => {
    const cacheHome = join(work, 'cache-sync')
    const server = await startTestServer()
    const own = await makeClient(server.url, 'claude')
    const other = await makeClient(server.url, 'gemini')
    const env = {...process.env, XDG_CACHE_HOME: cacheHome, XDG_CONFIG_HOME: join(work, 'xdg'), JARVIS_TOKEN: TOKENS.claude, JARVIS_WATCHER: 'off', JARVIS_AGENT: '', JARVIS_SERVER: '', JARVIS_DIR: '', JARVIS_CODE_CACHE: '', NO_COLOR: '1'}
    const sync = async (extra: NodeJS.ProcessEnv = {}) => {
      const run = await runJarvisBuilt(['sync', '--quiet'], {cwd: own.root, env: {...env, ...extra}})
      expect(run).toMatchObject({code: 0, stderr: ''})
      return cachesByName(cacheHome)
    }
    try {
      // The first syncs read the config with zod (and keep it as parsed): without a cache, so that a no-op writes it.
      await sync({JARVIS_CODE_CACHE: 'off'})
      await sync({JARVIS_CODE_CACHE: 'off'})
      const noOp = await sync()
      expect(Object.keys(noOp)).toEqual(['sync'])
      // A push of a few files scans for secrets; its answer passes a hand check, so zod is not run.
      await writeFile(join(own.memory, 'pushed.md'), '# Pushed\n\nA note that a sync sends.\n')
      const pushed = await sync()
      expect(pushed).toEqual({sync: noOp.sync, 'on-use-secretlint': expect.any(Number)})
      // Without the on-use scripts' caches: a no-op would write again any it ran.
      for (const file of await cacheFiles(cacheHome)) if (file.includes('/on-use-')) await rm(join(cacheHome, 'jarvis', 'code-cache', file))
      expect(await sync()).toEqual({sync: noOp.sync})
      await writeFile(join(own.memory, 'pushed.md'), '# Pushed\n\nEdited, sent again.\n')
      const again = await sync()
      expect(Object.keys(again).sort()).toEqual(['on-use-secretlint', 'sync'])
      // Taken as they are by the next push.
      await writeFile(join(own.memory, 'pushed.md'), '# Pushed\n\nA third time.\n')
      expect(await sync()).toEqual(again)
      // A config whose text changed is parsed by zod: the schemas' script, through its own cache, taken by the next.
      const configFile = join(own.root, '.nexus', 'config.json')
      await writeFile(configFile, `${await readFile(configFile, 'utf8')}\n`)
      const configRead = await sync()
      expect(configRead).toEqual({...again, 'on-use-schemas': expect.any(Number)})
      await writeFile(configFile, `${await readFile(configFile, 'utf8')}\n`)
      expect(await sync()).toEqual(configRead)
      // A broken cache of an on-use script only costs its compile: the push answers the same, and writes it again.
      const [secretlint] = (await cacheFiles(cacheHome)).filter((file) => file.includes('/on-use-secretlint.'))
      const path = join(cacheHome, 'jarvis', 'code-cache', secretlint)
      const garbage = Buffer.alloc((await stat(path)).size, 7)
      await writeFile(path, garbage)
      await writeFile(join(own.memory, 'pushed.md'), '# Pushed\n\nAfter a broken cache.\n')
      await sync()
      expect((await readFile(path)).equals(garbage)).toBe(false)
      await other.sync()
      expect(await readFile(join(other.memory, 'pushed.md'), 'utf8')).toBe('# Pushed\n\nAfter a broken cache.\n')
      expect((await cachesByName(cacheHome)).sync).toBe(noOp.sync)
    } finally {
      await server.close()
      await removeAll([own.root, other.root])
    }
  })

  it('no cache for a call that failed, one the door leaves to oclif, or with JARVIS_CODE_CACHE=off; a cache that cannot be written changes nothing', async () => {
    const cacheHome = join(work, 'cache-none')
    const env = {...process.env, XDG_CACHE_HOME: cacheHome, XDG_CONFIG_HOME: join(work, 'xdg'), JARVIS_AGENT: '', JARVIS_SERVER: '', JARVIS_DIR: '', JARVIS_CODE_CACHE: '', NO_COLOR: '1'}
    const outside = await runJarvisBuilt(['memory', 'ls'], {cwd: work, env})
    expect(outside.code).toBe(2)
    const help = await runJarvisBuilt(['memory', 'ls', '--help'], {cwd: root, env})
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('USAGE')
    const off = await ls(cacheHome, {JARVIS_CODE_CACHE: 'off'})
    expect(off.code).toBe(0)
    expect(await cacheFiles(cacheHome)).toEqual([])

    // The cache's folder is a file: nothing can be written under it.
    const blocked = join(work, 'cache-blocked')
    await writeFile(blocked, 'not a folder')
    expect(await ls(blocked)).toEqual(off)
    expect(await ls(blocked)).toEqual(off)
  })
})
