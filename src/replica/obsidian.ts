/**
 * The `obsidian` replica: each day's events in the vault's daily note, inside jarvis's block (obsidian-note.ts).
 * The note is found where Obsidian's Daily notes plugin puts it: its folder and date format from
 * `.obsidian/daily-notes.json`, formatted by moment.js as Obsidian does (default `YYYY-MM-DD.md` at the top).
 * A person's edit inside the block comes back as an event (`source: obsidian`), through the secret check;
 * a refused one leaves the whole note as the person wrote it. docs/replicas.md.
 */
import {stat} from 'node:fs/promises'
import {join} from 'node:path'

import type {Moment} from 'moment'

import {BadInputError, SecretRefusedError} from '../errors.js'
import {putBlock} from '../merge/marked-block.js'
import type {EventReplicaState, MemoryEvent, StoredMemoryEvent} from '../schemas/index.js'
import {appendAudit, hashText, readNexusFile, readTextIfExists, writeFileAtomic, writeNexusFile} from '../store/index.js'
import {byTime, eventBasePath, type EventReplicaRunOptions, readEventState, screened, writeEventState, writeScope} from './event-log.js'
import {blockBodyOf, blockIdOf, editsOf, type NoteEntry, renderBlockBody, withFrontMatter} from './obsidian-note.js'
import {emptyReport, type ReplicaReport} from './run.js'

type MomentFactory = (input?: string | Date) => Moment

/** Obsidian's own default for a daily note's name. */
export const DEFAULT_DAILY_FORMAT = 'YYYY-MM-DD'
/** A first run writes today's note; a later one every day since its last run, at most this many. */
const MAX_DAYS_BACK = 31
const SETTINGS_FILE = '.obsidian/daily-notes.json'

export interface DailyNoteSettings {
  /** Folder under the vault, `''` for its top. */
  folder: string
  /** moment.js format of the note's name; may hold `/` (sub-folders). */
  format: string
}

/** The Daily notes plugin's settings, as Obsidian reads them: a missing file or field is its default. */
export async function readDailyNoteSettings(vault: string): Promise<DailyNoteSettings> {
  const text = await readTextIfExists(join(vault, SETTINGS_FILE))
  if (text === null) return {folder: '', format: DEFAULT_DAILY_FORMAT}
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new BadInputError(`${join(vault, SETTINGS_FILE)}: not JSON (${(error as Error).message}); fix it in Obsidian's Daily notes settings`, {file: SETTINGS_FILE})
  }
  const settings = (json ?? {}) as {folder?: unknown; format?: unknown}
  const folder = typeof settings.folder === 'string' ? settings.folder.trim().replace(/^\/+|\/+$/g, '') : ''
  const format = typeof settings.format === 'string' && settings.format.trim() !== '' ? settings.format.trim() : DEFAULT_DAILY_FORMAT
  if (folder.split('/').includes('..')) throw new BadInputError(`${join(vault, SETTINGS_FILE)}: folder ${JSON.stringify(folder)} leaves the vault`, {file: SETTINGS_FILE, field: 'folder'})
  return {folder, format}
}

/** The note of a day (`YYYY-MM-DD`), relative to the vault: `<folder>/<day in the plugin's format>.md`. */
export function dailyNotePath(moment: MomentFactory, day: string, settings: DailyNoteSettings): string {
  const name = moment(`${day}T12:00:00`).format(settings.format)
  const path = `${settings.folder ? `${settings.folder}/` : ''}${name}.md`
  if (path.split('/').some((part) => part === '..' || part === '')) throw new BadInputError(`${SETTINGS_FILE}: the date format ${JSON.stringify(settings.format)} makes the note name ${JSON.stringify(path)}, which leaves the vault`, {file: SETTINGS_FILE, field: 'format'})
  return path
}

/** Days from `from` to `to` (both `YYYY-MM-DD`, local), at most MAX_DAYS_BACK, oldest first. */
function daysBetween(moment: MomentFactory, from: string, to: string): string[] {
  const days: string[] = []
  const cursor = moment(`${to}T12:00:00`)
  while (days.length < MAX_DAYS_BACK) {
    const day = cursor.format('YYYY-MM-DD')
    days.unshift(day)
    if (day <= from) break
    cursor.subtract(1, 'day')
  }
  return days
}

interface NoteWork {
  options: EventReplicaRunOptions & {heading: string}
  moment: MomentFactory
  settings: DailyNoteSettings
  state: EventReplicaState
  report: ReplicaReport
  /** Every event of a (scope, key), asked once per run for the links between entries. */
  keyEvents: Map<string, Promise<StoredMemoryEvent[]>>
}

