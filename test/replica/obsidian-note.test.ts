import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {putBlock} from '../../src/merge/marked-block.js'
import {dailyNotePath, readDailyNoteSettings} from '../../src/replica/obsidian.js'
import {blockBodyOf, blockIdOf, editsOf, type NoteEntry, parseBlockBody, renderBlockBody, withFrontMatter} from '../../src/replica/obsidian-note.js'
import type {StoredMemoryEvent} from '../../src/schemas/index.js'
import {removeAll, tempDir} from '../helpers/world.js'

const clock = (iso: string) => iso.slice(11, 16)
const render = (entries: NoteEntry[]) => renderBlockBody(entries, {heading: 'Jarvis', clock})

function event(n: number, fields: Partial<StoredMemoryEvent> = {}): StoredMemoryEvent {
  return {
    event_id: `evt_${String(n).padStart(26, '0')}`,
    agent_id: 'claude',
    run_id: 'r',
    scope: 'global',
    kind: 'decision',
    dedupe_key: `decision:k${n}`,
    confidence: 'high',
    content_md: `decided ${n}`,
    source: {system: 'cli'},
    ttl_days: 0,
    deprecated: false,
    created_at: `2026-05-01T09:${String(n % 60).padStart(2, '0')}:00.000Z`,
    ...fields,
  }
}

/** One daily-note run as the replica does it: the block from the events, then jarvis's front matter. */
function run(note: string, events: StoredMemoryEvent[]): string {
  const next = withFrontMatter(putBlock(note, 'note.md', render(events.map((e) => ({event: e})))), {tags: ['jarvis'], aliases: []})
  if (next === null) throw new Error('front matter unreadable')
  return next
}

describe('the block of a daily note', () => {
  it('renders one entry per event, superseded ones struck through and linked, and reads back its content', () => {
    const body = render([
      {event: event(1, {deprecated: true}), supersededBy: '[[#^evt-2|09:02]]'},
      {event: event(2, {content_md: 'Tuesdays.\n\nBut not in August.'}), after: '[[#^evt-1|09:01]]'},
    ])
    expect(body).toBe(
      [
        '## Jarvis',
        '',
        `- ~~09:01 · decision · decision:k1 · claude~~ · superseded by [[#^evt-2|09:02]] ^${blockIdOf(event(1).event_id)}`,
        '  decided 1',
        `- 09:02 · decision · decision:k2 · claude · after [[#^evt-1|09:01]] ^${blockIdOf(event(2).event_id)}`,
        '  Tuesdays.',
        '',
        '  But not in August.',
      ].join('\n'),
    )
    expect(parseBlockBody(body).entries.map((e) => e.content)).toEqual(['decided 1', 'Tuesdays.\n\nBut not in August.'])
  })

  it('tells an edited entry and a new line from what jarvis wrote; header edits and untouched entries are not edits', () => {
    const events = [event(1), event(2), event(3)]
    const base = render(events.map((e) => ({event: e})))
    const edited = base
      .replace('  decided 2', '  decided 2, on Wednesdays now')
      .replace('09:03 · decision', '9:03 decision')
      .concat('\n- remember: the staging key rotates monthly')
    expect(editsOf(edited, base, events)).toEqual({edited: [{event: events[1], content: 'decided 2, on Wednesdays now'}], added: ['remember: the staging key rotates monthly']})
    expect(editsOf(base, base, events)).toEqual({edited: [], added: []})
  })

  it('adds tags and aliases to the front matter, keeping every key, comment and value the person wrote', () => {
    const note = '---\ntitle: Friday # my title\ntags: work\naliases: [Fri]\nrating: 5\n---\nmy text\n'
    expect(withFrontMatter(note, {tags: ['jarvis'], aliases: ['2026-05-01']})).toBe(
      '---\ntitle: Friday # my title\ntags:\n  - work\n  - jarvis\naliases: [ Fri, 2026-05-01 ]\nrating: 5\n---\nmy text\n',
    )
    const once = withFrontMatter('my text\n', {tags: ['jarvis'], aliases: []})!
    expect(once).toBe('---\ntags:\n  - jarvis\n---\nmy text\n')
    expect(withFrontMatter(once, {tags: ['jarvis'], aliases: []})).toBe(once)
    expect(withFrontMatter('---\ntitle: [unclosed\n---\ntext\n', {tags: ['jarvis'], aliases: []})).toBeNull()
    expect(withFrontMatter('---\ntitle: never closed\n', {tags: ['jarvis'], aliases: []})).toBeNull()
  })

  it('a marker quoted inside an entry is text, not the end of the block', () => {
    const events = [event(1, {content_md: 'the markers are\n<!-- jarvis:end -->\nin the note'})]
    const note = run('# Friday\n', events)
    expect(blockBodyOf(note, 'note.md')).toBe(render(events.map((e) => ({event: e}))))
  })
})

