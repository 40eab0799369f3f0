/**
 * How `jarvis agents install` writes the agents' files: a file or folder that cannot be written, or that the user
 * made read-only, is refused before anything is written (by its mode bits, which root sees too), and a write that
 * fails midway puts back the files already written.
 */
import {existsSync} from 'node:fs'
import {chmod, mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeEach, describe, expect, it} from 'vitest'

import {checkWritable, writeFiles} from '../../src/agents/write.js'
import {FileNotWritableError} from '../../src/errors.js'
import {removeAll, tempDir} from '../helpers/world.js'

const dirs: string[] = []
let dir: string

afterAll(async () => {
  await removeAll(dirs)
})

beforeEach(async () => {
  dir = await tempDir('jarvis-agents-write-')
  dirs.push(dir)
})

describe('checkWritable', () => {
  it('refuses a read-only file and a read-only folder, naming each and what to do; a file left as it is is not checked', async () => {
    const locked = join(dir, 'CLAUDE.md')
    await writeFile(locked, '# mine\n')
    await chmod(locked, 0o444)
    await mkdir(join(dir, '.claude'))
    await chmod(join(dir, '.claude'), 0o555)
    const attempt = checkWritable([
      {file: locked, before: '# mine\n', after: '# mine\n\njarvis\n'},
      {file: join(dir, '.claude', 'settings.json'), before: null, after: '{}\n'},
      {file: join(dir, '.claude', 'settings.local.json'), before: null, after: '{}\n'},
      {file: join(dir, '.mcp.json'), before: null, after: '{}\n'},
    ])
    await expect(attempt).rejects.toThrow(FileNotWritableError)
    await expect(attempt).rejects.toMatchObject({exit: 1})
    const message = await attempt.catch((error: Error) => error.message)
    expect(message).toContain("cannot write the agents' files, so nothing was changed")
    expect(message).toContain(`${locked} is read-only (mode 0444): make it writable (chmod u+w ${locked})`)
    expect(message).toContain(`${join(dir, '.claude')} is a read-only folder (mode 0555), and jarvis writes settings.json, settings.local.json there: make it writable (chmod u+w ${join(dir, '.claude')})`)
    expect(message).not.toContain('.mcp.json')

    // The same read-only file, unchanged by this install: nothing to write, nothing refused.
    await expect(checkWritable([{file: locked, before: '# mine\n', after: '# mine\n'}])).resolves.toBeUndefined()
    // A file in folders still to make: the nearest folder that exists is the one written.
    await expect(checkWritable([{file: join(dir, '.claude', 'deep', 'x.json'), before: null, after: '{}'}])).rejects.toThrow(/\.claude is a read-only folder/)
    await chmod(join(dir, '.claude'), 0o755)
  })
})

describe('writeFiles', () => {
  it('a write that fails midway puts back the files already written and removes the folders made for them', async () => {
    const mine = join(dir, 'settings.json')
    await writeFile(mine, '{"mine": true}\n')
    // A folder where a file is to be written: its temp file is complete, its rename fails.
    const inTheWay = join(dir, 'hooks.json')
    await mkdir(inTheWay)
    await writeFile(join(inTheWay, 'keep'), 'x')
    const attempt = writeFiles([
      {file: mine, before: '{"mine": true}\n', after: '{"mine": true, "jarvis": 1}\n'},
      {file: join(dir, '.gemini', 'deep', 'settings.json'), before: null, after: '{}\n'},
      {file: inTheWay, before: '{}\n', after: '{"hooks": {}}\n'},
    ])
    await expect(attempt).rejects.toThrow(FileNotWritableError)
    await expect(attempt).rejects.toThrow(new RegExp(`could not write ${inTheWay} .*; nothing was changed`))
    expect(await readFile(mine, 'utf8')).toBe('{"mine": true}\n')
    expect(existsSync(join(dir, '.gemini'))).toBe(false)
    expect((await readdir(dir)).sort()).toEqual(['hooks.json', 'settings.json'])
  })

  it('writes every file and deletes the ones to delete', async () => {
    const gone = join(dir, 'AGENTS.md')
    await writeFile(gone, 'jarvis\n')
    await writeFiles([
      {file: join(dir, 'a', 'b.json'), before: null, after: '{}\n'},
      {file: gone, before: 'jarvis\n', after: null},
    ])
    expect(await readFile(join(dir, 'a', 'b.json'), 'utf8')).toBe('{}\n')
    expect(existsSync(gone)).toBe(false)
  })
})
