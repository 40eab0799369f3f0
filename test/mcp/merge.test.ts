/**
 * memory_write / memory_edit on a file changed since it was read (memory_read's hash given back as base_hash):
 * non-overlapping changes merge, overlapping ones are refused with exit 4, and the change made meanwhile is never
 * overwritten. Over stdio (the tree's files) and over /mcp (the server's file store).
 */
import {readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {describe, expect, it} from 'vitest'

import {MemoryClient} from '../../src/protocol/client.js'
import {TOKENS} from '../helpers/world.js'
import {exitOf, httpSession, makeTree, stdioSession, structured, textOf, useMcpWorld, type Session} from './helpers.js'

const ORIGINAL = ['# Plan', '', 'line one', 'line two', 'line three', 'line four', 'line five', ''].join('\n')

/** Where the file lives for a door, and how "someone else" changes it meanwhile. */
interface Door {
  session: Session
  read(path: string): Promise<string | null>
  changeMeanwhile(path: string, text: string | null): Promise<void>
}

function mergeCases(open: () => Promise<Door>) {
  it('an edit on a file changed since it was read merges when the changes do not overlap', async () => {
    const door = await open()
    const path = `notes/edit-merge-${Date.now()}.md`
    expect((await door.session.call('memory_write', {path, content: ORIGINAL})).isError).toBeFalsy()
    const read = structured(await door.session.call('memory_read', {path}))
    await door.changeMeanwhile(path, ORIGINAL.replace('line one', 'line one, changed by another agent'))

    const edited = await door.session.call('memory_edit', {path, replace: 'line five', with: 'line five, changed by me', base_hash: read.hash})
    expect(edited.isError, textOf(edited)).toBeFalsy()
    expect(structured(edited)).toMatchObject({path, merged: true})
    const now = await door.read(path)
    expect(now).toBe(ORIGINAL.replace('line one', 'line one, changed by another agent').replace('line five', 'line five, changed by me'))
    expect(structured(edited).hash).toMatch(/^[0-9a-f]{64}$/)

    // The answered hash is the next base: an edit on top of it, nothing changed meanwhile, is a plain edit.
    const again = await door.session.call('memory_edit', {path, replace: 'line two', with: 'line 2', base_hash: structured(edited).hash})
    expect(structured(again)).toMatchObject({merged: false})
    expect(await door.read(path)).toContain('line 2')
  })

  it('an edit that overlaps the change made since the read is refused with exit 4, and that change stays', async () => {
    const door = await open()
    const path = `notes/edit-conflict-${Date.now()}.md`
    await door.session.call('memory_write', {path, content: ORIGINAL})
    const read = structured(await door.session.call('memory_read', {path}))
    const theirs = ORIGINAL.replace('line three', 'line three, rewritten by another agent')
    await door.changeMeanwhile(path, theirs)

    const edited = await door.session.call('memory_edit', {path, replace: 'line three', with: 'line three, mine', base_hash: read.hash})
    expect(edited.isError).toBe(true)
    expect(exitOf(edited)).toBe(4)
    expect(structured(edited).error).toMatchObject({code: 'CONFLICT_LEFT'})
    expect(textOf(edited)).toMatch(/line 5|lines? \d/)
    expect(await door.read(path)).toBe(theirs)
  })

  it('a write with base_hash merges non-overlapping changes, refuses overlapping ones, and never overwrites', async () => {
    const door = await open()
    const path = `notes/write-${Date.now()}.md`
    await door.session.call('memory_write', {path, content: ORIGINAL})
    const read = structured(await door.session.call('memory_read', {path}))
    const theirs = ORIGINAL.replace('line one', 'line one (theirs)')
    await door.changeMeanwhile(path, theirs)

    const merged = await door.session.call('memory_write', {path, content: ORIGINAL.replace('line four', 'line four (mine)'), base_hash: read.hash})
    expect(merged.isError, textOf(merged)).toBeFalsy()
    expect(structured(merged)).toMatchObject({merged: true, changed: true})
    expect(await door.read(path)).toBe(theirs.replace('line four', 'line four (mine)'))

    const rereadResult = await door.session.call('memory_read', {path})
    const reread = structured(rereadResult)
    const current = textOf(rereadResult) // the text is the text content, the hash in the structured one
    const overlapping = current.replace('line one (theirs)', 'line one (theirs, again)')
    await door.changeMeanwhile(path, overlapping)
    const refused = await door.session.call('memory_write', {path, content: current.replace('line one (theirs)', 'line one (mine)'), base_hash: reread.hash})
    expect(exitOf(refused)).toBe(4)
    expect(await door.read(path)).toBe(overlapping)

    // A base never read in this session (nothing to merge against) is refused too, when the file changed.
    const unknown = await door.session.call('memory_write', {path, content: 'replaced\n', base_hash: 'a'.repeat(64)})
    expect(exitOf(unknown)).toBe(4)
    expect(await door.read(path)).toBe(overlapping)

    // Deleted since it was read: refused, not re-created.
    const last = structured(await door.session.call('memory_read', {path}))
    await door.changeMeanwhile(path, null)
    expect(exitOf(await door.session.call('memory_write', {path, content: 'again\n', base_hash: last.hash}))).toBe(4)
    expect(await door.read(path)).toBeNull()
  })
}

describe('merge or refuse, never overwrite', () => {
  const world = useMcpWorld()
  const {dirs, sessions} = world

  describe('over stdio, on the tree', () => {
    mergeCases(async () => {
      const tree = await makeTree(world.server.url)
      dirs.push(tree)
      const session = await stdioSession({cwd: tree, home: world.home})
      sessions.push(session)
      const file = (path: string) => join(tree, '.memory', ...path.split('/'))
      return {
        session,
        read: (path) => readFile(file(path), 'utf8').catch(() => null),
        changeMeanwhile: async (path, text) => (text === null ? rm(file(path)) : writeFile(file(path), text)),
      }
    })
  })

  describe('over /mcp, on the server file store', () => {
    mergeCases(async () => {
      const session = await httpSession(world.server.url, TOKENS.claude)
      sessions.push(session)
      const other = new MemoryClient({server: world.server.url, token: TOKENS.gemini})
      const read = async (path: string) => (await other.pull([path])).files[path]?.content ?? null
      return {
        session,
        read: async (path) => {
          const content = await read(path)
          return typeof content === 'string' ? content : null
        },
        changeMeanwhile: async (path, text) => {
          await (text === null ? other.push({}, undefined, [path]) : other.push({[path]: text}))
        },
      }
    })
  })
})
