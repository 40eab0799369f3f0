/**
 * `.nexus/conflicts/<key>.json`: what each conflict that left a backup was between — its base, the other side's
 * text, and what the sync wrote into the file — so that `jarvis resolve --keep local` can put back your side of
 * the overlap only, and keep the other side's clean changes (merge/keep-local.ts). The key is made from the file
 * and the backup's text, not the backup's name: a backup renamed to a number by a newer one keeps its record. A
 * record missing or damaged (an older jarvis wrote the backup, `.nexus/` was lost) only means resolve must put
 * the backup back whole, which it then says; it is removed with its backup.
 */
import createDebug from 'debug'

import {type ConflictRecord, conflictRecordSchema} from '../schemas/index.js'
import {hashText} from './hash.js'
import {deleteNexusFile, readNexusFile, writeNexusFile} from './nexus-files.js'
import {formatJson} from './sync-state.js'

const debug = createDebug('jarvis:store')

export const CONFLICTS_DIR = '.nexus/conflicts'

export interface ConflictSides {
  base: string | null
  remote: string
  merged: string
}

function recordPath(file: string, backupText: string): string {
  return `conflicts/${hashText(`${file}\n${backupText}`)}.json`
}

/** Records the conflict whose losing side `backupText` is about to be saved as a backup of `file`; written before the backup. */
export async function recordConflict(root: string, file: string, backupText: string, sides: ConflictSides, at: string): Promise<void> {
  const record: ConflictRecord = {version: 1, file, at, base: sides.base, remote: sides.remote, merged: sides.merged}
  await writeNexusFile(root, recordPath(file, backupText), formatJson(record))
}

/** The record of the conflict that left `backupText` as a backup of `file`, or null (none, or not readable). */
export async function readConflictRecord(root: string, file: string, backupText: string): Promise<ConflictRecord | null> {
  const text = await readNexusFile(root, recordPath(file, backupText))
  if (text === null) return null
  const parsed = conflictRecordSchema.safeParse(safeJson(text))
  if (parsed.success && parsed.data.file === file) return parsed.data
  debug('conflict record of %s unreadable: the backup goes back whole', file)
  return null
}

/** Forgets the record of a backup a person decided. */
export async function forgetConflictRecord(root: string, file: string, backupText: string): Promise<void> {
  await deleteNexusFile(root, recordPath(file, backupText))
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}