export async function runObsidian(options: EventReplicaRunOptions & {heading: string}): Promise<ReplicaReport> {
  const {root, id, dir} = options
  const report = emptyReport(id, {kind: 'obsidian', dir}, '')
  if (!(await stat(dir).catch(() => null))?.isDirectory()) {
    report.skipped = `${dir} is not a directory (is the vault's path right?)`
    return report
  }
  const {default: moment} = await import('moment')
  const work: NoteWork = {options, moment, settings: await readDailyNoteSettings(dir), state: await readEventState(root, id, 'obsidian', dir), report, keyEvents: new Map()}
  const today = moment(options.now()).format('YYYY-MM-DD')
  const notes = new Map<string, {day: string; recent: boolean}>()
  for (const [path, file] of Object.entries(work.state.files)) if (file.day) notes.set(path, {day: file.day, recent: false})
  for (const day of daysBetween(moment, work.state.lastDay ?? today, today)) notes.set(dailyNotePath(moment, day, work.settings), {day, recent: true})
  // Oldest day first: a person's edit in an older note becomes today's event, which today's note then shows.
  const ordered = [...notes.entries()].sort((a, b) => (a[1].day < b[1].day ? -1 : a[1].day > b[1].day ? 1 : 0))
  let moved = false
  for (const [path, {day, recent}] of ordered) moved = (await syncNote(work, path, day, recent)) || moved
  if (options.dryRun || (!moved && work.state.lastDay === today)) return report
  const at = options.now().toISOString()
  await writeEventState(root, id, {...work.state, lastDay: today}, at)
  if (moved) await appendAudit(root, {at, type: 'replicate', replica: id, kind: 'obsidian', workspace: dir, written: report.written, appended: report.appended.map((a) => a.event_id)})
  return report
}

async function baseOf(work: NoteWork, path: string): Promise<string | null> {
  const recorded = work.state.files[path]
  if (!recorded) return null
  const text = await readNexusFile(work.options.root, eventBasePath(work.options.id, path))
  return text !== null && hashText(text) === recorded.hash ? text : null
}

/** One note: a person's edits in the block to events, then the block rewritten from the log. True when anything was written. */
async function syncNote(work: NoteWork, path: string, day: string, recent: boolean): Promise<boolean> {
  const {options, report} = work
  const file = join(options.dir, path)
  const text = await readTextIfExists(file)
  let body: string | null
  try {
    body = text === null ? null : blockBodyOf(text, path)
  } catch (error) {
    if (!(error instanceof BadInputError)) throw error
    report.kept.push({path, reason: error.message})
    return false
  }
  const base = await baseOf(work, path)
  if (!recent && (body === null || body === base)) return false
  let events = await eventsOfDay(work, day)
  let appended = false
  if (body !== null && body !== base) {
    const edits = editsOf(body, base, events)
    if (edits.edited.length + edits.added.length > 0) {
      const outcome = await appendEdits(work, path, day, edits)
      if (outcome === 'refused') return false // the block stays as the person wrote it; the next run tries again
      appended = outcome === 'appended'
      if (appended) events = await eventsOfDay(work, day)
    }
  }
  if (events.length === 0 && body === null) return appended
  const newBody = renderBlockBody(await linkEntries(work, events, path), {heading: options.heading, clock: (iso) => work.moment(iso).format('HH:mm')})
  const next = withFrontMatter(putBlock(text ?? '', path, newBody), {tags: ['jarvis'], aliases: aliasesOf(path, day)})
  if (next === null) {
    report.kept.push({path, reason: `its front matter cannot be read (YAML between the --- lines): the note is left as it is; fix the front matter to get the day's events`})
    return appended
  }
  if (next === text) return (await record(work, path, day, newBody)) || appended
  report.written.push(path)
  if (options.dryRun) return appended
  // An edit made while this run worked (Obsidian saves as you type) is left for the next run.
  if ((await readTextIfExists(file)) !== text) {
    report.left.push(path)
    return appended
  }
  await writeFileAtomic(file, next)
  await record(work, path, day, newBody)
  return true
}

/** Keeps the block jarvis wrote as the base of the next run's comparison; true when it changed. */
async function record(work: NoteWork, path: string, day: string, body: string): Promise<boolean> {
  if (work.options.dryRun || work.state.files[path]?.hash === hashText(body)) return false
  await writeNexusFile(work.options.root, eventBasePath(work.options.id, path), body)
  work.state.files[path] = {hash: hashText(body), day}
  return true
}

/** The ISO date as an alias when the note's own name is another (`05.01.2026`), so search and links find it by either. */
function aliasesOf(path: string, day: string): string[] {
  const name = path.slice(path.lastIndexOf('/') + 1, -'.md'.length)
  return name === day ? [] : [day]
}

