/**
 * The audit log's rows as both backends store them (lists as JSON text, so that a dump moves between them
 * unchanged), and the entry a memory commit records in its own transaction (types.ts CommitRequest.audit).
 */
import type {AuditEntry, AuditKind, AuditQuery, CommitOutcome, CommitRequest, NewAuditEntry} from './types.js'

/** Paths or event ids kept in one entry; `count` still says how many there were. */
export const MAX_AUDIT_NAMES = 200

export const AUDIT_COLUMNS = 'seq, at, agent, kind, paths, event_ids, count, detail'

export interface AuditRow {
  seq: number
  at: string
  agent: string
  kind: AuditKind
  paths: string
  event_ids: string
  count: number
  detail: string
}

/** The column values of an entry, in the order of AUDIT_COLUMNS without `seq`. */
export function auditValues(entry: NewAuditEntry): [string, string, AuditKind, string, string, number, string] {
  return [entry.at, entry.agent, entry.kind, JSON.stringify(entry.paths.slice(0, MAX_AUDIT_NAMES)), JSON.stringify(entry.event_ids.slice(0, MAX_AUDIT_NAMES)), entry.count, entry.detail]
}

export function toAuditEntry(row: AuditRow): AuditEntry {
  return {seq: row.seq, at: row.at, agent: row.agent, kind: row.kind, paths: JSON.parse(row.paths) as string[], event_ids: JSON.parse(row.event_ids) as string[], count: row.count, detail: row.detail}
}

/** The WHERE clause and its values for `query` (placeholders made by `param`, `?` or `$n`). */
export function auditWhere(query: AuditQuery, param: (index: number) => string): {where: string; values: (string | number)[]} {
  const conditions: string[] = []
  const values: (string | number)[] = []
  const add = (sql: string, value: string | number) => {
    values.push(value)
    conditions.push(sql.replace('?', param(values.length)))
  }
  if (query.agent !== undefined) add('agent = ?', query.agent)
  if (query.kind !== undefined) add('kind = ?', query.kind)
  if (query.before !== undefined) add('seq < ?', query.before)
  if (query.since !== undefined) add('at >= ?', query.since)
  return {where: conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`, values}
}

/**
 * What a commit records: a `conflict` naming the stale paths; or a `push` naming what it wrote and deleted, after a
 * `conflict` naming the written paths the client merged with a newer server version; or nothing (no
 * `request.audit`, a duplicate, or a push that changed nothing: a sync with nothing to send is noise).
 */
export function commitAuditEntries(request: CommitRequest, outcome: CommitOutcome, author: string, now: string): NewAuditEntry[] {
  const note = request.audit
  if (note === undefined) return []
  if (!outcome.ok) {
    return [{at: now, agent: author, kind: 'conflict', paths: outcome.stale, event_ids: [], count: outcome.stale.length, detail: `stale base: the server has newer revisions of ${outcome.stale.length} file(s); nothing was written`}]
  }
  const changed = [...outcome.written, ...outcome.deleted]
  if (outcome.duplicate || changed.length === 0) return []
  const entries: NewAuditEntry[] = []
  const written = new Set(outcome.written.map((meta) => meta.path))
  const merged = [...new Set(note.merged ?? [])].filter((path) => written.has(path)).sort()
  if (merged.length > 0) {
    entries.push({at: now, agent: author, kind: 'conflict', paths: merged, event_ids: [], count: merged.length, detail: `changed on both sides: merged three-way by the client, then pushed`})
  }
  const files = (n: number) => `${n} file${n === 1 ? '' : 's'}`
  const deleted = outcome.deleted.length === 0 ? '' : `, ${files(outcome.deleted.length)} deleted`
  const detail = note.detail ?? `${files(outcome.written.length)} written${deleted} (server change ${outcome.seq})`
  entries.push({at: now, agent: author, kind: note.kind, paths: changed.map((meta) => meta.path).sort(), event_ids: [], count: changed.length, detail})
  return entries
}
