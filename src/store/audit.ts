/**
 * `.nexus/audit.jsonl`: one JSON line per sync, conflict, backup, resolution, partition, reconnect (seed 003 §8).
 * Append-only, fsync per entry. Never put file contents or credentials in an entry: paths, hashes and counts.
 */
import {join} from 'node:path'

import {parseWith} from '../schemas/parse.js'
import {type AuditEntry, auditEntrySchema} from '../schemas/nexus.js'
import {appendLineDurable} from './atomic.js'
import {readJsonLines} from './jsonl.js'
import {nexusDir} from './root.js'
import {isWrittenDateTime} from '../schemas/written-date.js'

export const AUDIT_FILE = '.nexus/audit.jsonl'

export function auditPath(root: string): string {
  return join(nexusDir(root), 'audit.jsonl')
}

export type AuditInput = Omit<AuditEntry, 'at'> & {at?: string; type: string}

/** Appends one entry; `at` defaults to now (ISO). Returns the entry as written. */
export async function appendAudit(root: string, entry: AuditInput): Promise<AuditEntry> {
  const {at, ...rest} = entry
  const full = {at: at ?? new Date().toISOString(), ...rest}
  // Our own lines (a date as we write it, a type) are what the schema reads unchanged: no zod for them, which a
  // no-op sync would load for its audit line alone.
  const checked = isWrittenDateTime(full.at) && typeof full.type === 'string' && full.type !== '' ? (full as AuditEntry) : parseWith(auditEntrySchema, full, AUDIT_FILE)
  await appendLineDurable(auditPath(root), JSON.stringify(checked))
  return checked
}

/** Every entry in order (a torn last line is ignored). */
export async function readAudit(root: string): Promise<AuditEntry[]> {
  return readJsonLines(auditPath(root), AUDIT_FILE, auditEntrySchema)
}