async function eventsOfDay(work: NoteWork, day: string): Promise<StoredMemoryEvent[]> {
  const {moment, options} = work
  const since = moment(`${day}T00:00:00`).toISOString()
  const until = moment(`${day}T00:00:00`).add(1, 'day').toISOString()
  const events: StoredMemoryEvent[] = []
  for (const scope of options.scopes) events.push(...(await options.log.list({scope, since, until})))
  return events.sort(byTime)
}

/**
 * The day's events with their wiki links: to the event that superseded one, and to the previous event of the same
 * key when it is in this note or in another note jarvis wrote.
 */
async function linkEntries(work: NoteWork, events: StoredMemoryEvent[], path: string): Promise<NoteEntry[]> {
  const notePathOf = new Map<string, string>()
  const keyEvents = new Map<string, StoredMemoryEvent[]>()
  for (const event of events) {
    const key = JSON.stringify([event.scope, event.dedupe_key])
    if (keyEvents.has(key)) continue
    // Asked again after this run appended (a person's edit adds a version of its key); else once per run.
    const cached = work.keyEvents.get(key)
    const known = cached ? await cached : []
    const fresh = known.some((e) => e.event_id === event.event_id) ? cached! : work.options.log.list({scope: event.scope, dedupeKey: event.dedupe_key})
    work.keyEvents.set(key, fresh)
    keyEvents.set(key, await fresh)
  }
  const written = new Set(Object.keys(work.state.files))
  for (const all of keyEvents.values()) {
    for (const event of all) {
      const day = work.moment(event.created_at).format('YYYY-MM-DD')
      const note = dailyNotePath(work.moment, day, work.settings)
      if (note === path || written.has(note)) notePathOf.set(event.event_id, note)
    }
  }
  const link = (event: StoredMemoryEvent) => {
    const note = notePathOf.get(event.event_id)
    if (note === undefined) return undefined
    const target = note === path ? '' : note.slice(0, -'.md'.length)
    const label = event.created_at ? work.moment(event.created_at).format(note === path ? 'HH:mm' : 'YYYY-MM-DD HH:mm') : event.dedupe_key
    return `[[${target}#^${blockIdOf(event.event_id)}|${label}]]`
  }
  const everything = [...events, ...[...keyEvents.values()].flat()]
  return events.map((event) => {
    const same = keyEvents.get(JSON.stringify([event.scope, event.dedupe_key])) ?? []
    const previous = same.filter((e) => byTime(e, event) < 0).at(-1)
    const replacement = everything.find((e) => e.supersedes === event.event_id)
    return {event, after: previous ? link(previous) : undefined, supersededBy: replacement ? link(replacement) : undefined}
  })
}

/** A person's edits as events of the log. 'refused' when the secret check refused one: then none was sent. */
async function appendEdits(work: NoteWork, path: string, day: string, edits: ReturnType<typeof editsOf>): Promise<'appended' | 'refused' | 'dry-run'> {
  const {options, report} = work
  const source = {system: 'obsidian' as const, thread_id: path}
  const base = {agent_id: options.log.agentId as MemoryEvent['agent_id'], confidence: 'high' as const, source, ttl_days: 0}
  const events: MemoryEvent[] = [
    ...edits.edited.map(({event, content}) => ({
      ...base,
      run_id: '',
      scope: event.scope,
      kind: event.kind,
      dedupe_key: event.dedupe_key,
      content_md: content,
      ...(event.deprecated ? {} : {supersedes: event.event_id}),
    })),
    ...edits.added.map((content) => ({...base, run_id: '', scope: writeScope(options.scopes), kind: 'log' as const, dedupe_key: `obsidian:${day}-${hashText(content).slice(0, 8)}`, content_md: content})),
  ]
  const fields = Object.fromEntries(events.map((e, i) => [`${path} (${e.dedupe_key}${events.length > 1 ? ` #${i + 1}` : ''})`, e.content_md]))
  if (!(await screened(options.screen, fields, path, report))) return 'refused'
  if (options.dryRun) {
    for (const event of events) report.appended.push({path, event_id: '(dry run)', dedupe_key: event.dedupe_key, status: 'planned'})
    return 'dry-run'
  }
  for (const event of events) {
    // The same edit sent again (a lost answer, a crash before the note was rewritten) is stored once.
    const digest = hashText(JSON.stringify([options.id, path, event.dedupe_key, event.supersedes ?? null, event.content_md]))
    event.run_id = `obsidian-${digest.slice(0, 32)}`
    let answer: {event_id: string; status: string}
    try {
      answer = await options.log.append(event, digest)
    } catch (error) {
      // The server's own check refused it (the events before it are stored; the next run finds them duplicates).
      if (!(error instanceof SecretRefusedError)) throw error
      report.refused.push({path, reason: error.message})
      return 'refused'
    }
    report.appended.push({path, event_id: answer.event_id, dedupe_key: event.dedupe_key, status: answer.status})
  }
  return 'appended'
}
