import {execFileSync} from 'node:child_process'
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {describe, expect, it} from 'vitest'

import {BadInputError, NotATreeError, SecretRefusedError} from '../../src/errors.js'
import {SYNC_SETTINGS_DEFAULTS} from '../../src/schemas/nexus.js'
import {findRoot, initTree, readConfig, saveBackup, writeConfig} from '../../src/store/index.js'
import {tempDir} from './helpers/temp.js'

describe('findRoot', () => {
  it('finds the nearest ancestor holding .memory/ from nested subdirectories', async () => {
    const root = await tempDir()
    await mkdir(join(root, '.memory'))
    const deep = join(root, 'src', 'a', 'b')
    await mkdir(deep, {recursive: true})
    expect(findRoot(deep)).toBe(root)
    expect(findRoot(root)).toBe(root)
    // a nested tree wins over the outer one, like a nested git repository
    await mkdir(join(root, 'src', '.memory'))
    expect(findRoot(deep)).toBe(join(root, 'src'))
  })

  it('honours --dir, which must itself hold .memory/, or be that .memory/ (or .nexus/)', async () => {
    const root = await tempDir()
    await mkdir(join(root, '.memory'))
    await mkdir(join(root, '.nexus'))
    await mkdir(join(root, 'sub'))
    const elsewhere = await tempDir()
    expect(findRoot(elsewhere, root)).toBe(root)
    expect(findRoot(elsewhere, join(root, '.memory'))).toBe(root)
    expect(findRoot(elsewhere, join(root, '.nexus'))).toBe(root)
    expect(() => findRoot(root, join(root, 'sub'))).toThrow(NotATreeError)
    await mkdir(join(root, 'sub', '.memory'))
    expect(() => findRoot(root, join(root, 'sub', '.memory', 'notes'))).toThrow(NotATreeError)
  })

  it('throws NotATreeError outside any tree, telling the user to run jarvis init', async () => {
    const outside = await tempDir()
    let caught: unknown
    try {
      findRoot(outside)
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(NotATreeError)
    expect((caught as NotATreeError).message).toContain('jarvis init')
    expect((caught as NotATreeError).exit).toBe(2)
  })

  it('does not count a file named .memory', async () => {
    const root = await tempDir()
    await writeFile(join(root, '.memory'), '')
    expect(() => findRoot(root, root)).toThrow(NotATreeError)
  })
})

describe('initTree', () => {
  it('creates both trees, the config with seed 002 defaults, and ignores .nexus/ in git', async () => {
    const dir = await tempDir()
    const result = await initTree(dir, {server: 'http://127.0.0.1:8787', agent: 'claude', project: 'my-app'})
    expect(result.root).toBe(dir)
    expect(result.changed).toBe(true)
    expect(result.created).toEqual(['.memory/', '.nexus/', '.nexus/config.json', '.gitignore'])
    const config = JSON.parse(await readFile(join(dir, '.nexus', 'config.json'), 'utf8'))
    expect(config).toEqual({server: 'http://127.0.0.1:8787', agentId: 'claude', project: 'my-app', sync: {...SYNC_SETTINGS_DEFAULTS}})
    expect(result.config).toEqual(config)
    expect(await readFile(join(dir, '.gitignore'), 'utf8')).toBe('.nexus/\n.memory/**/*.local*.bak\n')
    expect(findRoot(dir)).toBe(dir)
  })

  it('is idempotent, and updates the config when an option changes', async () => {
    const dir = await tempDir()
    await initTree(dir, {server: 'http://127.0.0.1:8787'})
    const configBefore = await readFile(join(dir, '.nexus', 'config.json'), 'utf8')
    const again = await initTree(dir, {server: 'http://127.0.0.1:8787'})
    expect(again).toMatchObject({changed: false, created: [], updated: []})
    expect(await readFile(join(dir, '.nexus', 'config.json'), 'utf8')).toBe(configBefore)
    // no options: keeps what is there
    expect((await initTree(dir)).changed).toBe(false)
    const moved = await initTree(dir, {server: 'https://memory.example.com'})
    expect(moved).toMatchObject({changed: true, created: [], updated: ['.nexus/config.json']})
    expect((await readConfig(dir)).server).toBe('https://memory.example.com')
  })

  it('keeps unknown config fields and user-changed settings', async () => {
    const dir = await tempDir()
    await initTree(dir)
    const path = join(dir, '.nexus', 'config.json')
    const config = JSON.parse(await readFile(path, 'utf8'))
    config.sync.lockTimeout = 9000
    config.futureField = {x: 1}
    await writeFile(path, JSON.stringify(config, null, 2) + '\n')
    const result = await initTree(dir, {agent: 'gemini'})
    expect(result.config).toMatchObject({agentId: 'gemini', futureField: {x: 1}, sync: {lockTimeout: 9000}})
  })

  it('git ignores the conflict backups and .nexus/, not the memory files', async () => {
    const dir = await tempDir()
    execFileSync('git', ['init', '-q', dir])
    const {root} = await initTree(dir)
    await mkdir(join(root, '.memory', 'notes'), {recursive: true})
    await writeFile(join(root, '.memory', 'notes', 'plan.md'), 'mine\n')
    const first = await saveBackup(root, 'notes/plan.md', 'mine\n')
    const second = await saveBackup(root, 'notes/plan.md', 'older\n')
    const status = execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], {cwd: root, encoding: 'utf8'})
    expect(status).toContain('.memory/notes/plan.md')
    expect(status).not.toContain(first.path)
    expect(status).not.toContain(second.path.split('/').pop())
    expect(status).not.toContain('.nexus')
  })

  it.each([
    ['missing', null, '.nexus/\n.memory/**/*.local*.bak\n'],
    ['with other lines', 'node_modules/\ndist\n', 'node_modules/\ndist\n.nexus/\n.memory/**/*.local*.bak\n'],
    ['without a final newline', 'node_modules/', 'node_modules/\n.nexus/\n.memory/**/*.local*.bak\n'],
    ['with CRLF line endings', 'node_modules/\r\ndist', 'node_modules/\r\ndist\r\n.nexus/\r\n.memory/**/*.local*.bak\r\n'],
    ['that already ignores .nexus/', 'a\n.nexus/\nb\n', 'a\n.nexus/\nb\n.memory/**/*.local*.bak\n'],
    ['that already ignores /.nexus and the backups', '/.nexus\n*.local.bak\n', '/.nexus\n*.local.bak\n'],
    ['empty', '', '.nexus/\n.memory/**/*.local*.bak\n'],
  ])('handles a .gitignore %s', async (_label, before, after) => {
    const dir = await tempDir()
    if (before !== null) await writeFile(join(dir, '.gitignore'), before)
    const result = await initTree(dir)
    expect(await readFile(join(dir, '.gitignore'), 'utf8')).toBe(after)
    expect([...result.created, ...result.updated].includes('.gitignore')).toBe(before !== after)
    await initTree(dir)
    expect(await readFile(join(dir, '.gitignore'), 'utf8')).toBe(after)
  })

  it('refuses a bad option or a credential-bearing server URL before writing anything', async () => {
    const dir = await tempDir()
    await expect(initTree(dir, {server: 'not a url'})).rejects.toBeInstanceOf(BadInputError)
    await expect(initTree(dir, {server: 'ftp://x.example'})).rejects.toBeInstanceOf(BadInputError)
    await expect(initTree(dir, {server: 'https://me:hunter2@x.example'})).rejects.toBeInstanceOf(SecretRefusedError)
    await expect(initTree(dir, {agent: 'nobody'})).rejects.toThrow(/^--agent: /)
    await expect(initTree(dir, {project: '../x'})).rejects.toThrow(/^--project: /)
    await expect(readFile(join(dir, '.nexus', 'config.json'), 'utf8')).rejects.toThrow(/ENOENT/)
  })

  it('never writes a token through writeConfig', async () => {
    const dir = await tempDir()
    const {config} = await initTree(dir)
    await expect(writeConfig(dir, {...config, token: 'abc'} as typeof config)).rejects.toBeInstanceOf(SecretRefusedError)
  })
})
