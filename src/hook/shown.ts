/**
 * What jarvis told a session, noted per session in `.nexus/hook-sessions/<agent>-<session>.json`: the memory files the
 * prompt hook gave it (`files`), so that the session's episode can name them (`## Memory used`) and recall can rank the
 * episode after the notes it repeats; the texts of the shared events its session start showed it (`events`) and the
 * memory files its session start listed (`listed`), which its episode must not restate. A listed file is not named
 * under `## Memory used`: the session was shown its path and one line, not given it. The recording hook reads the note;
 * the session-end hook removes it, and any note older than {@link SHOWN_KEEP_MS} (a session whose end never ran). A
 * note of an earlier version is a JSON array of paths.
 *
 * The prompt hook runs at every prompt: this module imports only the store's file helpers.
 */
import {readdir, stat} from 'node:fs/promises'
import {join} from 'node:path'

import {deleteNexusFile, readNexusFile, writeNexusFile} from '../store/nexus-files.js'
import {nexusDir} from '../store/root.js'

export const SHOWN_DIR = 'hook-sessions'
/** A session's note older than this is removed by any session end. */
export const SHOWN_KEEP_MS = 14 * 86_400_000
/** At most this many paths are noted per session. */
export const SHOWN_MAX = 50
/** At most this many event texts are noted per session (a session start shows the pinned memory and 15 recent events). */
export const SHOWN_EVENTS_MAX = 120

/** `<agent>-<session>`: lowercase letters, digits and `-`, at most 80 characters (the episode's file name too). */
export function sessionSlug(agentId: string, sessionId: string): string {
  const session = sessionId
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
  return `${agentId}-${session || 'session'}`
}

const noteOf = (agentId: string, sessionId: string) => `${SHOWN_DIR}/${sessionSlug(agentId, sessionId)}.json`

interface ShownNote {
  files: string[]
  events: string[]
  listed: string[]
}

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [])

/** The session's note (empty when there is none, or it cannot be read). */
async function readNote(root: string, agentId: string, sessionId: string): Promise<ShownNote> {
  try {
    const value: unknown = JSON.parse((await readNexusFile(root, noteOf(agentId, sessionId))) ?? '[]')
    if (Array.isArray(value)) return {files: strings(value), events: [], listed: []}
    const note = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
    return {files: strings(note.files), events: strings(note.events), listed: strings(note.listed)}
  } catch {
    return {files: [], events: [], listed: []}
  }
}

/** At most this many values of each field are noted. */
const FIELD_MAX: Record<keyof ShownNote, number> = {files: SHOWN_MAX, events: SHOWN_EVENTS_MAX, listed: SHOWN_MAX}

/** Adds to the session's note what it does not hold yet, in one write (nothing is written when it holds them all). */
async function addToNote(root: string, agentId: string, sessionId: string, values: Partial<Record<keyof ShownNote, readonly string[]>>): Promise<void> {
  const note = await readNote(root, agentId, sessionId)
  let changed = false
  for (const [field, given] of Object.entries(values) as Array<[keyof ShownNote, readonly string[]]>) {
    const added = [...new Set(given)].filter((v) => !note[field].includes(v))
    if (added.length === 0) continue
    note[field] = [...note[field], ...added].slice(-FIELD_MAX[field])
    changed = true
  }
  if (changed) await writeNexusFile(root, noteOf(agentId, sessionId), `${JSON.stringify(note)}\n`, {durable: false})
}

/** The paths noted for the session ([] when none, or the note cannot be read). */
export async function readShown(root: string, agentId: string, sessionId: string): Promise<string[]> {
  return (await readNote(root, agentId, sessionId)).files
}

/** Adds `paths` to the session's note (nothing is written when they are all there already). */
export async function noteShown(root: string, agentId: string, sessionId: string, paths: readonly string[]): Promise<void> {
  await addToNote(root, agentId, sessionId, {files: paths})
}

/** The texts of the shared events the session was shown at its start ([] when none were noted). */
export async function readShownEvents(root: string, agentId: string, sessionId: string): Promise<string[]> {
  return (await readNote(root, agentId, sessionId)).events
}

/** The memory files the session's start listed ([] when none were noted). */
export async function readListed(root: string, agentId: string, sessionId: string): Promise<string[]> {
  return (await readNote(root, agentId, sessionId)).listed
}

/** Adds what a session start showed to the session's note: the texts of the shared events, the memory files listed. */
export async function noteSessionStart(root: string, agentId: string, sessionId: string, shown: {events: readonly string[]; listed: readonly string[]}): Promise<void> {
  await addToNote(root, agentId, sessionId, shown)
}

/** Removes the session's note, and the notes of sessions that ended long ago without saying so. */
export async function forgetShown(root: string, agentId: string, sessionId: string, now: Date): Promise<void> {
  await deleteNexusFile(root, noteOf(agentId, sessionId)).catch(() => false)
  const dir = join(nexusDir(root), SHOWN_DIR)
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const info = await stat(join(dir, name)).catch(() => undefined)
    if (info && now.getTime() - info.mtimeMs > SHOWN_KEEP_MS) await deleteNexusFile(root, `${SHOWN_DIR}/${name}`).catch(() => false)
  }
}
