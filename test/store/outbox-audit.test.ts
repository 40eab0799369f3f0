import {appendFile, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {describe, expect, it} from 'vitest'

import {SchemaError} from '../../src/errors.js'
import {appendAudit, appendOutbox, readAudit, readOutbox, removeFromOutbox} from '../../src/store/index.js'
import {tempTree} from './helpers/temp.js'

const entry = (id: string) => ({id, kind: 'memory-event' as const, createdAt: '2026-01-01T00:00:00.000Z', payload: {key: id}})

describe('outbox', () => {
  it('appends, reads in order, and removes acknowledged entries', async () => {
    const root = await tempTree()
    expect(await readOutbox(root)).toEqual([])
    for (const id of ['a', 'b', 'c']) await appendOutbox(root, entry(id))
    expect((await readOutbox(root)).map((e) => e.id)).toEqual(['a', 'b', 'c'])
    expect(await removeFromOutbox(root, ['a', 'c', 'zzz'])).toBe(2)
    expect(await readOutbox(root)).toEqual([entry('b')])
    expect(await removeFromOutbox(root, [])).toBe(0)
  })

  it('ignores a torn last line from a crash, and the next append is not glued to it', async () => {
    const root = await tempTree()
    await appendOutbox(root, entry('a'))
    await appendFile(join(root, '.nexus', 'outbox.jsonl'), '{"id":"b","kind":"memory-ev')
    expect((await readOutbox(root)).map((e) => e.id)).toEqual(['a'])
    await appendOutbox(root, entry('c'))
    expect((await readOutbox(root)).map((e) => e.id)).toEqual(['a', 'c'])
  })

  it('reports any other bad line with its line number', async () => {
    const root = await tempTree()
    const file = join(root, '.nexus', 'outbox.jsonl')
    await writeFile(file, [JSON.stringify(entry('a')), 'not json', JSON.stringify({...entry('c'), kind: 'nope'}), ''].join('\n'))
    const error = await readOutbox(root).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SchemaError)
    expect((error as SchemaError).file).toBe('.nexus/outbox.jsonl')
    expect((error as SchemaError).message).toMatch(/line 2: invalid JSON/)
    expect((error as SchemaError).message).toMatch(/line 3: kind/)
    expect((error as SchemaError).problems.at(-1)).toBe(
      'lines 2, 3 are each a write the server has not received yet (a memory event, a task result or a project switch, queued while it could not be reached): fix them, or remove them and run `jarvis sync` again, knowing that what they hold is then never sent; the other lines are sent by that sync',
    )
  })

  it('refuses an invalid entry before writing', async () => {
    const root = await tempTree()
    await expect(appendOutbox(root, {id: '', kind: 'memory-event', createdAt: 'x', payload: 1})).rejects.toBeInstanceOf(SchemaError)
    expect(await readOutbox(root)).toEqual([])
  })

  it('keeps unknown fields through a rewrite', async () => {
    const root = await tempTree()
    await appendOutbox(root, {...entry('a'), attempts: 2})
    await appendOutbox(root, entry('b'))
    await removeFromOutbox(root, ['b'])
    expect(await readOutbox(root)).toEqual([{...entry('a'), attempts: 2}])
  })
})

describe('audit', () => {
  it('appends one JSON line per entry, filling in `at`', async () => {
    const root = await tempTree()
    const written = await appendAudit(root, {type: 'sync', pushed: 2})
    await appendAudit(root, {at: '2026-01-01T00:00:00.000Z', type: 'backup', path: 'a.md', backup: 'a.local.bak'})
    expect(new Date(written.at).toISOString()).toBe(written.at)
    const lines = (await readFile(join(root, '.nexus', 'audit.jsonl'), 'utf8')).split('\n')
    expect(lines).toHaveLength(3)
    expect(JSON.parse(lines[0])).toEqual({at: written.at, type: 'sync', pushed: 2})
    expect((await readAudit(root)).map((e) => e.type)).toEqual(['sync', 'backup'])
  })

  it('skips a line that is not an entry, telling which one, and reads the rest', async () => {
    const root = await tempTree()
    await appendAudit(root, {at: '2026-01-01T00:00:00.000Z', type: 'sync', pushed: 1})
    await appendFile(join(root, '.nexus', 'audit.jsonl'), 'garbage\n{"at":"2026-01-02T00:00:00.000Z"}\n')
    await appendAudit(root, {at: '2026-01-03T00:00:00.000Z', type: 'sync', pushed: 2})
    const warnings: string[] = []
    expect((await readAudit(root, (message) => warnings.push(message))).map((e) => e.pushed)).toEqual([1, 2])
    expect(warnings).toEqual([
      `.nexus/audit.jsonl: line 2 skipped, it is not an audit entry (invalid JSON: ${jsonError('garbage')}): fix or remove that line to stop this warning`,
      expect.stringMatching(/^\.nexus\/audit\.jsonl: line 3 skipped, it is not an audit entry \(type: .*\): fix or remove that line to stop this warning$/),
    ])
  })
})

function jsonError(text: string): string {
  try {
    JSON.parse(text)
  } catch (error) {
    return (error as Error).message
  }
  throw new Error(`${text} is JSON`)
}
