/** The audit log in SQLite (schema migration 6): one append-only table, read newest first by agent or kind. */
import type Database from 'better-sqlite3'

import {AUDIT_COLUMNS, type AuditRow, auditValues, auditWhere, toAuditEntry} from './audit-rows.js'
import type {AuditEntry, AuditQuery, NewAuditEntry} from './types.js'

export const AUDIT_MIGRATION_SQL = `
  CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    agent TEXT NOT NULL,
    kind TEXT NOT NULL,
    paths TEXT NOT NULL,
    event_ids TEXT NOT NULL,
    count INTEGER NOT NULL,
    detail TEXT NOT NULL
  );
  CREATE INDEX audit_log_by_agent ON audit_log (agent, seq);
  CREATE INDEX audit_log_by_kind ON audit_log (kind, seq);
`

export class SqliteAuditLog {
  private readonly insert: Database.Statement<[string, string, string, string, string, number, string], void>

  constructor(private readonly db: Database.Database) {
    this.insert = db.prepare('INSERT INTO audit_log (at, agent, kind, paths, event_ids, count, detail) VALUES (?, ?, ?, ?, ?, ?, ?)')
  }

  /** Appends inside the caller's transaction, if any (a commit records its entry with its writes). */
  appendSync(entries: readonly NewAuditEntry[]): AuditEntry[] {
    return entries.map((entry) => {
      const values = auditValues(entry)
      const seq = Number(this.insert.run(...values).lastInsertRowid)
      return toAuditEntry({seq, at: values[0], agent: values[1], kind: values[2], paths: values[3], event_ids: values[4], count: values[5], detail: values[6]} satisfies AuditRow)
    })
  }

  append(entries: readonly NewAuditEntry[]): AuditEntry[] {
    return this.db.transaction(() => this.appendSync(entries)).immediate()
  }

  query(query: AuditQuery): AuditEntry[] {
    const {where, values} = auditWhere(query, () => '?')
    return this.db
      .prepare<(string | number)[], AuditRow>(`SELECT ${AUDIT_COLUMNS} FROM audit_log ${where} ORDER BY seq DESC LIMIT ?`)
      .all(...values, query.limit)
      .map(toAuditEntry)
  }
}
