/**
 * The audit log of `jarvis serve` (docs/audit.md): what the other services record (a push, a conflict, a refused or
 * masked secret, a forgotten event, a project switch, a key), broadcast live as AUDIT_APPENDED, and
 * `GET /api/audit` for the dashboard. A token reads its own agent's entries; an admin key reads everyone's.
 */
import {describeFindings, type SensitiveFinding} from '../events/index.js'
import type {Broadcaster} from './broadcast.js'
import {HttpError} from './http-error.js'
import {badRequest, integerParam, single, timeParam} from './query-params.js'
import {AUDIT_KINDS, type AuditEntry, type AuditKind, type AuditStorage, type KeyRole, type NewAuditEntry} from './storage/types.js'

export const DEFAULT_AUDIT_LIMIT = 50
export const MAX_AUDIT_LIMIT = 500
/** The largest `before` the query takes (the parameter check's nine digits): far more entries than a server keeps. */
const MAX_AUDIT_SEQ = 999_999_999

export interface AuditQueryParams {
  kind?: unknown
  agent?: unknown
  before?: unknown
  since?: unknown
  limit?: unknown
}

export interface AuditAnswer {
  entries: AuditEntry[]
  /** Pass as `before` for the next (older) page; null when this page is the last. */
  next_before: number | null
}

/** The detail of a refused write: which rules matched in which fields, never the text itself. */
export function refusedDetail(what: string, findings: readonly SensitiveFinding[]): string {
  // Only an event's top-level field: a nested one is named by its key (`source.<key>`), which the writer chose and no
  // scan read. A memory file's is its path, which the push or edit names anyway.
  const shown = (field: string) => (field.startsWith('.memory/') ? field : field.split(/[.[]/)[0])
  return `${what} refused: it held ${describeFindings(findings.map((f) => ({...f, field: shown(f.field)})))}`
}

export class AuditService {
  constructor(
    private readonly options: {
      storage: AuditStorage
      broadcaster?: Broadcaster
      /** Told when an entry could not be written: the change it records stands, and its answer is not turned into an error. */
      onError: (error: unknown, entry: NewAuditEntry) => void
    },
  ) {}

  /** Tells the clients that may read them about entries already stored (a commit records its own). */
  announce(entries: readonly AuditEntry[] = []): void {
    for (const entry of entries) this.options.broadcaster?.broadcast({type: 'AUDIT_APPENDED', seq: entry.seq, kind: entry.kind, agent: entry.agent, at: entry.at})
  }

  /** Stores and announces an entry; never throws (see onError). */
  async record(entry: NewAuditEntry): Promise<void> {
    try {
      this.announce(await this.options.storage.appendAudit([entry]))
    } catch (error) {
      this.options.onError(error, entry)
    }
  }

  /** GET /api/audit: newest first; `agent` other than the token's own needs an admin key. */
  async list(query: AuditQueryParams, agentId: string, role: KeyRole): Promise<AuditAnswer> {
    const kind = single(query.kind, 'querystring/kind') || undefined
    if (kind !== undefined && !(AUDIT_KINDS as readonly string[]).includes(kind)) throw badRequest('querystring/kind', `must be one of ${AUDIT_KINDS.join(', ')}`)
    let agent = single(query.agent, 'querystring/agent') || undefined
    if (role !== 'admin') {
      if (agent !== undefined && agent !== agentId) {
        throw new HttpError(403, 'forbidden', `querystring/agent: ${agent}'s audit entries are readable with an admin key only; ${agentId} reads its own`, {field: 'querystring/agent'})
      }
      agent = agentId
    }
    const since = timeParam(query.since, 'querystring/since')
    const limit = integerParam(query.limit, 'querystring/limit', 1, MAX_AUDIT_LIMIT, DEFAULT_AUDIT_LIMIT)
    const before = query.before === undefined ? undefined : integerParam(query.before, 'querystring/before', 1, MAX_AUDIT_SEQ, 1)
    // One more than asked tells whether an older page exists.
    const rows = await this.options.storage.queryAudit({agent, kind: kind as AuditKind | undefined, before, since, limit: limit + 1})
    const entries = rows.slice(0, limit)
    return {entries, next_before: rows.length > limit ? (entries.at(-1)?.seq ?? null) : null}
  }
}
