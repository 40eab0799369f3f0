/**
 * The base copies' journal (src/store/base.ts): a few small bases are appended to `.nexus/base.journal` instead of
 * opening SQLite; larger flushes fold it into the database. Read back as written, whatever the sequence of writes,
 * reopenings and torn lines.
 */
import {appendFile, readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {JOURNAL_FLUSH_CHARS, JOURNAL_MAX_BYTES} from '../../src/store/base.js'
import {BaseStore, readBase, writeBase} from '../../src/store/index.js'
import {tempTree} from './helpers/temp.js'

const nexusFiles = async (root: string) => (await readdir(join(root, '.nexus'))).filter((name) => name.startsWith('base'))

async function withStore<T>(root: string, work: (bases: BaseStore) => Promise<T> | T): Promise<T> {
  const bases = new BaseStore(root)
  try {
    return await work(bases)
  } finally {
    bases.close()
  }
}

describe('the base copies\' journal', () => {
  it('takes a few small bases without making a database, a removal included', async () => {
    const root = await tempTree()
    await withStore(root, (bases) => {
      bases.put('a.md', 'one\n')
      bases.put('notes/b.md', 'two\n')
      bases.flush()
    })
    expect(await nexusFiles(root)).toEqual(['base.journal'])
    expect(await readBase(root, 'a.md')).toBe('one\n')
    expect(await readBase(root, 'notes/b.md')).toBe('two\n')
    await withStore(root, async (bases) => {
      expect(await bases.remove('a.md')).toBe(true)
      bases.flush()
    })
    expect(await readBase(root, 'a.md')).toBeNull()
    expect(await nexusFiles(root)).toEqual(['base.journal'])
  })

  it('is folded into the database by a large flush, which then removes it', async () => {
    const root = await tempTree()
    const large = 'x'.repeat(JOURNAL_FLUSH_CHARS + 1)
    await writeBase(root, 'old.md', large)
    expect(await nexusFiles(root)).toEqual(['base.sqlite'])
    await writeBase(root, 'a.md', 'small\n')
    expect((await nexusFiles(root)).sort()).toEqual(['base.journal', 'base.sqlite'])
    await writeBase(root, 'big.md', large)
    expect(await nexusFiles(root)).toEqual(['base.sqlite'])
    expect(await readBase(root, 'a.md')).toBe('small\n')
    expect(await readBase(root, 'old.md')).toBe(large)
    expect(await readBase(root, 'big.md')).toBe(large)
  })

  it('stands before the database: its line of a path, a removal too, is the base', async () => {
    const root = await tempTree()
    const large = 'x'.repeat(JOURNAL_FLUSH_CHARS + 1)
    await writeBase(root, 'a.md', large)
    await writeBase(root, 'b.md', large)
    await writeFile(join(root, '.nexus', 'base.journal'), `${JSON.stringify({p: 'a.md', t: null})}\n${JSON.stringify({p: 'b.md', t: 'newer\n'})}\n`)
    expect(await readBase(root, 'a.md')).toBeNull()
    expect(await readBase(root, 'b.md')).toBe('newer\n')
    // Folded by the next flush that opens the database (a read of a path the journal does not have opens it).
    await withStore(root, async (bases) => {
      expect(await bases.get('c.md')).toBeNull()
      bases.put('c.md', 'c\n')
      bases.flush()
    })
    expect(await nexusFiles(root)).toEqual(['base.sqlite'])
    expect(await readBase(root, 'a.md')).toBeNull()
    expect(await readBase(root, 'b.md')).toBe('newer\n')
  })

  it('keeps the texts a sync sent beside the bases, in the journal and in the database, never as a base', async () => {
    const root = await tempTree()
    const large = 'x'.repeat(JOURNAL_FLUSH_CHARS + 1)
    await withStore(root, (bases) => {
      bases.put('a.md', 'base\n')
      bases.putSent('a.md', 'ab12', 'sent\n')
      bases.flush()
    })
    expect(await nexusFiles(root)).toEqual(['base.journal'])
    // An older jarvis reads a sent text's line as a torn one: never as the base of its path.
    expect((await readFile(join(root, '.nexus', 'base.journal'), 'utf8')).split('\n')[1]).toBe(JSON.stringify({s: 'a.md', h: 'ab12', t: 'sent\n'}))
    await withStore(root, async (bases) => {
      expect(await bases.get('a.md')).toBe('base\n')
      expect(await bases.getSent('a.md', 'ab12')).toBe('sent\n')
      expect(await bases.getSent('a.md', 'cd34')).toBeNull()
      bases.putSent('a.md', 'cd34', large)
      bases.flush()
    })
    expect(await nexusFiles(root)).toEqual(['base.sqlite'])
    await withStore(root, async (bases) => {
      expect(await bases.get('a.md')).toBe('base\n')
      expect(await bases.getSent('a.md', 'ab12')).toBe('sent\n')
      expect(await bases.getSent('a.md', 'cd34')).toBe(large)
      bases.forgetSent('a.md', ['ab12', 'cd34'])
      bases.flush()
    })
    await withStore(root, async (bases) => {
      expect(await bases.getSent('a.md', 'ab12')).toBeNull()
      expect(await bases.getSent('a.md', 'cd34')).toBeNull()
      expect(await bases.get('a.md')).toBe('base\n')
    })
  })

  it('skips a torn last line (a kill inside an append), and the next flush folds instead of appending after it', async () => {
    const root = await tempTree()
    await writeBase(root, 'a.md', 'one\n')
    await appendFile(join(root, '.nexus', 'base.journal'), '{"p":"a.md","t":"tw')
    expect(await readBase(root, 'a.md')).toBe('one\n')
    await writeBase(root, 'b.md', 'two\n')
    expect(await nexusFiles(root)).toEqual(['base.sqlite'])
    expect(await readBase(root, 'a.md')).toBe('one\n')
    expect(await readBase(root, 'b.md')).toBe('two\n')
  })

  it('skips a line that is not whole JSON (zeros after a power cut) and keeps the lines after it', async () => {
    const root = await tempTree()
    await writeFile(join(root, '.nexus', 'base.journal'), `{"p":"a.md","t":"one\\n"}\n\0\0\0\0\n{"p":"../out.md","t":"x"}\n{"p":"b.md","t":"two\\n"}\n`)
    expect(await readBase(root, 'a.md')).toBe('one\n')
    expect(await readBase(root, 'b.md')).toBe('two\n')
    expect(await readBase(root, '../out.md').catch(() => 'refused')).toBe('refused')
  })

  it('is folded once it would outgrow its bound', async () => {
    const root = await tempTree()
    const text = 'y'.repeat(JOURNAL_FLUSH_CHARS - 100)
    let flushes = 0
    while ((await nexusFiles(root)).includes('base.sqlite') === false) {
      await writeBase(root, `f${flushes++}.md`, text)
      expect(flushes).toBeLessThanOrEqual(Math.ceil(JOURNAL_MAX_BYTES / text.length) + 1)
    }
    expect(await nexusFiles(root)).toEqual(['base.sqlite'])
    for (let i = 0; i < flushes; i++) expect(await readBase(root, `f${i}.md`)).toBe(text)
  })

  it('reads back what the last flush of each path wrote, whatever the sequence of flushes, reopenings and torn lines', async () => {
    const paths = ['a.md', 'notes/b.md', 'c.json']
    const op = fc.oneof(
      fc.record({kind: fc.constant('put' as const), path: fc.constantFrom(...paths), size: fc.constantFrom(3, 40, JOURNAL_FLUSH_CHARS + 1), mark: fc.nat(99)}),
      fc.record({kind: fc.constant('remove' as const), path: fc.constantFrom(...paths)}),
      fc.constant({kind: 'flush' as const}),
      fc.constant({kind: 'reopen' as const}),
      fc.constant({kind: 'tear' as const}),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, {maxLength: 25}), async (ops) => {
        const root = await tempTree()
        const flushed = new Map<string, string | null>()
        let pending = new Map<string, string | null>()
        let bases = new BaseStore(root)
        try {
          for (const step of ops) {
            if (step.kind === 'put') {
              const text = `${step.mark}`.padEnd(step.size, 'z')
              bases.put(step.path, text)
              pending.set(step.path, text)
              // A put past a megabyte flushes by itself.
              if ([...pending.values()].reduce((sum, t) => sum + (t?.length ?? 0), 0) > 1024 * 1024) {
                for (const [path, t] of pending) flushed.set(path, t)
                pending = new Map()
              }
            } else if (step.kind === 'remove') {
              await bases.remove(step.path)
              pending.set(step.path, null)
            } else if (step.kind === 'flush') {
              bases.flush()
              for (const [path, t] of pending) flushed.set(path, t)
              pending = new Map()
            } else if (step.kind === 'reopen') {
              bases.close()
              pending = new Map()
              bases = new BaseStore(root)
            } else {
              // A kill inside an append: only ever at the end of the file, with nobody holding it open.
              bases.close()
              pending = new Map()
              const journal = join(root, '.nexus', 'base.journal')
              const text = await readFile(journal, 'utf8').catch(() => undefined)
              if (text !== undefined) await appendFile(journal, '{"p":"a.md","t":"torn')
              bases = new BaseStore(root)
            }
          }
          bases.close()
          for (const path of paths) expect(await readBase(root, path)).toBe(flushed.get(path) ?? null)
        } finally {
          bases.close()
        }
      }),
      {numRuns: 40},
    )
  })
})
