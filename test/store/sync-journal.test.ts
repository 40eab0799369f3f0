/**
 * The sync state's journal (store/sync-state.ts): a write that changes few entries appends them to
 * `.nexus/sync-state.journal` instead of rewriting the whole file. Whatever sequence of writes, the state read back
 * (file + journal) is the state last written, exactly as a whole-file write leaves it; a torn last line (an append
 * that never finished) is ignored; a journal that names another file (the file was rewritten since) is ignored. A view
 * of a few entries (a sync of a few files) writes what a whole state would, and is never written whole.
 */
import {appendFile, lstat, readFile, rename, stat, writeFile} from 'node:fs/promises'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import type {SyncState} from '../../src/schemas/index.js'
import {hashText, readSyncState, readSyncStateView, syncJournalPath, syncStatePath, syncStateStamp, writeSyncState} from '../../src/store/index.js'
import {initTempTree} from './helpers/temp.js'

const tree = initTempTree

const SYNCED_AT = '2026-11-26T04:00:00.000Z'
const entryOf = (text: string, rev?: number): SyncState['files'][string] => (rev === undefined ? {hash: hashText(text), syncedAt: SYNCED_AT} : {hash: hashText(text), rev, syncedAt: SYNCED_AT})

/** A state of `count` entries, as a sync leaves it. */
function stateOf(count: number, seq = 1): SyncState {
  const files: SyncState['files'] = {}
  for (let i = 0; i < count; i++) files[`area-${i % 5}/note-${i}.md`] = entryOf(`note ${i}`, i + 1)
  return {version: 1, server: 'http://127.0.0.1:1', serverId: 'server-1', mode: 'revision', seq, lastSyncAt: SYNCED_AT, files}
}

const exists = (path: string) => stat(path).then(() => true, () => false)

/** One write of a sync: entries replaced, added or removed (each in a new object, as a sync does), a new sequence. */
type Step = {replace: number[]; add: number[]; remove: number[]; seq: number; readFirst: boolean; pending: boolean}
const step: fc.Arbitrary<Step> = fc.record({
  replace: fc.array(fc.nat(199), {maxLength: 12}),
  add: fc.array(fc.integer({min: 200, max: 260}), {maxLength: 4}),
  remove: fc.array(fc.nat(260), {maxLength: 3}),
  seq: fc.nat(10_000),
  readFirst: fc.boolean(),
  pending: fc.boolean(),
})

/** The state after one step: its entries replaced (each in a new object, as a sync does), added or removed. */
function applied(state: SyncState, {replace, add, remove, seq, pending}: Omit<Step, 'readFirst'>, nextRound: () => number): SyncState {
  const files = {...state.files}
  for (const i of replace) {
    const path = `area-${i % 5}/note-${i}.md`
    if (!files[path]) continue
    const round = nextRound()
    files[path] = entryOf(`note ${i} round ${round}`, round)
  }
  for (const i of add) files[`added/${i}.md`] = entryOf(`added ${i}`)
  for (const i of remove) {
    delete files[`added/${i}.md`]
    delete files[`area-${i % 5}/note-${i}.md`]
  }
  return {...state, files, seq, pending: pending ? {'added/200.md': [hashText('pending')]} : undefined}
}

