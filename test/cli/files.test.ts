import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {initTree, scanMemory} from '../../src/store/index.js'
import {EXPECTED_STRUCTURE, fakeGithubToken, makeRepo} from '../files/helpers.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {removeAll, tempDir} from '../helpers/world.js'

describe('jarvis memory ls/read/write/edit/grep/delete/episode/compact, context map', () => {
  const dirs: string[] = []
  let root: string
  const jarvis = (args: string[], input?: string | Buffer) => runJarvis(args, {cwd: root, input, env: {JARVIS_DIR: undefined}})

  beforeEach(async () => {
    const dir = await tempDir('jarvis-files-cli-')
    dirs.push(dir)
    root = (await initTree(dir, {})).root
  })
  afterEach(async () => removeAll(dirs.splice(0)))

  it('write from stdin, ls, read, grep with line numbers, edit, delete: one --json envelope each', async () => {
    const written = await jarvis(['memory', 'write', 'projects/app/status.md', '--title', 'App status', '--tag', 'app', '--tag', 'ads', '--json'], 'Ads paused.\nOutcome: low ROAS\n')
    expect(written.code).toBe(0)
    expect(envelope(written).result).toEqual({path: 'projects/app/status.md', created: true, changed: true})
    expect(await readFile(join(root, '.memory/projects/app/status.md'), 'utf8')).toBe('---\ntitle: App status\ntags: [app, ads]\n---\nAds paused.\nOutcome: low ROAS\n')

    const ls = envelope<{files: {path: string; title: string; tags: string[]}[]}>(await jarvis(['memory', 'ls', 'projects/', '--json']))
    expect(ls.result!.files).toMatchObject([{path: 'projects/app/status.md', title: 'App status', tags: ['app', 'ads']}])

    const read = await jarvis(['memory', 'read', 'projects/app/status.md', '--json'])
    expect(envelope(read).result).toMatchObject({path: 'projects/app/status.md', title: 'App status', body: 'Ads paused.\nOutcome: low ROAS\n'})
    expect(Object.keys(JSON.parse(await readFile(join(root, '.nexus/memory-access.json'), 'utf8')))).toEqual(['projects/app/status.md'])

    const grep = await jarvis(['memory', 'grep', 'ROAS'])
    expect(grep.stdout).toBe('projects/app/status.md:6:Outcome: low ROAS\n')

    const edit = await jarvis(['memory', 'edit', 'projects/app/status.md', '--replace', 'low ROAS', '--with', 'ROAS 2.1', '--json'])
    expect(envelope(edit)).toMatchObject({status: 0, result: {path: 'projects/app/status.md'}})

    const deleted = await jarvis(['memory', 'delete', 'projects/app/status.md'])
    expect(deleted.code).toBe(0)
    expect(deleted.stdout).toContain('jarvis sync')
    expect((await scanMemory(root)).size).toBe(0)
  })

  it('exit 2: not found, ambiguous edit (saying how many), a path leaving the tree, malformed front matter (file and line)', async () => {
    await mkdir(join(root, '.memory/notes'), {recursive: true})
    await writeFile(join(root, '.memory/notes/todo.md'), 'todo\ntodo\n')
    await writeFile(join(root, '.memory/notes/bad.md'), '---\ntitle: ok\ntags: [a\n---\nbody\n')

    const missing = await jarvis(['memory', 'read', 'notes/none.md', '--json'])
    expect(missing.code).toBe(2)
    expect(envelope(missing).error).toMatchObject({code: 'NOT_FOUND'})

    const ambiguous = await jarvis(['memory', 'edit', 'notes/todo.md', '--replace', 'todo', '--with', 'done'])
    expect(ambiguous.code).toBe(2)
    expect(ambiguous.stderr).toContain('occurs 2 times')
    expect(await readFile(join(root, '.memory/notes/todo.md'), 'utf8')).toBe('todo\ntodo\n')

    const escape = await jarvis(['memory', 'write', '../outside.md', '--json'], 'x\n')
    expect(escape.code).toBe(2)
    expect(envelope(escape).error).toMatchObject({code: 'PATH_REFUSED'})

    const bad = await jarvis(['memory', 'read', 'notes/bad.md'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('.memory/notes/bad.md: line 3')
    expect(bad.stderr).not.toMatch(/\n\s+at /) // no stack trace
  })

  it('edit --patch applies a unified diff from stdin or a file, as diff -u and git diff print it; one that does not apply writes nothing', async () => {
    await mkdir(join(root, '.memory/notes'), {recursive: true})
    const file = join(root, '.memory/notes/release.md')
    await writeFile(file, '# Release\n\nDay: Friday\nOwner: ana\n')
    const diff = ['--- a/.memory/notes/release.md', '+++ b/.memory/notes/release.md', '@@ -3,2 +3,2 @@', '-Day: Friday', '+Day: Tuesday', ' Owner: ana', ''].join('\n')

    const fromStdin = await jarvis(['memory', 'edit', 'notes/release.md', '--patch', '-'], diff)
    expect(fromStdin.code, fromStdin.stderr).toBe(0)
    expect(fromStdin.stdout).toBe('edited .memory/notes/release.md (the patch applied)\n')
    expect(await readFile(file, 'utf8')).toBe('# Release\n\nDay: Tuesday\nOwner: ana\n')

    // The same diff again: its removed line is gone from the file, so it fits nowhere.
    const stale = await jarvis(['memory', 'edit', 'notes/release.md', '--patch', '-', '--json'], diff)
    expect(stale.code).toBe(2)
    expect(envelope(stale).error).toMatchObject({code: 'BAD_INPUT', data: {path: 'notes/release.md', field: 'patch'}})
    expect(await readFile(file, 'utf8')).toBe('# Release\n\nDay: Tuesday\nOwner: ana\n')

    const patchFile = join(root, 'owner.diff')
    await writeFile(patchFile, ['@@ -4 +4 @@', '-Owner: ana', '+Owner: bo', ''].join('\n'))
    expect((await jarvis(['memory', 'edit', 'notes/release.md', '--patch', patchFile])).code).toBe(0)
    expect(await readFile(file, 'utf8')).toBe('# Release\n\nDay: Tuesday\nOwner: bo\n')

    const missing = await jarvis(['memory', 'edit', 'notes/release.md', '--patch', join(root, 'none.diff')])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('none.diff: cannot read the patch: ENOENT')

    // One way to say the change: a diff, or a text and its replacement; the message names the flags.
    for (const args of [['--patch', patchFile, '--replace', 'bo', '--with', 'cy'], ['--replace', 'bo'], []]) {
      const refused = await jarvis(['memory', 'edit', 'notes/release.md', ...args])
      expect(refused.code, args.join(' ')).toBe(2)
      expect(refused.stderr).toMatch(/--patch|--with/)
    }
    expect(await readFile(file, 'utf8')).toBe('# Release\n\nDay: Tuesday\nOwner: bo\n')
  })

  it('read prints the file byte for byte, so read | write gives back the same file; ./ before a path means the same path', async () => {
    for (const text of ['alpha\nBETA', '---\ntitle: T\n---\nbody\n\n', '']) {
      await mkdir(join(root, '.memory', 'notes'), {recursive: true})
      await writeFile(join(root, '.memory', 'notes', 'exact.md'), text)
      const read = await jarvis(['memory', 'read', './notes/exact.md'])
      expect(read.code).toBe(0)
      expect(read.stdout).toBe(text)
      expect((await jarvis(['memory', 'write', 'notes/copy.md'], read.stdout)).code).toBe(0)
      expect(await readFile(join(root, '.memory', 'notes', 'copy.md'), 'utf8')).toBe(text)
    }
  })

  it('ls says when --limit cut the list, in words and in --json', async () => {
    await mkdir(join(root, '.memory', 'notes'), {recursive: true})
    for (const name of ['a', 'b', 'c']) await writeFile(join(root, '.memory', 'notes', `${name}.md`), `# ${name}\n`)
    const cut = await jarvis(['memory', 'ls', 'notes/', '--limit', '2'])
    expect(cut.stdout).toBe('notes/a.md\nnotes/b.md\n… and more: the first 2 are shown; --limit N shows more\n')
    expect(envelope<{truncated?: boolean}>(await jarvis(['memory', 'ls', 'notes/', '--limit', '2', '--json'])).result!.truncated).toBe(true)
    const whole = envelope<{files: unknown[]; truncated?: boolean}>(await jarvis(['memory', 'ls', 'notes/', '--limit', '3', '--json'])).result!
    expect(whole.files).toHaveLength(3)
    expect(whole.truncated).toBeUndefined()
  })

  it('exit 5 for a secret in the content, and nothing is written', async () => {
    const token = fakeGithubToken()
    const refused = await jarvis(['memory', 'write', 'notes/leak.md', '--json'], `deploy with ${token}\n`)
    expect(refused.code).toBe(5)
    expect(envelope(refused).error).toMatchObject({code: 'SECRET_REFUSED'})
    expect(refused.stdout).not.toContain(token)
    const episode = await jarvis(['memory', 'episode', '--title', 'Deploy'], `token ${token}\n`)
    expect(episode.code).toBe(5)
    expect((await scanMemory(root)).size).toBe(0)
  })

  it('exit 2 for a text over the 4 MiB a sync sends, counted in UTF-8 bytes: named with the limit, nothing written', async () => {
    const cjk = '日本語テキスト'.repeat(300_000) // 2.1 M characters, 6.3 MB
    const refused = await jarvis(['memory', 'write', 'big/cli.md', '--json'], `${cjk}\n`)
    expect(refused.code).toBe(2)
    expect(envelope(refused).error).toMatchObject({code: 'BAD_INPUT', data: {path: 'big/cli.md', bytes: 6_300_001, limit: 4_194_304}})
    expect(envelope(refused).error!.message).toMatch(/^\.memory\/big\/cli\.md: is 6300001 bytes, more than the 4194304 \(4 MiB\) a memory file may hold/)
    expect((await jarvis(['memory', 'episode', '--title', 'Big'], cjk)).code).toBe(2)
    expect((await scanMemory(root)).size).toBe(0)
  })

  it('exit 2 for bytes that are not UTF-8, from stdin or a file, naming the line; nothing written, no character replaced', async () => {
    const latin1 = Buffer.from('caf\xe9 au lait\nd\xe9j\xe0 vu\n', 'latin1')
    const piped = await jarvis(['memory', 'write', 'notes/cafe.md', '--json'], latin1)
    expect(piped.code).toBe(2)
    expect(envelope(piped).error!.message).toBe('<stdin>: line 1: not UTF-8 text; save it as UTF-8 and run again (nothing was written)')
    const file = join(root, 'latin1.txt')
    await writeFile(file, Buffer.concat([Buffer.from('fine\n'), latin1]))
    const named = await jarvis(['memory', 'episode', '--title', 'Cafe', '--file', file])
    expect(named.code).toBe(2)
    expect(named.stderr).toContain(`${file}: line 2: not UTF-8 text`)
    expect((await scanMemory(root)).size).toBe(0)
  })

  it('episode twice writes one file; compact twice changes nothing the second time', async () => {
    const args = ['memory', 'episode', '--title', 'SSH auth failures', '--project', 'app', '--outcome', 'runner_exec works', '--json']
    const first = envelope<{path: string; created: boolean}>(await jarvis(args, '- rotated the key\n'))
    const second = envelope<{path: string; created: boolean; changed: boolean}>(await jarvis(args, '- rotated the key\n'))
    expect(first.result!.created).toBe(true)
    expect(second.result).toMatchObject({path: first.result!.path, created: false, changed: false})
    expect(first.result!.path).toMatch(/^episodes\/\d{4}-\d{2}-\d{2}\/ssh-auth-failures\.md$/)
    expect([...(await scanMemory(root)).keys()]).toEqual([first.result!.path])

    const compact = envelope(await jarvis(['memory', 'compact', '--project', 'app', '--json']))
    expect(compact.result).toMatchObject({path: 'projects/app/summary.md', episodes: 1, changed: true})
    const summary = await readFile(join(root, '.memory/projects/app/summary.md'), 'utf8')
    expect(summary).toContain('- Outcome: runner_exec works')
    const again = envelope(await jarvis(['memory', 'compact', '--project', 'app', '--json']))
    expect(again.result).toMatchObject({episodes: 1, changed: false})
    expect(await readFile(join(root, '.memory/projects/app/summary.md'), 'utf8')).toBe(summary)
  })

  it('context map writes context_map.json from the git repository holding the tree', async () => {
    const repo = await tempDir('jarvis-files-repo-')
    dirs.push(repo)
    await makeRepo(repo)
    root = (await initTree(repo, {})).root
    const run = await jarvis(['context', 'map', '--json'])
    expect(run.code).toBe(0)
    const result = envelope<{path: string; map: {structure: unknown; database: unknown}}>(run).result!
    expect(result.map.structure).toEqual(EXPECTED_STRUCTURE)
    expect(result.map.database).toEqual({models: ['Post', 'User'], enums: ['Role']})
    expect(JSON.parse(await readFile(join(root, '.memory/context_map.json'), 'utf8')).structure).toEqual(EXPECTED_STRUCTURE)
  })
})
