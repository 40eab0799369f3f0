/**
 * An event-log row as both backends store it (the same columns, flags as 0/1, `source` as JSON text, so a dump moves
 * between them unchanged), and its EventRecord.
 */
import type {EventRecord} from './types.js'

export interface EventRow {
  seq: number
  event_id: string
  agent_id: string
  run_id: string
  scope: string
  kind: string
  dedupe_key: string
  confidence: 'high' | 'med' | 'low'
  content_md: string
  source: string
  supersedes: string | null
  ttl_days: number
  created_at: string
  content_hash: string
  identity: string
  idempotency_key: string | null
  deprecated: number
  masked: number
  scanned: number
  ttl_candidate: number
}

export const COLUMNS =
  'seq, event_id, agent_id, run_id, scope, kind, dedupe_key, confidence, content_md, source, supersedes, ttl_days, created_at, content_hash, identity, idempotency_key, deprecated, masked, scanned, ttl_candidate'
export const E_COLUMNS = COLUMNS.split(', ')
  .map((column) => `e.${column}`)
  .join(', ')

function parseSource(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

export function toRecord(row: EventRow): EventRecord {
  return {
    seq: row.seq,
    event_id: row.event_id,
    agent_id: row.agent_id,
    run_id: row.run_id,
    scope: row.scope,
    kind: row.kind,
    dedupe_key: row.dedupe_key,
    confidence: row.confidence,
    content_md: row.content_md,
    source: parseSource(row.source),
    supersedes: row.supersedes,
    ttl_days: row.ttl_days,
    created_at: row.created_at,
    content_hash: row.content_hash,
    deprecated: row.deprecated === 1,
    masked: row.masked === 1,
    scanned: row.scanned === 1,
    ttl_candidate: row.ttl_candidate === 1,
  }
}

/** The smallest string greater than every string that starts with `prefix` (for an index range scan). */
export function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)
}

