/**
 * Which files changed since a clock (src/warm/changes.ts), as a watched tree answers it: exactly the files changed
 * after the clock was given, once the cookie proved every change made before the question was seen; and `all` — the
 * caller looks at every file — whenever the watch cannot vouch for that: a clock of another watch (one restarted or
 * killed), events lost (a queue that may have overflowed, a folder added or removed), the system clock jumped.
 */
import {mkdirSync, renameSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import fc from 'fast-check'
import {afterEach, describe, expect, it, vi} from 'vitest'

import {resetSearchCache} from '../../src/search/index.js'
import {initTree} from '../../src/store/index.js'
import {ChangeJournal, type ChangesAnswer} from '../../src/warm/changes.js'
import {changesAllSeen, type FreshTree, watchTreeFresh} from '../../src/warm/tree-watch.js'
import {removeAll, tempDir} from '../helpers/world.js'

const watches: FreshTree[] = []
const dirs: string[] = []

afterEach(async () => {
  vi.restoreAllMocks()
  for (const watch of watches.splice(0)) await watch.close()
  resetSearchCache()
  await removeAll(dirs.splice(0))
})

const pathsOf = (answer: ChangesAnswer) => ('paths' in answer ? answer.paths : 'all')

describe('the journal of changes', () => {
  it('answers the paths changed after a clock, each once, and nothing for a clock it just gave', () => {
    const journal = new ChangeJournal()
    const first = journal.since(undefined)
    expect(pathsOf(first)).toBe('all')
    journal.change('b.md')
    journal.change('a/x.md')
    journal.change('b.md')
    const second = journal.since(first.clock)
    expect(pathsOf(second)).toEqual(['a/x.md', 'b.md'])
    expect(pathsOf(journal.since(second.clock))).toEqual([])
    journal.change('c.md')
    // An older clock still answers, with everything since it.
    expect(pathsOf(journal.since(first.clock))).toEqual(['a/x.md', 'b.md', 'c.md'])
    expect(pathsOf(journal.since(second.clock))).toEqual(['c.md'])
  })

  it('says `all` for a clock of another watch, one from before a loss, or anything not a clock', () => {
    const journal = new ChangeJournal()
    const clock = journal.since(undefined).clock
    expect(pathsOf(new ChangeJournal().since(clock))).toBe('all')
    expect(pathsOf(journal.since('not a clock'))).toBe('all')
    journal.change('a.md')
    journal.lose('a test')
    const after = journal.since(clock)
    expect(after).toMatchObject({all: true, reason: 'a test'})
    journal.change('b.md')
    expect(pathsOf(journal.since(after.clock))).toEqual(['b.md'])
  })

  it('for any changes, losses and questions: the paths answered since a clock hold every path changed after it, or `all`', () => {
    type Step = {kind: 'change'; path: string} | {kind: 'lose'} | {kind: 'ask'; which: number} | {kind: 'ask-none'} | {kind: 'ask-foreign'}
    const step = fc.oneof(
      {weight: 5, arbitrary: fc.constantFrom('a.md', 'b.md', 'n/c.md', 'n/d.local.bak', 'x y.md').map((path): Step => ({kind: 'change', path}))},
      {weight: 1, arbitrary: fc.constant<Step>({kind: 'lose'})},
      {weight: 4, arbitrary: fc.nat(50).map((which): Step => ({kind: 'ask', which}))},
      {weight: 1, arbitrary: fc.constant<Step>({kind: 'ask-none'})},
      {weight: 1, arbitrary: fc.constant<Step>({kind: 'ask-foreign'})},
    )
    fc.assert(
      fc.property(fc.array(step, {maxLength: 80}), (steps) => {
        const journal = new ChangeJournal()
        const foreign = new ChangeJournal().since(undefined).clock
        // Each clock given, with the paths changed after it and whether events were lost after it.
        const given: Array<{clock: string; after: Set<string>; lost: boolean}> = []
        const answer = (clock: string | undefined, known?: (typeof given)[number]) => {
          const got = journal.since(clock)
          if (known !== undefined) {
            if ('paths' in got) {
              expect(known.lost).toBe(false)
              expect(new Set(got.paths)).toEqual(new Set([...got.paths, ...known.after]))
              // Sorted, each once.
              expect(got.paths).toEqual([...new Set(got.paths)].sort())
            } else if (!known.lost && got.reason !== 'the system clock jumped') {
              // Not `all` for nothing: a clock this journal gave, with nothing lost since, is answered with paths.
              expect.fail(`\`all\` (${got.reason}) for a clock with nothing lost since`)
            }
          } else expect(got).toMatchObject({all: true})
          given.push({clock: got.clock, after: new Set(), lost: 'all' in got && got.reason === 'the system clock jumped'})
        }
        for (const one of steps) {
          if (one.kind === 'change') {
            journal.change(one.path)
            for (const clock of given) clock.after.add(one.path)
          } else if (one.kind === 'lose') {
            journal.lose('a test')
            for (const clock of given) clock.lost = true
          } else if (one.kind === 'ask') {
            const known = given[one.which % Math.max(1, given.length)]
            answer(known?.clock, known)
          } else answer(one.kind === 'ask-none' ? undefined : foreign)
        }
      }),
      {numRuns: 500},
    )
  })

  it('says `all` when the system clock jumped against the monotonic one', () => {
    const journal = new ChangeJournal()
    const clock = journal.since(undefined).clock
    const now = Date.now()
    vi.spyOn(Date, 'now').mockReturnValue(now + 3_600_000)
    expect(journal.since(clock)).toMatchObject({all: true, reason: 'the system clock jumped'})
  })
})

describe('a watched tree', () => {
  async function watched(options: {overflowBurst?: number} = {}): Promise<{root: string; memory: string; watch: FreshTree}> {
    const dir = await tempDir('jarvis-changes-')
    dirs.push(dir)
    const {root} = await initTree(dir, {agent: 'claude'})
    const memory = join(root, '.memory')
    mkdirSync(join(memory, 'notes'), {recursive: true})
    writeFileSync(join(memory, 'notes', 'kept.md'), 'kept\n')
    writeFileSync(join(memory, 'notes', 'gone.md'), 'gone\n')
    const watch = watchTreeFresh(root, {overflowBurst: options.overflowBurst})
    watches.push(watch)
    return {root, memory, watch}
  }

  it('answers each file written, edited in place or removed the moment before the question, backups included', async () => {
    const {memory, watch} = await watched()
    let clock = (await watch.changes(undefined)).clock
    for (let i = 0; i < 20; i++) {
      // Nothing but the write comes between the change and the question: the cookie's proof.
      writeFileSync(join(memory, 'notes', `n${i}.md`), `note ${i}\n`)
      const answer = await watch.changes(clock)
      expect(pathsOf(answer), `note ${i}`).toEqual([`notes/n${i}.md`])
      clock = answer.clock
    }
    writeFileSync(join(memory, 'notes', 'kept.md'), 'KEPT\n')
    rmSync(join(memory, 'notes', 'gone.md'))
    writeFileSync(join(memory, 'notes', 'kept.local.bak'), 'kept\n')
    // jarvis's own temp file is no memory file; a file whose name only looks like one is (a scan counts it).
    writeFileSync(join(memory, 'notes', `.x.md.jarvis-tmp-${process.pid}-1`), 'a temp file\n')
    writeFileSync(join(memory, 'notes', 'x.jarvis-tmp-notes.md'), 'a memory file\n')
    expect(pathsOf(await watch.changes(clock))).toEqual(['notes/gone.md', 'notes/kept.local.bak', 'notes/kept.md', 'notes/x.jarvis-tmp-notes.md'])
  })

  it('says `all` after a folder is moved, removed, or `.memory/` itself is replaced, and sees edits in the new one', async () => {
    const {root, memory, watch} = await watched()
    mkdirSync(join(memory, 'a', 'b'), {recursive: true})
    writeFileSync(join(memory, 'a', 'b', 'deep.md'), 'deep\n')
    let clock = (await watch.changes(undefined)).clock
    clock = (await watch.changes(clock)).clock
    renameSync(join(memory, 'a'), join(memory, 'c'))
    const moved = await watch.changes(clock)
    expect(moved).toMatchObject({all: true})
    // The moved folder is watched under its new name.
    writeFileSync(join(memory, 'c', 'b', 'deep.md'), 'deep, edited\n')
    const edited = await watch.changes(moved.clock)
    expect(pathsOf(edited)).toEqual(['c/b/deep.md'])
    rmSync(join(memory, 'c'), {recursive: true})
    const removed = await watch.changes(edited.clock)
    expect(removed).toMatchObject({all: true})

    // Another `.memory/` put in the place of the watched one: edits in it are not reported by the old watches.
    const other = join(root, 'other-memory')
    mkdirSync(join(other, 'notes'), {recursive: true})
    writeFileSync(join(other, 'notes', 'kept.md'), 'from elsewhere\n')
    renameSync(memory, join(root, 'old-memory'))
    renameSync(other, memory)
    const replaced = await watch.changes(removed.clock)
    expect(replaced).toMatchObject({all: true, reason: '.memory/ was replaced'})
    writeFileSync(join(memory, 'notes', 'kept.md'), 'edited in the new .memory\n')
    expect(pathsOf(await watch.changes(replaced.clock))).toEqual(['notes/kept.md'])
    // Gone: `all`, every time.
    rmSync(memory, {recursive: true})
    const gone = await watch.changes(replaced.clock)
    expect(gone).toMatchObject({all: true, reason: '.memory/ is gone'})
    expect(await watch.changes(gone.clock)).toMatchObject({all: true})
  })

  it('says `all` after a folder is added or removed, and answers paths again from the clock it gave then', async () => {
    const {memory, watch} = await watched()
    const clock = (await watch.changes(undefined)).clock
    mkdirSync(join(memory, 'new'))
    const after = await watch.changes(clock)
    expect(after).toMatchObject({all: true})
    writeFileSync(join(memory, 'new', 'n.md'), 'in the new folder\n')
    expect(pathsOf(await watch.changes(after.clock))).toEqual(['new/n.md'])
  })

  it('says `all` when one read of the events holds as many as an overflowed queue would', async () => {
    const {memory, watch} = await watched({overflowBurst: 8})
    const clock = (await watch.changes(undefined)).clock
    // Written without yielding: every event waits in the queue, and the watch reads them in one go.
    for (let i = 0; i < 20; i++) writeFileSync(join(memory, 'notes', `burst${i}.md`), `${i}\n`)
    expect(await watch.changes(clock)).toMatchObject({all: true, reason: 'the inotify queue may have overflowed'})
  })

  it.runIf(process.platform === 'linux')('vouches only for a tree on a filesystem whose every change this kernel sees', async () => {
    // /proc changes under the kernel's own hands, as a network share changes under another machine's: not vouched for.
    expect(changesAllSeen('/proc')).toBe(false)
    expect(changesAllSeen('/no/such/folder')).toBe(false)
    const {memory, watch} = await watched()
    expect(watch.ordered()).toBe(changesAllSeen(memory))
  })

  it('a watch that cannot vouch for the order of events always says `all`', async () => {
    const dir = await tempDir('jarvis-changes-')
    dirs.push(dir)
    const {root} = await initTree(dir, {agent: 'claude'})
    const watch = watchTreeFresh(root, {ordered: false})
    watches.push(watch)
    const clock = (await watch.changes(undefined)).clock
    expect(await watch.changes(clock)).toMatchObject({all: true})
  })
})
