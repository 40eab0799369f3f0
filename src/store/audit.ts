/**
 * `.nexus/audit.jsonl`: one JSON line per sync, conflict, backup, resolution, partition, reconnect (seed 003 §8).
 * Append-only, fsync per entry. Never put file contents or credentials in an entry: paths, hashes and counts.
 */
import {join} from 'node:path'

import {parseWith} from '../schemas/parse.js'
import {type AuditEntry, auditEntrySchema} from '../schemas/nexus.js'
import {appendLineDurable} from './atomic.js'
import {readJsonLinesSkipping} from './jsonl.js'
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

/**
 * Every entry in order (a torn last line is ignored). The log is a record for people that no command needs in order
 * to go on, and every sync appends to it whatever it holds: a line that is not an entry (a hand edit, a stray
 * write) is skipped, and `warn` told which one and what to do, rather than stopping its reader.
 */
export async function readAudit(root: string, warn?: (message: string) => void): Promise<AuditEntry[]> {
  const {entries, badLines} = await readJsonLinesSkipping(auditPath(root), AUDIT_FILE, auditEntrySchema)
  for (const {line, problems} of badLines) {
    warn?.(`${AUDIT_FILE}: line ${line} skipped, it is not an audit entry (${problems.join('; ')}): fix or remove that line to stop this warning`)
  }
  return entries
}
