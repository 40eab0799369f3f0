/**
 * What a recording hook could not write because another jarvis held the tree past the hook's wait (`sync.lockTimeout`,
 * at most 1 s at session end): the session's digest, kept in `.nexus/pending-episodes/` until a hook or a background
 * sync that holds the lock writes it into the session's episode (episode.ts, writePendingEpisodes). Without this, what
 * a session decided in its last turn was lost whenever a sync happened to hold the tree as it ended.
 *
 * Each record is a file of its own, written once and atomically without the lock (a hook never waits for it), and
 * removed only by whoever wrote it into the episode: no two processes ever update one record. Names start with the
 * time the hook ran, so records are written into episodes in the order the hooks ran.
 */
import {randomUUID} from 'node:crypto'

import {parseJsonFile, type PendingEpisode, pendingEpisodeSchema} from '../schemas/index.js'
import {deleteNexusFile, readNexusFile, writeNexusFile} from '../store/nexus-files.js'
import {agentIdOf} from './events.js'
import {PENDING_DIR, pendingNames} from './pending-names.js'
import {sessionSlug} from './shown.js'

/** Keeps one record; returns its path relative to `.nexus/`. */
export async function keepPendingEpisode(root: string, record: PendingEpisode): Promise<string> {
  const time = String(Date.parse(record.at)).padStart(15, '0')
  const rel = `${PENDING_DIR}/${time}-${sessionSlug(agentIdOf(record.agent), record.sessionId)}-${randomUUID().slice(0, 8)}.json`
  await writeNexusFile(root, rel, `${JSON.stringify(record)}\n`)
  return rel
}

/** A record waiting: its path relative to `.nexus/`, and the record, or why it cannot be read. */
export type PendingFile = {rel: string; record: PendingEpisode} | {rel: string; problem: string}

/** The records waiting, oldest first. */
export async function readPendingEpisodes(root: string): Promise<PendingFile[]> {
  const files: PendingFile[] = []
  for (const name of await pendingNames(root)) {
    const rel = `${PENDING_DIR}/${name}`
    const text = await readNexusFile(root, rel)
    if (text === null) continue // written into its episode meanwhile
    try {
      files.push({rel, record: parseJsonFile(pendingEpisodeSchema, text, `.nexus/${rel}`)})
    } catch (error) {
      files.push({rel, problem: error instanceof Error ? error.message : String(error)})
    }
  }
  return files
}

/** Removes a record once it is in its episode (or can never be). */
export async function forgetPendingEpisode(root: string, rel: string): Promise<void> {
  await deleteNexusFile(root, rel)
}
