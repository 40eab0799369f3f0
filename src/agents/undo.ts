/**
 * What uninstall needs to give a file back byte for byte: the hash of the text install left, and the one
 * range it changed with what was there before. While the file still has that hash, uninstall puts the range
 * back; once someone else has changed the file, uninstall takes out only what jarvis wrote, by structure.
 */
import {createHash} from 'node:crypto'

import {z} from 'zod'

export const undoRecordSchema = z.object({
  /** sha256 of the file as install left it. */
  installed: z.string(),
  /** The file did not exist before install. */
  created: z.boolean(),
  /** In the installed text: replace [offset, offset + length) with `text` to get the file as it was. */
  offset: z.number().int().nonnegative(),
  length: z.number().int().nonnegative(),
  text: z.string(),
})
export type UndoRecord = z.output<typeof undoRecordSchema>

export const undoManifestSchema = z.object({
  version: z.literal(1),
  /** Absolute file path → how to undo jarvis's change there. */
  files: z.record(z.string(), undoRecordSchema),
  /** Directories install created, removed again when uninstall leaves them empty. */
  dirs: z.array(z.string()),
})
export type UndoManifest = z.output<typeof undoManifestSchema>

export const EMPTY_MANIFEST: UndoManifest = {version: 1, files: {}, dirs: []}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

/** The undo of `before` → `after`: the common prefix and suffix stay, the middle goes back. */
export function undoRecord(before: string | null, after: string): UndoRecord {
  const old = before ?? ''
  let prefix = 0
  const max = Math.min(old.length, after.length)
  while (prefix < max && old[prefix] === after[prefix]) prefix++
  let suffix = 0
  while (suffix < max - prefix && old[old.length - 1 - suffix] === after[after.length - 1 - suffix]) suffix++
  return {installed: sha256(after), created: before === null, offset: prefix, length: after.length - prefix - suffix, text: old.slice(prefix, old.length - suffix)}
}

/** The file as it was before install, when it is still exactly as install left it; undefined otherwise. */
export function undo(record: UndoRecord, current: string): string | null | undefined {
  if (sha256(current) !== record.installed) return undefined
  if (record.created) return null
  return current.slice(0, record.offset) + record.text + current.slice(record.offset + record.length)
}