/** A line a person may write: anything but jarvis's own marker lines (those are the block's). */
const userLine = fc
  .oneof(
    fc.string({maxLength: 30}),
    fc.constantFrom('# Friday', '## Jarvis', '- [ ] call the bank', '  indented', '---', '', '> quote', '- ^evt-1', '<!-- a comment -->', 'tags: x', '```', 'ünïcödé ✓'),
  )
  .filter((line) => !line.includes('\n') && !line.includes('\r') && !/^<!-- jarvis:(?:begin|end) -->[ \t]*$/.test(line))
const userText = fc.array(userLine, {maxLength: 8}).map((lines) => (lines.length === 0 ? '' : `${lines.join('\n')}\n`))
const eventSets = fc.array(
  fc.uniqueArray(fc.integer({min: 1, max: 40}), {maxLength: 6}).map((ns) => ns.map((n) => event(n))),
  {minLength: 1, maxLength: 5},
)

describe('property: the person’s text around the block', () => {
  it('survives any sequence of runs, byte for byte, and a repeated run changes nothing', () => {
    fc.assert(
      fc.property(userText, userText, eventSets, (before, after, runs) => {
        // Text that opens with a --- line is front matter, which jarvis merges into (tested above).
        fc.pre(!/^---[ \t]*\r?\n/.test(before) && !(before === '' && /^---[ \t]*$/m.test(after.split('\n')[0])))
        let note = `${before}<!-- jarvis:begin -->\n## Jarvis\n<!-- jarvis:end -->\n${after}`
        for (const events of runs) {
          note = run(note, events)
          expect(run(note, events)).toBe(note)
        }
        const body = note.slice(note.indexOf('---\n', 4) + 4)
        expect(body.startsWith(before)).toBe(true)
        expect(body.endsWith(after)).toBe(true)
        expect(blockBodyOf(note, 'note.md')).toBe(render(runs.at(-1)!.map((e) => ({event: e}))))
      }),
      {numRuns: 300},
    )
  })
})

describe('where the daily note is', () => {
  it.each([
    ['YYYY-MM-DD', '', '2026-05-01.md'],
    ['DD.MM.YYYY', 'Daily', 'Daily/01.05.2026.md'],
    ['YYYY/MM/YYYY-MM-DD', 'Journal', 'Journal/2026/05/2026-05-01.md'],
    ['dddd, MMMM Do YYYY', '', 'Friday, May 1st 2026.md'],
    ['gggg-[W]ww', '', '2026-W18.md'],
    ['GGGG-[W]WW-E', '', '2026-W18-5.md'],
    ['YY-M-D ddd', '', '26-5-1 Fri.md'],
  ])('format %j in folder %j is %s, as Obsidian names it', async (format, folder, path) => {
    const {default: moment} = await import('moment')
    expect(dailyNotePath(moment, '2026-05-01', {format, folder})).toBe(path)
  })

  it('reads the Daily notes settings, with Obsidian’s defaults for what is missing, and names a broken file', async () => {
    const vault = await tempDir('jarvis-vault-')
    try {
      expect(await readDailyNoteSettings(vault)).toEqual({folder: '', format: 'YYYY-MM-DD'})
      await mkdir(join(vault, '.obsidian'))
      await writeFile(join(vault, '.obsidian/daily-notes.json'), '{"folder": "/Daily/", "template": "Templates/Day"}')
      expect(await readDailyNoteSettings(vault)).toEqual({folder: 'Daily', format: 'YYYY-MM-DD'})
      await writeFile(join(vault, '.obsidian/daily-notes.json'), '{"folder": ')
      await expect(readDailyNoteSettings(vault)).rejects.toMatchObject({exit: 2, message: expect.stringContaining('.obsidian/daily-notes.json: not JSON')})
      await writeFile(join(vault, '.obsidian/daily-notes.json'), '{"folder": "../outside"}')
      await expect(readDailyNoteSettings(vault)).rejects.toMatchObject({exit: 2, message: expect.stringContaining('leaves the vault')})
    } finally {
      await removeAll([vault])
    }
  })
})

describe('property: an entry reads back as the text it shows', () => {
  it('any event text, rendered and parsed, is the same text (so an untouched entry is never taken for an edit)', () => {
    const lines = fc.array(fc.oneof(fc.string({maxLength: 20}), fc.constantFrom('', '   ', '- item', '\tcode', '## heading', '<!-- jarvis:end -->', '^evt-1', '  two spaces')), {minLength: 1, maxLength: 6})
    const content = fc
      .tuple(lines, fc.constantFrom('\n', '\r\n'))
      .map(([parts, eol]) => parts.join(eol))
      .filter((text) => /\S/.test(text))
    fc.assert(
      fc.property(content, (text) => {
        const events = [event(1, {content_md: text})]
        const body = render(events.map((e) => ({event: e})))
        expect(editsOf(body, null, events)).toEqual({edited: [], added: []})
        expect(parseBlockBody(body).entries).toHaveLength(1)
      }),
      {numRuns: 500},
    )
  })
})
