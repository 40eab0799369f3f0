/**
 * Which messages of a session `jarvis session sync` carried into it, noted per target session in
 * `.nexus/session-carried/<provider>-<session>.json`: for each carried message the hash of its key (the key two copies
 * of one message share across the tools, src/merge/transcript.ts) and how many such messages were carried.
 *
 * The session files cannot say it themselves: the writers put a carried message in the target tool's own format, as
 * that tool would have written it (a Claude Code entry, a Gemini record, a Codex response item), so that the tool
 * resumes it as its own. The recording hook (src/hook/transcript.ts) reads the note and leaves the carried messages out
 * of the session's episode: they are recorded by the episode of the session they came from, and a handed-off
 * conversation would otherwise write one episode per tool, each repeating the decisions carried along.
 *
 * The note is written under the tree lock by the sync that carries; the hook reads it without the lock (it is replaced
 * atomically). The hook loads this module: it imports only the message key, a hash and the store's `.nexus` files.
 */
import {z} from 'zod'

import {messageKey} from '../merge/transcript.js'
import type {Provider, UniversalMessage} from '../schemas/index.js'
import {hashText} from '../store/hash.js'
import {readNexusFile, writeNexusFile} from '../store/nexus-files.js'

export const CARRIED_DIR = 'session-carried'
/** Hex digits of a message's hash kept in the note: 128 bits, a long conversation's note stays small. */
export const CARRIED_HASH_CHARS = 32

/** How many messages of each key (by its hash) were carried into a session. */
export type CarriedCounts = Map<string, number>

const carriedNoteSchema = z.object({
  version: z.literal(1),
  messages: z.record(z.string(), z.number().int().positive()),
})

/** The note of one target session, relative to `.nexus/`. */
export function carriedNoteRel(provider: Provider, sessionId: string): string {
  return `${CARRIED_DIR}/${provider}-${encodeURIComponent(sessionId)}.json`
}

/** The hash a carried message is noted by: that of its cross-tool key. */
export function carriedHash(message: UniversalMessage): string {
  return hashText(messageKey(message)).slice(0, CARRIED_HASH_CHARS)
}

function countsOf(messages: readonly UniversalMessage[]): CarriedCounts {
  const counts: CarriedCounts = new Map()
  for (const message of messages) {
    const hash = carriedHash(message)
    counts.set(hash, (counts.get(hash) ?? 0) + 1)
  }
  return counts
}

/** The messages `after` holds that `before` did not (as many of each key as it holds more): what a sync added. */
export function addedMessages(before: readonly UniversalMessage[], after: readonly UniversalMessage[]): CarriedCounts {
  const had = countsOf(before)
  const added: CarriedCounts = new Map()
  for (const [hash, count] of countsOf(after)) if (count > (had.get(hash) ?? 0)) added.set(hash, count - (had.get(hash) ?? 0))
  return added
}

/** What was noted as carried into the session; empty when nothing was (or the note cannot be read). */
export async function readCarried(root: string, provider: Provider, sessionId: string): Promise<CarriedCounts> {
  try {
    const text = await readNexusFile(root, carriedNoteRel(provider, sessionId))
    if (text === null) return new Map()
    return new Map(Object.entries(carriedNoteSchema.parse(JSON.parse(text)).messages))
  } catch {
    return new Map()
  }
}

/** Adds `added` to the session's note (under the tree lock, by the sync that carried them). */
export async function noteCarried(root: string, provider: Provider, sessionId: string, added: CarriedCounts): Promise<void> {
  if (added.size === 0) return
  const counts = await readCarried(root, provider, sessionId)
  for (const [hash, count] of added) counts.set(hash, (counts.get(hash) ?? 0) + count)
  const note: z.input<typeof carriedNoteSchema> = {version: 1, messages: Object.fromEntries(counts)}
  await writeNexusFile(root, carriedNoteRel(provider, sessionId), `${JSON.stringify(note)}\n`)
}

/**
 * The session's own messages: `messages` without those carried into it. Of each key noted n times, the first n
 * messages are the carried ones (a sync adds them before the session goes on; its own later "continue" stays).
 */
export function withoutCarried(messages: readonly UniversalMessage[], carried: CarriedCounts): UniversalMessage[] {
  if (carried.size === 0) return [...messages]
  const left = new Map(carried)
  return messages.filter((message) => {
    const hash = carriedHash(message)
    const n = left.get(hash) ?? 0
    if (n === 0) return true
    left.set(hash, n - 1)
    return false
  })
}
