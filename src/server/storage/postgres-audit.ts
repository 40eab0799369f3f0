/** The audit log in PostgreSQL (schema migration 6): the same table and columns as SQLite's (sqlite-audit.ts). */
import type pg from 'pg'

import {AUDIT_COLUMNS, type AuditRow, auditValues, auditWhere, toAuditEntry} from './audit-rows.js'
import type {AuditEntry, AuditQuery, NewAuditEntry} from './types.js'

export const PG_AUDIT_MIGRATION_SQL = `
  CREATE TABLE audit_log (
    seq bigserial PRIMARY KEY,
    at text COLLATE "C" NOT NULL,
    agent text COLLATE "C" NOT NULL,
    kind text COLLATE "C" NOT NULL,
    paths text NOT NULL,
    event_ids text NOT NULL,
    count integer NOT NULL,
    detail text NOT NULL
  );
  CREATE INDEX audit_log_by_agent ON audit_log (agent, seq);
  CREATE INDEX audit_log_by_kind ON audit_log (kind, seq);
`

/** Appends with `client` (inside the caller's transaction: a commit records its entry with its writes). */
export async function insertAudit(client: pg.ClientBase | pg.Pool, entries: readonly NewAuditEntry[]): Promise<AuditEntry[]> {
  if (entries.length === 0) return []
  const columns = entries.map(auditValues)
  const rows = await client.query<AuditRow>(
    `INSERT INTO audit_log (at, agent, kind, paths, event_ids, count, detail)
     SELECT at, agent, kind, paths, event_ids, count, detail FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::integer[], $7::text[]) WITH ORDINALITY AS t(at, agent, kind, paths, event_ids, count, detail, n)
     ORDER BY n RETURNING ${AUDIT_COLUMNS}`,
    [0, 1, 2, 3, 4, 5, 6].map((index) => columns.map((values) => values[index])),
  )
  return rows.rows.map(toAuditEntry).sort((a, b) => a.seq - b.seq)
}

export async function selectAudit(pool: pg.Pool, query: AuditQuery): Promise<AuditEntry[]> {
  const {where, values} = auditWhere(query, (index) => `$${index}`)
  const rows = await pool.query<AuditRow>(`SELECT ${AUDIT_COLUMNS} FROM audit_log ${where} ORDER BY seq DESC LIMIT $${values.length + 1}`, [...values, query.limit])
  return rows.rows.map(toAuditEntry)
}