describe('the sync state journal', () => {
  it('fold = whole file: after any sequence of writes, the state read back is the state last written', async () => {
    let round = 0
    await fc.assert(
      fc.asyncProperty(fc.array(step, {minLength: 1, maxLength: 12}), async (steps) => {
        const root = await tree()
        const wholeRoot = await tree()
        let state = stateOf(200)
        await writeSyncState(root, state)
        state = await readSyncState(root)
        let appended = 0
        for (const {replace, add, remove, seq, readFirst, pending} of steps) {
          // A new process reads what is on disk first; a running sync writes again what it holds.
          if (readFirst) state = await readSyncState(root)
          state = applied(state, {replace, add, remove, seq, pending}, () => ++round)
          const before = await lstat(syncStatePath(root))
          await writeSyncState(root, state)
          const after = await lstat(syncStatePath(root))
          if (after.ino === before.ino) appended++
          // The same state written as a whole file elsewhere reads the same.
          await writeFile(syncStatePath(wholeRoot), JSON.stringify(state))
          const read = await readSyncState(root)
          expect(read).toEqual(await readSyncState(wholeRoot))
          expect(read.files).toEqual(JSON.parse(JSON.stringify(state.files)))
          expect(read.seq).toBe(seq)
          state = read
        }
        // Few entries change per write: most writes were appends, not a new file.
        expect(appended).toBeGreaterThan(0)
      }),
      {numRuns: 40},
    )
  })

  it('killed at any point of any sequence of writes (a torn append, a fold renamed but its journal left), the state read back is the last one a write returned', async () => {
    type Crash = {kind: 'none'} | {kind: 'torn'; cut: number} | {kind: 'fold'}
    const crash: fc.Arbitrary<Crash> = fc.oneof(
      fc.constant({kind: 'none'} as const),
      fc.record({kind: fc.constant('torn' as const), cut: fc.double({min: 0, max: 1, noNaN: true, maxExcluded: true})}),
      fc.constant({kind: 'fold'} as const),
    )
    let round = 0
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(step, crash), {minLength: 1, maxLength: 12}), async (steps) => {
        const root = await tree()
        await writeSyncState(root, stateOf(200))
        // What the last write that returned left: what a user was told is recorded.
        let acknowledged = await readSyncState(root)
        let state = acknowledged
        for (const [{replace, add, remove, seq, readFirst, pending}, killed] of steps) {
          if (readFirst) state = await readSyncState(root)
          const next = applied(state, {replace, add, remove, seq, pending}, () => ++round)
          if (killed.kind === 'none') {
            await writeSyncState(root, next)
            acknowledged = JSON.parse(JSON.stringify(next)) as SyncState
            state = next
            continue
          }
          if (killed.kind === 'torn' && (await exists(syncJournalPath(root)))) {
            // The process died inside its append: part of its line reached the journal, never its newline.
            const line = JSON.stringify({files: {'area-1/note-1.md': entryOf(`torn ${round}`, round)}, state: {version: 1, seq}})
            await appendFile(syncJournalPath(root), line.slice(0, Math.max(1, Math.floor(killed.cut * line.length))))
          } else if (killed.kind === 'fold') {
            // The process died after its fold's rename, before it removed the journal: the new file stands alone.
            await writeFile(`${syncStatePath(root)}.new`, JSON.stringify(next, null, 2))
            await rename(`${syncStatePath(root)}.new`, syncStatePath(root))
            acknowledged = JSON.parse(JSON.stringify(next)) as SyncState
          }
          // The next process reads what is on disk.
          state = await readSyncState(root)
          expect(state).toEqual(await readSyncState(root))
          expect(JSON.parse(JSON.stringify(state))).toEqual(JSON.parse(JSON.stringify(acknowledged)))
        }
        // And a last process, after all of it.
        expect(JSON.parse(JSON.stringify(await readSyncState(root)))).toEqual(JSON.parse(JSON.stringify(acknowledged)))
      }),
      {numRuns: 60},
    )
  })

  it('a write that changes few entries appends to the journal; one that changes many, or a grown journal, rewrites the file and drops the journal', async () => {
    const root = await tree()
    await writeSyncState(root, stateOf(400))
    const first = await lstat(syncStatePath(root))
    const state = await readSyncState(root)
    await writeSyncState(root, {...state, seq: 2, files: {...state.files, 'area-0/note-0.md': entryOf('edited', 900)}})
    expect((await lstat(syncStatePath(root))).ino).toBe(first.ino)
    expect(await exists(syncJournalPath(root))).toBe(true)
    expect((await readSyncState(root)).files['area-0/note-0.md']).toEqual(entryOf('edited', 900))

    // Half the entries at once: the whole file, and no journal left.
    const many = await readSyncState(root)
    const files = {...many.files}
    for (let i = 0; i < 200; i++) files[`area-${i % 5}/note-${i}.md`] = entryOf(`many ${i}`, 1000 + i)
    await writeSyncState(root, {...many, seq: 3, files})
    expect((await lstat(syncStatePath(root))).ino).not.toBe(first.ino)
    expect(await exists(syncJournalPath(root))).toBe(false)
    expect((await readSyncState(root)).files['area-1/note-1.md']).toEqual(entryOf('many 1', 1001))
  })

  it('a torn last line (an append that never finished) is ignored, and the next write goes on from the last whole line', async () => {
    const root = await tree()
    await writeSyncState(root, stateOf(100))
    const state = await readSyncState(root)
    const written = {...state, seq: 5, files: {...state.files, 'area-2/note-2.md': entryOf('second', 50)}}
    await writeSyncState(root, written)
    await appendFile(syncJournalPath(root), '{"files":{"area-3/note-3.md":{"hash":"')
    const read = await readSyncState(root)
    expect(read.seq).toBe(5)
    expect(read.files['area-2/note-2.md']).toEqual(entryOf('second', 50))
    expect(read.files['area-3/note-3.md']).toEqual(entryOf('note 3', 4))

    await writeSyncState(root, {...read, seq: 6, files: {...read.files, 'area-4/note-4.md': entryOf('third', 51)}})
    const again = await readSyncState(root)
    expect(again.seq).toBe(6)
    expect(again.files['area-4/note-4.md']).toEqual(entryOf('third', 51))
    expect(again.files['area-2/note-2.md']).toEqual(entryOf('second', 50))
    expect((await readFile(syncJournalPath(root), 'utf8')).endsWith('\n')).toBe(true)
  })

  it('a journal left beside a file written since (an older jarvis, a crash between a fold and its clean-up) is not applied', async () => {
    const root = await tree()
    await writeSyncState(root, stateOf(100))
    const state = await readSyncState(root)
    await writeSyncState(root, {...state, seq: 9, files: {...state.files, 'area-0/note-0.md': entryOf('journaled', 70)}})
    const journal = await readFile(syncJournalPath(root), 'utf8')
    // Another writer replaces the file (as an older jarvis does, knowing nothing of the journal).
    const other = stateOf(100, 4)
    await writeFile(syncStatePath(root), JSON.stringify(other))
    const read = await readSyncState(root)
    expect(read.seq).toBe(4)
    expect(read.files['area-0/note-0.md']).toEqual(entryOf('note 0', 1))
    // The next write rewrites the file and drops the stale journal.
    await writeSyncState(root, {...read, seq: 10})
    expect(await exists(syncJournalPath(root))).toBe(false)
    expect((await readSyncState(root)).seq).toBe(10)
    expect(journal).toContain(hashText('journaled'))
  })

  it('a journal line damaged by hand is named with its file and line', async () => {
    const root = await tree()
    await writeSyncState(root, stateOf(100))
    const state = await readSyncState(root)
    await writeSyncState(root, {...state, seq: 2, files: {...state.files, 'area-0/note-0.md': entryOf('x', 2)}})
    await appendFile(syncJournalPath(root), 'not json\n')
    await expect(readSyncState(root)).rejects.toThrow(/\.nexus\/sync-state\.journal: line 3: invalid JSON/)
  })

  it('an entry the journal carries is checked like one of the file: a damaged one is named', async () => {
    const root = await tree()
    await writeSyncState(root, stateOf(100))
    const state = await readSyncState(root)
    await writeSyncState(root, {...state, seq: 2, files: {...state.files, 'area-0/note-0.md': entryOf('x', 2)}})
    await appendFile(syncJournalPath(root), `${JSON.stringify({files: {'area-1/note-1.md': {hash: 'nope', syncedAt: SYNCED_AT}}, state: {version: 1, seq: 3}})}\n`)
    await expect(readSyncState(root)).rejects.toThrow(/files\.area-1\/note-1\.md\.hash/)
  })

  it('a view of a few entries, written as a sync writes it, leaves the state the whole state would', async () => {
    let round = 0
    const view = fc.record({
      paths: fc.uniqueArray(fc.nat(199), {minLength: 1, maxLength: 6}),
      replace: fc.array(fc.nat(5), {maxLength: 6}),
      add: fc.uniqueArray(fc.integer({min: 200, max: 230}), {maxLength: 3}),
      remove: fc.array(fc.nat(5), {maxLength: 1}),
      seq: fc.nat(10_000),
      pendingFirst: fc.boolean(),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(view, {minLength: 1, maxLength: 6}), async (steps) => {
        const root = await tree()
        await writeSyncState(root, stateOf(200))
        // A view needs a journal line to take the rest of the state from.
        const first = await readSyncState(root)
        await writeSyncState(root, {...first, files: {...first.files, 'area-0/note-0.md': entryOf('note 0, again', 900)}})
        let whole = await readSyncState(root)
        const fileIno = (await lstat(syncStatePath(root))).ino
        for (const {paths, replace, add, remove, seq, pendingFirst} of steps) {
          const names = paths.map((i) => `area-${i % 5}/note-${i}.md`).filter((path) => whole.files[path] !== undefined)
          const entries = Object.fromEntries(names.map((path) => [path, {hash: whole.files[path]!.hash, rev: whole.files[path]!.rev}]))
          const state = await readSyncStateView(root, (await syncStateStamp(root))!, entries, Object.keys(whole.files).length)
          expect(state).toBeDefined()
          expect({...state!, files: undefined}).toEqual({...whole, files: undefined})
          const expected = {...whole, files: {...whole.files}, seq}
          // As a push does: its pending hashes first, then the bases the server acknowledged.
          if (pendingFirst) {
            state!.pending = {[names[0] ?? 'added/200.md']: [hashText('pending')]}
            await writeSyncState(root, state!)
            // Read from the journal's last line: reading the state would end the view (see the next test).
            const lines = (await readFile(syncJournalPath(root), 'utf8')).trimEnd().split('\n')
            expect(JSON.parse(lines.at(-1)!).state.pending).toEqual(state!.pending)
            state!.pending = undefined
          }
          for (const i of replace) {
            const path = names[i % Math.max(1, names.length)]
            if (path === undefined) continue
            state!.files[path] = expected.files[path] = entryOf(`${path} round ${++round}`, round)
          }
          for (const i of add) state!.files[`added/${i}.md`] = expected.files[`added/${i}.md`] = entryOf(`added ${i} round ${round}`)
          for (const i of remove) {
            const path = names[i % Math.max(1, names.length)]
            if (path === undefined || !(path in state!.files)) continue
            delete state!.files[path]
            delete expected.files[path]
          }
          state!.seq = seq
          await writeSyncState(root, state!)
          whole = await readSyncState(root)
          expect(whole).toEqual(JSON.parse(JSON.stringify(expected)))
        }
        // Only appended to: the file itself was never written again.
        expect((await lstat(syncStatePath(root))).ino).toBe(fileIno)
      }),
      {numRuns: 30},
    )
  })

  it('a view is never written whole: one its journal cannot take is refused, and the state on disk stays as it was', async () => {
    const root = await tree()
    await writeSyncState(root, stateOf(40))
    const first = await readSyncState(root)
    await writeSyncState(root, {...first, files: {...first.files, 'area-0/note-0.md': entryOf('note 0, again', 900)}})
    const onDisk = async () => [await readFile(syncStatePath(root), 'utf8'), await readFile(syncJournalPath(root), 'utf8')]
    const before = await onDisk()
    const whole = await readSyncState(root)
    const entries = {'area-1/note-1.md': {hash: whole.files['area-1/note-1.md']!.hash, rev: 2}}

    // Another read of the state in this process meanwhile: the view no longer knows what is on disk.
    const view = await readSyncStateView(root, (await syncStateStamp(root))!, entries, 40)
    await readSyncState(root)
    view!.files['area-1/note-1.md'] = entryOf('note 1, edited', 901)
    await expect(writeSyncState(root, view!)).rejects.toMatchObject({code: 'STATE_VIEW_UNWRITTEN'})
    expect(await onDisk()).toEqual(before)

    // More changes than a journal line may carry (a quarter of the state): refused too, not written whole.
    const many = await readSyncStateView(root, (await syncStateStamp(root))!, entries, 40)
    for (let i = 0; i < 14; i++) many!.files[`added/${i}.md`] = entryOf(`added ${i}`)
    await expect(writeSyncState(root, many!)).rejects.toMatchObject({code: 'STATE_VIEW_UNWRITTEN'})
    expect(await onDisk()).toEqual(before)
    expect(await readSyncState(root)).toEqual(whole)
  })
})
