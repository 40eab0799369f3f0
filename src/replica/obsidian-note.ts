/**
 * One Obsidian daily note and jarvis's part of it. PURE: text in, text out; times are rendered by a function
 * the caller gives (local time, as the person reads the note).
 *
 * jarvis owns one block, `<!-- jarvis:begin -->` … `<!-- jarvis:end -->` (the markers of the agents' instruction
 * files; Obsidian hides HTML comments in reading view), under its own heading, one list item per event:
 *
 *   - 09:14 · decision · decision:deploy_day · claude · after [[2026-04-30#^evt-01J…|2026-04-30 16:02]] ^evt-01K…
 *     Deploys go out on Tuesdays.
 *
 * The `^evt-…` block id names the event (and makes it a link target); the indented lines are its content. A
 * superseded event's first line is struck through and links to what replaced it. Everything outside the block is
 * the person's and is never changed, except that jarvis's tags and aliases are added to the front matter.
 */
import {isMap, isScalar, isSeq, parseDocument} from 'yaml'

import {blockSpan} from '../merge/marked-block.js'
import type {StoredMemoryEvent} from '../schemas/index.js'
import {byTime} from './event-log.js'

export interface NoteEntry {
  event: StoredMemoryEvent
  /** Wiki link to the previous event of the same key, when it is in a note jarvis wrote: `[[target|label]]`. */
  after?: string
  /** Wiki link to the event that superseded this one. */
  supersededBy?: string
}

export interface RenderOptions {
  heading: string
  /** `HH:mm` of an ISO time, in the time zone the person reads the note in. */
  clock: (iso: string) => string
}

/** A block id Obsidian accepts (letters, digits, `-`) naming an event. */
export function blockIdOf(eventId: string): string {
  return eventId.replace(/[^A-Za-z0-9-]/g, '-')
}

/** The body of jarvis's block (between the markers) for the day's entries, oldest first. */
export function renderBlockBody(entries: readonly NoteEntry[], options: RenderOptions): string {
  const lines = [`## ${options.heading}`, '']
  for (const entry of [...entries].sort((a, b) => byTime(a.event, b.event))) lines.push(...renderEntry(entry, options))
  return lines.join('\n').trimEnd()
}

function renderEntry({event, after, supersededBy}: NoteEntry, options: RenderOptions): string[] {
  const what = [event.created_at ? options.clock(event.created_at) : '--:--', event.kind, event.dedupe_key, event.agent_id].join(' · ')
  const superseded = event.deprecated || supersededBy !== undefined
  const head = superseded ? `~~${what}~~ · superseded${supersededBy ? ` by ${supersededBy}` : ''}` : what
  const links = after ? ` · after ${after}` : ''
  const content = normaliseContent(event.content_md)
    .split('\n')
    .map((line) => (line === '' ? '' : `  ${line}`))
  return [`- ${head}${links} ^${blockIdOf(event.event_id)}`, ...content]
}

/** Content as compared and shown: LF, no trailing blanks on a line, none at the end. */
export function normaliseContent(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .replace(/^\n+|\n+$/g, '')
}

export interface ParsedEntry {
  /** The block id at the end of the entry's first line, when there is one. */
  id: string | null
  /** For an entry with an id, its indented lines; for one without, all its text. */
  content: string
}

