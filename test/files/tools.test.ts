import {readFile, writeFile, mkdir} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {SchemaError} from '../../src/errors.js'
import {
  ACCESS_FILE,
  composeMemoryText,
  deleteMemory,
  editMemory,
  grepMemory,
  listFiles,
  parseMemoryFile,
  readMemory,
  renderMemoryFile,
  slugify,
  writeEpisode,
  writeMemory,
} from '../../src/files/index.js'
import {hashText} from '../../src/store/index.js'
import {problemsOf} from '../../src/sync/validate.js'
import {initTree, scanMemory, writeBase} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {fakeGithubToken} from './helpers.js'

async function rejection(promise: Promise<unknown>): Promise<{exit: number; code: string; message: string; data: Record<string, unknown>}> {
  try {
    await promise
  } catch (error) {
    return error as {exit: number; code: string; message: string; data: Record<string, unknown>}
  }
  throw new Error('expected a rejection')
}

describe('front matter', () => {
  it('parses title, tags and free metadata, and renders them back', () => {
    const file = parseMemoryFile('a.md', '---\ntitle: Hello\ntags: [x, y]\nproject: app\n---\n# Body\n')
    expect(file.frontMatter).toEqual({title: 'Hello', tags: ['x', 'y'], project: 'app'})
    expect(file.body).toBe('# Body\n')
    const again = parseMemoryFile('a.md', renderMemoryFile(file.frontMatter, file.body))
    expect(again.frontMatter).toEqual(file.frontMatter)
    expect(again.body).toBe(file.body)
  })

  it('sets the title, tags and metadata a write gives in the front matter as written: its comments, order and quoting stay', () => {
    const written = '---\n# kept by hand\ntitle: Old # why this name\nowner: "bo"\n---\nbody\n'
    expect(composeMemoryText('a.md', written, {title: 'New', tags: ['x', 'y'], metadata: {status: 'draft'}})).toBe(
      '---\n# kept by hand\ntitle: New # why this name\nowner: "bo"\ntags: [x, y]\nstatus: draft\n---\nbody\n',
    )
    expect(composeMemoryText('a.md', 'body\n', {title: 'T', tags: ['x']})).toBe('---\ntitle: T\ntags: [x]\n---\nbody\n')
    expect(composeMemoryText('a.md', written)).toBe(written)
  })

  it('treats a file without a leading --- as all body', () => {
    expect(parseMemoryFile('a.md', '# Only body\n---\n')).toMatchObject({frontMatter: {}, body: '# Only body\n---\n'})
    expect(renderMemoryFile({}, 'x\n')).toBe('x\n')
  })

  it.each([
    ['---\ntitle: ok\ntags: [a, b\n---\nbody\n', 3],
    ['---\ntitle: a\ntitle: b\n---\n', 3],
    ['---\ntitle: [1]\n---\n', 2],
    ['---\ntitle: ok\ntags: {a: 1}\n---\n', 3],
    ['---\ntitle: never closed\n', 1],
    ['---\ntitle: ok\nfoo: : bar: baz\n---\nbody\n', 3],
  ])('names the file and the line of malformed front matter: %j', (text, line) => {
    let error: unknown
    try {
      parseMemoryFile('notes/bad.md', text)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(SchemaError)
    expect((error as SchemaError).exit).toBe(2)
    expect((error as SchemaError).message).toContain(`.memory/notes/bad.md: line ${line}`)
    // Each fault once, though the YAML parser may report one twice.
    expect(new Set((error as SchemaError).problems).size).toBe((error as SchemaError).problems.length)
  })

  it('slugs titles', () => {
    expect(slugify('Memory design: Zerg & files!')).toBe('memory-design-zerg-files')
    expect(slugify('Café déjà vu')).toBe('cafe-deja-vu')
    expect(slugify('!!!')).toBe('episode')
    // Words of other scripts are kept, whole: a title in Japanese or Greek names its own file.
    expect(slugify('デプロイが失敗した件')).toBe('デプロイが失敗した件')
    expect(slugify('Σύνοψη: ΚΑΤΑΣΤΑΣΗ')).toBe('συνοψη-κατασταση')
    expect(slugify('ｆｕｌｌ　ｗｉｄｔｈ')).toBe('full-width')
    expect(Array.from(slugify('😀'.repeat(10) + ' ' + '𝒜'.repeat(70)))).toHaveLength(60)
  })
})

describe('memory file tools', () => {
  const dirs: string[] = []
  let root: string

  beforeEach(async () => {
    const dir = await tempDir('jarvis-files-')
    dirs.push(dir)
    root = (await initTree(dir, {})).root
  })
  afterEach(async () => removeAll(dirs.splice(0)))

  const memory = (path: string) => join(root, '.memory', path)

  it('writes, lists, reads (recording last access in .nexus/ only), greps, edits and deletes', async () => {
    expect(await writeMemory(root, 'projects/app/status.md', 'Ads paused.\nOutcome: low ROAS\n', {title: 'App status', tags: ['app']})).toEqual({
      path: 'projects/app/status.md',
      created: true,
      changed: true,
    })
    expect(await writeMemory(root, 'projects/app/status.md', 'Ads paused.\nOutcome: low ROAS\n', {title: 'App status', tags: ['app']})).toMatchObject({created: false, changed: false})
    await writeMemory(root, 'episodes/2026-01-05/a.md', '# Episode: A\nOutcome: fixed ssh\n')

    const listed = await listFiles(root)
    expect(listed.map((f) => f.path)).toEqual(['episodes/2026-01-05/a.md', 'projects/app/status.md'])
    expect(listed[1]).toMatchObject({title: 'App status', tags: ['app']})
    expect((await listFiles(root, 'episodes/')).map((f) => f.path)).toEqual(['episodes/2026-01-05/a.md'])
    expect(await listFiles(root, undefined, 1)).toHaveLength(1)

    const before = await readFile(memory('projects/app/status.md'), 'utf8')
    const read = await readMemory(root, 'projects/app/status.md', {now: new Date('2026-02-01T10:00:00Z')})
    expect(read.frontMatter).toMatchObject({title: 'App status', tags: ['app']})
    expect(read.body).toBe('Ads paused.\nOutcome: low ROAS\n')
    expect(await readFile(memory('projects/app/status.md'), 'utf8')).toBe(before)
    expect(JSON.parse(await readFile(join(root, '.nexus', ACCESS_FILE), 'utf8'))).toEqual({'projects/app/status.md': '2026-02-01T10:00:00.000Z'})

    expect(await grepMemory(root, '^Outcome:')).toEqual([
      {path: 'episodes/2026-01-05/a.md', line: 2, text: 'Outcome: fixed ssh'},
      {path: 'projects/app/status.md', line: 6, text: 'Outcome: low ROAS'},
    ])
    expect(await grepMemory(root, 'outcome', 'projects/', undefined, {ignoreCase: true})).toHaveLength(1)
    expect(await grepMemory(root, 'Outcome', undefined, 1)).toHaveLength(1)

    await editMemory(root, 'projects/app/status.md', {replace: 'low ROAS', with: 'ROAS back to 2.1'})
    expect(await readFile(memory('projects/app/status.md'), 'utf8')).toContain('Outcome: ROAS back to 2.1\n')

    expect(await deleteMemory(root, 'projects/app/status.md')).toEqual({path: 'projects/app/status.md', syncsDeletion: false})
    expect([...(await scanMemory(root)).keys()]).toEqual(['episodes/2026-01-05/a.md'])
  })

  it('says the next sync sends a deletion when the base proves the file was synced', async () => {
    await writeMemory(root, 'notes/synced.md', 'x\n')
    await writeBase(root, 'notes/synced.md', 'x\n')
    expect(await deleteMemory(root, 'notes/synced.md')).toEqual({path: 'notes/synced.md', syncsDeletion: true})
  })

  it('not found is exit 2 for read, edit and delete', async () => {
    for (const call of [() => readMemory(root, 'nope.md'), () => editMemory(root, 'nope.md', {replace: 'a', with: 'b'}), () => deleteMemory(root, 'nope.md')]) {
      expect(await rejection(call())).toMatchObject({exit: 2, code: 'NOT_FOUND'})
    }
  })

  it('an ambiguous or missing edit target is exit 2 saying how many, and changes nothing', async () => {
    await writeMemory(root, 'a.md', 'todo\ntodo\ntodo\n')
    const error = await rejection(editMemory(root, 'a.md', {replace: 'todo', with: 'done'}))
    expect(error).toMatchObject({exit: 2, data: {matches: 3}})
    expect(error.message).toContain('occurs 3 times')
    expect(await rejection(editMemory(root, 'a.md', {replace: 'absent', with: 'x'}))).toMatchObject({exit: 2, data: {matches: 0}})
    expect(await readFile(memory('a.md'), 'utf8')).toBe('todo\ntodo\ntodo\n')
  })

  it('refuses paths that leave the tree or are not Markdown (exit 2)', async () => {
    for (const path of ['../escape.md', '/etc/passwd.md', 'a/../../b.md', 'notes/x.json', 'a\\b.md']) {
      expect((await rejection(writeMemory(root, path, 'x'))).exit).toBe(2)
      expect((await rejection(readMemory(root, path))).exit).toBe(2)
    }
    expect((await rejection(listFiles(root, '../'))).exit).toBe(2)
    expect((await rejection(grepMemory(root, 'x', '../up'))).exit).toBe(2)
    expect((await rejection(grepMemory(root, '(unclosed'))).exit).toBe(2)
  })

  it('refuses (exit 5) a secret in the content, the title or an edit, and writes nothing', async () => {
    const token = fakeGithubToken()
    const error = await rejection(writeMemory(root, 'notes/leak.md', `the token is ${token}\n`))
    expect(error).toMatchObject({exit: 5, code: 'SECRET_REFUSED'})
    expect(error.message).toContain('.memory/notes/leak.md')
    expect(error.message).not.toContain(token)
    expect((await rejection(writeMemory(root, 'notes/leak.md', 'clean\n', {title: token}))).exit).toBe(5)
    expect((await scanMemory(root)).size).toBe(0)

    await writeMemory(root, 'notes/ok.md', 'token: TBD\n')
    expect((await rejection(editMemory(root, 'notes/ok.md', {replace: 'TBD', with: token}))).exit).toBe(5)
    expect(await readFile(memory('notes/ok.md'), 'utf8')).toBe('token: TBD\n')
  })

  it('refuses (exit 2) a text over the 4 MiB of UTF-8 a sync sends, counted in bytes: write, edit, a merge, an episode; writes nothing', async () => {
    // 7 characters, 21 UTF-8 bytes: 6.3 MB in 2.1 M characters, under 4 Mi characters.
    const cjk = '日本語テキスト'.repeat(300_000)
    const error = await rejection(writeMemory(root, 'big/cli.md', cjk))
    expect(error).toMatchObject({exit: 2, code: 'BAD_INPUT', data: {path: 'big/cli.md', bytes: 6_300_000, limit: 4_194_304}})
    expect(error.message).toContain('.memory/big/cli.md: is 6300000 bytes, more than the 4194304 (4 MiB) a memory file may hold')
    expect((await scanMemory(root)).size).toBe(0)

    // The largest text a sync sends is written; one byte more is not, whichever door.
    const under = `a\n${'語'.repeat(1_398_099)}\nzz\n` // 4,194,303 bytes
    const fits = `b${under}` // 4,194,304
    expect(problemsOf('big/fits.md', fits, hashText(fits))).toBeNull()
    expect(await writeMemory(root, 'big/fits.md', fits)).toMatchObject({created: true})
    const more = await rejection(editMemory(root, 'big/fits.md', {replace: 'zz', with: 'zzz'}))
    expect(more).toMatchObject({exit: 2, data: {bytes: 4_194_305}})
    expect(more.message).toContain('.memory/big/fits.md')
    expect(problemsOf('big/fits.md', `${fits}z`, '')?.message).toContain('is 4194305 bytes, more than the 4194304 (4 MiB)')
    // Two changes that fit, merged since the base was read, would not: refused, the file as the other writer left it.
    await writeMemory(root, 'big/merged.md', under)
    const base = {hash: hashText(under), text: under}
    await writeMemory(root, 'big/merged.md', under.replace('a\n', 'ab\n'))
    const merged = await rejection(writeMemory(root, 'big/merged.md', under.replace('zz\n', 'zzz\n'), {}, {base}))
    expect(merged).toMatchObject({exit: 2, data: {bytes: 4_194_305}})
    expect(await readFile(memory('big/merged.md'), 'utf8')).toBe(under.replace('a\n', 'ab\n'))

    const episode = await rejection(writeEpisode(root, {title: 'Big', body: cjk, now: new Date('2026-01-05T10:00:00Z')}))
    expect(episode).toMatchObject({exit: 2, data: {path: 'episodes/2026-01-05/big.md'}})
    expect([...(await scanMemory(root)).keys()].sort()).toEqual(['big/fits.md', 'big/merged.md'])
  })

  it('malformed front matter: exit 2 naming the file and line; read refuses, write refuses, ls lists the problem', async () => {
    await mkdir(memory('notes'), {recursive: true})
    await writeFile(memory('notes/bad.md'), '---\ntitle: ok\ntags: [a, b\n---\nbody\n')
    const error = await rejection(readMemory(root, 'notes/bad.md'))
    expect(error.exit).toBe(2)
    expect(error.message).toContain('.memory/notes/bad.md: line 3')
    const written = await rejection(writeMemory(root, 'notes/new.md', '---\ntitle: [x\n---\n'))
    expect(written.exit).toBe(2)
    expect(written.message).toContain('.memory/notes/new.md: line 2')
    const [listed] = await listFiles(root)
    expect(listed.path).toBe('notes/bad.md')
    expect(listed.problem).toContain('line 3')
    expect((await rejection(editMemory(root, 'notes/bad.md', {replace: 'body', with: 'x'}))).exit).toBe(2) // the edit result must parse too
  })
})