/** The entries of a block body, and text a person wrote outside any entry (between the heading and the list). */
export function parseBlockBody(body: string): {entries: ParsedEntry[]; loose: string} {
  const entries: {id: string | null; head: string; rest: string[]}[] = []
  const loose: string[] = []
  const lines = body.replace(/\r\n?/g, '\n').split('\n')
  // The first line is jarvis's heading (whatever it says now); a heading a person adds below it is their text.
  if (/^#{1,6}\s/.test(lines[0] ?? '')) lines.shift()
  for (const line of lines) {
    if (line.startsWith('- ') || line === '-') {
      const id = / \^([A-Za-z0-9-]+)[ \t]*$/.exec(line)
      entries.push({id: id ? id[1] : null, head: line.slice(2).replace(/ \^[A-Za-z0-9-]+[ \t]*$/, ''), rest: []})
    } else if (entries.length > 0) entries.at(-1)!.rest.push(line.replace(/^ {1,2}|^\t/, ''))
    else loose.push(line)
  }
  return {
    entries: entries.map(({id, head, rest}) => ({id, content: normaliseContent(id === null ? [head, ...rest].join('\n') : rest.join('\n'))})),
    loose: normaliseContent(loose.join('\n')),
  }
}

/** The text between jarvis's markers, or null when the note has no block. Throws (BadInputError) on broken markers. */
export function blockBodyOf(text: string, file: string): string | null {
  const span = blockSpan(text, file)
  if (!span) return null
  const block = text.slice(span.start, span.end).replace(/^\n/, '')
  const lines = block.replace(/\r\n?/g, '\n').replace(/\n$/, '').split('\n')
  return lines.slice(1, -1).join('\n')
}

/** What a person changed in the block since jarvis wrote `base` (null: no base kept; the events are compared). */
export interface BlockEdits {
  /** An entry whose content a person changed: the event it showed and the new content. */
  edited: {event: StoredMemoryEvent; content: string}[]
  /** Text a person added in the block that belongs to no event. */
  added: string[]
}

export function editsOf(body: string, base: string | null, events: readonly StoredMemoryEvent[]): BlockEdits {
  const byId = new Map(events.map((e) => [blockIdOf(e.event_id), e]))
  const before = base === null ? null : parseBlockBody(base)
  const baseContent = new Map((before?.entries ?? []).filter((e) => e.id !== null).map((e) => [e.id!, e.content]))
  const now = parseBlockBody(body)
  const edits: BlockEdits = {edited: [], added: []}
  for (const entry of now.entries) {
    const event = entry.id === null ? undefined : byId.get(entry.id)
    const was = entry.id === null ? undefined : (baseContent.get(entry.id) ?? (event ? normaliseContent(event.content_md) : undefined))
    if (entry.content === '' || entry.content === was) continue
    if (event) edits.edited.push({event, content: entry.content})
    else edits.added.push(entry.content)
  }
  if (now.loose !== '' && now.loose !== before?.loose) edits.added.push(now.loose)
  return edits
}

export interface FrontMatterAdditions {
  tags: string[]
  aliases: string[]
}

/** The front matter's YAML and where the rest of the note starts; null: none; 'broken': opened and never closed. */
function splitFrontMatter(text: string): {yaml: string; rest: string} | null | 'broken' {
  if (!/^---[ \t]*\r?\n/.test(text)) return null
  const lines = text.split('\n')
  const close = lines.findIndex((line, i) => i > 0 && /^(?:---|\.\.\.)[ \t]*\r?$/.test(line))
  if (close === -1) return 'broken'
  return {yaml: lines.slice(1, close).join('\n'), rest: lines.slice(close + 1).join('\n')}
}

/**
 * Adds jarvis's tags and aliases to the note's front matter (creating it when the note has none), keeping every key,
 * value, comment and order the person wrote. Null when the front matter cannot be read (the note is then left alone).
 */
export function withFrontMatter(text: string, add: FrontMatterAdditions): string | null {
  const split = splitFrontMatter(text)
  if (split === 'broken') return null
  const doc = parseDocument(split?.yaml ?? '')
  if (doc.errors.length > 0 || (doc.contents !== null && !isMap(doc.contents))) return null
  let changed = false
  for (const [key, values] of [['tags', add.tags], ['aliases', add.aliases]] as const) {
    const node = doc.get(key, true)
    const merged = mergedList(node, values)
    if (merged === 'unreadable') return null
    if (merged.length === 0) continue
    // Added to the person's own list where there is one, so its style (block or [flow]) and comments stay.
    if (isSeq(node)) for (const value of merged) node.add(doc.createNode(value))
    else doc.set(key, doc.createNode([...scalarValues(node), ...merged]))
    changed = true
  }
  if (!changed) return text
  return `---\n${doc.toString({lineWidth: 0}).replace(/\n$/, '')}\n---\n${split?.rest ?? text}`
}

/** The values of `values` a front-matter key lacks; 'unreadable' when it is neither empty, one value nor a list. */
function mergedList(node: unknown, values: readonly string[]): string[] | 'unreadable' {
  let have: string[]
  if (isSeq(node)) have = node.items.map((item) => String(isScalar(item) ? item.value : item))
  else if (node === undefined || node === null || isScalar(node)) have = scalarValues(node)
  else return 'unreadable'
  return values.filter((v) => !have.includes(v))
}

/** `tags: work` or `tags: a, b` (Obsidian reads both): its values, which stay first when it becomes a list. */
function scalarValues(node: unknown): string[] {
  if (!isScalar(node) || node.value === null || node.value === undefined) return []
  return String(node.value)
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean)
}
