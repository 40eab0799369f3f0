/**
 * The event log in the embedded SQLite database (migration 2): `memory_events`, `memory_pins` and the FTS5
 * index `memory_events_fts`. Used by SqliteStorage, which owns the connection and the migrations.
 *
 * - `memory_events.seq` (the rowid) is the insertion order, so "newest" never depends on clocks.
 * - `memory_pins` holds, for every scope and dedupe_key, the newest live event (seed 001 §14). It is kept
 *   right in the same transaction as every append, supersede, cleanup and import, so a snapshot reads its
 *   pins by index instead of scanning the log.
 * - `memory_events_fts` is a contentless FTS5 table (rowid = seq) over the CJK-bigrammed content and key
 *   (see fts.ts); bm25 ranks search results.
 * - Group commit: appends that arrive in the same turn of the event loop are written by ONE IMMEDIATE
 *   transaction, each in its own savepoint (so each is all or nothing, and an error in one leaves the others
 *   alone). That transaction commits with synchronous=NORMAL, and none of its appends is answered before WalSync
 *   has flushed the WAL to disk on the thread pool (wal-sync.ts): the durability of synchronous=FULL, with
 *   flushes shared by every commit made while one is running, and an event loop that never waits for the disk.
 */
import type Database from 'better-sqlite3'
import createDebug from 'debug'

import {eventIdFactory} from './event-id.js'
import type {WalSync} from './wal-sync.js'
import {ftsQuery, ftsText} from './fts.js'
import {COLUMNS, E_COLUMNS, type EventRow, prefixEnd, toRecord} from './event-rows.js'
import {scopeMatches} from './types.js'
import type {
  AppendEventOutcome,
  AppendEventRequest,
  CleanupCandidate,
  CleanupQuery,
  ConsolidationApplied,
  ConsolidationChanges,
  EarlierAppend,
  EventQuery,
  EventQueryResult,
  EventRecord,
  ImportedEvent,
  JanitorInput,
  NewEvent,
  ScopeFilter,
  SnapshotRows,
} from './types.js'

export const DELETED_EVENTS_MIGRATION_SQL = `
  CREATE TABLE deleted_events (
    identity TEXT PRIMARY KEY,
    idempotency_key TEXT UNIQUE,
    event_id TEXT NOT NULL,
    deleted_at TEXT NOT NULL
  ) WITHOUT ROWID;
`

export const EVENTS_MIGRATION_SQL = `
  CREATE TABLE memory_events (
    seq INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    kind TEXT NOT NULL,
    dedupe_key TEXT NOT NULL,
    confidence TEXT NOT NULL CHECK (confidence IN ('high', 'med', 'low')),
    content_md TEXT NOT NULL,
    source TEXT NOT NULL,
    supersedes TEXT,
    ttl_days INTEGER NOT NULL DEFAULT 0 CHECK (ttl_days >= 0),
    created_at TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    identity TEXT NOT NULL UNIQUE,
    idempotency_key TEXT UNIQUE,
    deprecated INTEGER NOT NULL DEFAULT 0 CHECK (deprecated IN (0, 1)),
    masked INTEGER NOT NULL DEFAULT 0 CHECK (masked IN (0, 1)),
    scanned INTEGER NOT NULL DEFAULT 0 CHECK (scanned IN (0, 1)),
    ttl_candidate INTEGER NOT NULL DEFAULT 0 CHECK (ttl_candidate IN (0, 1))
  );
  CREATE INDEX memory_events_by_scope ON memory_events (scope, seq);
  CREATE INDEX memory_events_by_key ON memory_events (scope, dedupe_key, deprecated, seq);
  CREATE INDEX memory_events_by_time ON memory_events (created_at);
  CREATE INDEX memory_events_by_run ON memory_events (agent_id, run_id);
  CREATE INDEX memory_events_unscanned ON memory_events (seq) WHERE scanned = 0;
  CREATE INDEX memory_events_with_ttl ON memory_events (seq) WHERE ttl_days > 0;
  CREATE INDEX memory_events_resolutions ON memory_events (scope, dedupe_key) WHERE kind = 'conflict_resolution';
  CREATE TABLE memory_pins (
    scope TEXT NOT NULL,
    dedupe_key TEXT NOT NULL,
    event_seq INTEGER NOT NULL,
    PRIMARY KEY (scope, dedupe_key)
  ) WITHOUT ROWID;
  CREATE VIRTUAL TABLE memory_events_fts USING fts5(body, key, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2');
`

/** bm25 weights of the FTS columns: a word in the dedupe_key counts three times one in the content. */
const BM25 = 'bm25(memory_events_fts, 1.0, 3.0)'

/**
 * `values` repeated at the end up to the next power of two. A list of values in SQL matches the same rows with
 * its last value repeated, and the statements of the filter cache (every one kept for the life of the process:
 * sqlite-open.ts) then number a few per filter shape instead of one per list length.
 */
function padded<T>(values: readonly T[]): T[] {
  if (values.length === 0) return []
  const size = 2 ** Math.ceil(Math.log2(values.length))
  return [...values, ...Array.from({length: size - values.length}, () => values.at(-1) as T)]
}

/** `(scope IN (...) OR scope range ...)` for a ScopeFilter; `1` when a prefix is empty (every scope). */
/** The keys these conflict_resolution events flag (`source.conflict_key`), each once. */
function flaggedKeys(records: readonly EventRecord[]): Set<string> {
  const keys = new Set<string>()
  for (const record of records) {
    const conflictKey = record.kind === 'conflict_resolution' ? record.source.conflict_key : undefined
    if (typeof conflictKey === 'string') keys.add(conflictKey)
  }
  return keys
}

function scopeSql(filter: ScopeFilter, params: unknown[], column = 'scope'): string {
  if (filter.prefixes.includes('')) return '1'
  const parts: string[] = []
  const exact = padded(filter.exact)
  if (exact.length > 0) {
    parts.push(`${column} IN (${exact.map(() => '?').join(', ')})`)
    params.push(...exact)
  }
  for (const prefix of padded(filter.prefixes)) {
    parts.push(`(${column} >= ? AND ${column} < ?)`)
    params.push(prefix, prefixEnd(prefix))
  }
  return parts.length === 0 ? '0' : `(${parts.join(' OR ')})`
}

/** The candidate rule of cleanup, as SQL with its parameters. */
function cleanupSql(query: CleanupQuery, params: unknown[]): string {
  const where: string[] = []
  where.push('created_at < ?')
  params.push(query.createdBefore)
  where.push(scopeSql(query.visible, params))
  // The rule of events/janitor.ts cleanupCandidates and isExpired: strictly older, strictly past the TTL.
  where.push('(deprecated = 1 OR ttl_candidate = 1 OR (ttl_days > 0 AND julianday(created_at) + ttl_days < julianday(?)))')
  params.push(query.now)
  if (query.scope !== undefined) where.push(scopeSql(query.scope, params))
  return where.join(' AND ')
}

const debug = createDebug('jarvis:server:storage')

/** Most appends one group commit writes; the rest wait for the next turn. */
const MAX_BATCH = 256

interface PendingAppend {
  request: AppendEventRequest
  resolve: (outcome: AppendEventOutcome) => void
  reject: (error: unknown) => void
}

export class SqliteEventLog {
  private readonly db: Database.Database
  private readonly nextId = eventIdFactory()
  private readonly cache = new Map<string, Database.Statement>()
  private readonly s
  private readonly groupCommit: boolean
  private readonly walSync: WalSync | null
  private pending: PendingAppend[] = []
  /** The latest created_at given to an append: the next is never earlier (see appendSteps). */
  private lastCreatedAt: string | undefined
  private flushScheduled = false
  /** One append; a savepoint when called inside a transaction (group commit, consolidation). */
  private readonly appendOne: Database.Transaction<(request: AppendEventRequest) => AppendEventOutcome>
  /** Made once, as appendOne: better-sqlite3's `transaction()` builds four wrapper functions at each call. */
  private readonly snapshotRead: (scopes: readonly string[], limitRecent: number, maxPinsPerScope: number) => SnapshotRows

  /**
   * `groupCommit` (default true): batch appends as described above. `walSync`: flush the WAL after each batch and
   * commit with synchronous=NORMAL; without it, batches commit with the connection's synchronous=FULL.
   */
  constructor(db: Database.Database, options: {groupCommit?: boolean; walSync?: WalSync | null} = {}) {
    this.db = db
    this.groupCommit = options.groupCommit ?? true
    this.walSync = options.walSync ?? null
    this.appendOne = db.transaction((request: AppendEventRequest) => this.appendSteps(request))
    this.snapshotRead = db.transaction((scopes: readonly string[], limitRecent: number, maxPinsPerScope: number) => this.snapshotSteps(scopes, limitRecent, maxPinsPerScope)).deferred
    this.s = {
      insert: db.prepare(
        `INSERT INTO memory_events (event_id, agent_id, run_id, scope, kind, dedupe_key, confidence, content_md, source, supersedes,
           ttl_days, created_at, content_hash, identity, idempotency_key, deprecated, masked, scanned, ttl_candidate)
         VALUES (@event_id, @agent_id, @run_id, @scope, @kind, @dedupe_key, @confidence, @content_md, @source, @supersedes,
           @ttl_days, @created_at, @content_hash, @identity, @idempotency_key, @deprecated, 0, @scanned, 0)`,
      ),
      bySeq: db.prepare<[number], EventRow>(`SELECT ${COLUMNS} FROM memory_events WHERE seq = ?`),
      byId: db.prepare<[string], EventRow>(`SELECT ${COLUMNS} FROM memory_events WHERE event_id = ?`),
      byIdentity: db.prepare<[string], EventRow>(`SELECT ${COLUMNS} FROM memory_events WHERE identity = ?`),
      byIdempotencyKey: db.prepare<[string], EventRow>(`SELECT ${COLUMNS} FROM memory_events WHERE idempotency_key = ?`),
      pin: db.prepare<[string, string], {event_seq: number}>('SELECT event_seq FROM memory_pins WHERE scope = ? AND dedupe_key = ?'),
      setPin: db.prepare<[string, string, number]>(
        'INSERT INTO memory_pins (scope, dedupe_key, event_seq) VALUES (?, ?, ?) ON CONFLICT (scope, dedupe_key) DO UPDATE SET event_seq = excluded.event_seq',
      ),
      dropPin: db.prepare<[string, string]>('DELETE FROM memory_pins WHERE scope = ? AND dedupe_key = ?'),
      newestLive: db.prepare<[string, string], {seq: number}>(
        'SELECT seq FROM memory_events WHERE scope = ? AND dedupe_key = ? AND deprecated = 0 ORDER BY seq DESC LIMIT 1',
      ),
      deprecate: db.prepare<[number]>('UPDATE memory_events SET deprecated = 1 WHERE seq = ? AND deprecated = 0'),
      runCount: db.prepare<[string, string], {n: number}>('SELECT COUNT(*) AS n FROM memory_events WHERE agent_id = ? AND run_id = ?'),
      ftsInsert: db.prepare<[number, string, string]>('INSERT INTO memory_events_fts (rowid, body, key) VALUES (?, ?, ?)'),
      ftsDelete: db.prepare<[number]>('DELETE FROM memory_events_fts WHERE rowid = ?'),
      pinnedOf: db.prepare<[string, number], EventRow>(
        `SELECT ${E_COLUMNS} FROM memory_pins p JOIN memory_events e ON e.seq = p.event_seq WHERE p.scope = ? ORDER BY p.dedupe_key LIMIT ?`,
      ),
      newestPerAgent: db.prepare<[string, string], EventRow>(
        `SELECT ${COLUMNS} FROM memory_events WHERE seq IN (
           SELECT MAX(seq) FROM memory_events WHERE scope = ? AND dedupe_key = ? AND deprecated = 0 GROUP BY agent_id)`,
      ),
      maxCreatedAt: db.prepare<[], {created_at: string | null}>('SELECT MAX(created_at) AS created_at FROM memory_events'),
      syncNormal: db.prepare('PRAGMA synchronous = NORMAL'),
      syncFull: db.prepare('PRAGMA synchronous = FULL'),
      recentOf: db.prepare<[string, number], EventRow>(
        `SELECT ${COLUMNS} FROM memory_events WHERE scope = ? AND deprecated = 0 AND kind <> 'conflict_resolution' ORDER BY seq DESC LIMIT ?`,
      ),
      recentResolutionsOf: db.prepare<[string, number], EventRow>(
        `SELECT ${COLUMNS} FROM memory_events WHERE scope = ? AND kind = 'conflict_resolution' AND deprecated = 0 ORDER BY seq DESC LIMIT ?`,
      ),
      markTtl: db.prepare<[string]>('UPDATE memory_events SET ttl_candidate = 1 WHERE event_id = ? AND ttl_candidate = 0'),
      markScanned: db.prepare<[string]>('UPDATE memory_events SET scanned = 1 WHERE event_id = ? AND scanned = 0'),
      liveResolution: db.prepare<[string, string], {event_id: string}>(
        "SELECT event_id FROM memory_events WHERE scope = ? AND dedupe_key = ? AND kind = 'conflict_resolution' AND deprecated = 0 LIMIT 1",
      ),
      mask: db.prepare<[string, string, string, string, string, string]>(
        'UPDATE memory_events SET content_md = ?, content_hash = ?, run_id = ?, source = ?, masked = 1, scanned = 1 WHERE event_id = ? AND content_hash = ?',
      ),
      remove: db.prepare<[number]>('DELETE FROM memory_events WHERE seq = ?'),
      rememberDeleted: db.prepare<[string, string | null, string, string]>('INSERT OR REPLACE INTO deleted_events (identity, idempotency_key, event_id, deleted_at) VALUES (?, ?, ?, ?)'),
      deletedByIdentity: db.prepare<[string], {event_id: string; deleted_at: string}>('SELECT event_id, deleted_at FROM deleted_events WHERE identity = ?'),
      deletedByKey: db.prepare<[string], {event_id: string; deleted_at: string}>('SELECT event_id, deleted_at FROM deleted_events WHERE idempotency_key = ?'),
      count: db.prepare<[], {n: number}>('SELECT COUNT(*) AS n FROM memory_events'),
    }
  }

  /**
   * A prepared statement for dynamic SQL (filters), prepared once per distinct text and never dropped (a dropped
   * statement can abort the process: sqlite-open.ts); the texts are few because lists are padded.
   */
  private prepared<R>(sql: string): Database.Statement<unknown[], R> {
    let statement = this.cache.get(sql)
    if (statement === undefined) {
      statement = this.db.prepare(sql)
      this.cache.set(sql, statement)
    }
    return statement as Database.Statement<unknown[], R>
  }

  private get(seq: number): EventRecord | null {
    const row = this.s.bySeq.get(seq)
    return row === undefined ? null : toRecord(row)
  }

  /** Inserts one event (no checks) and indexes it; returns its seq and id. Pins are the caller's business. */
  private insert(event: NewEvent, extra: {created_at: string; content_hash: string; identity: string; idempotency_key: string | null; deprecated: boolean; scanned: boolean}): {seq: number; event_id: string} {
    const event_id = this.nextId(Date.parse(extra.created_at) || Date.now())
    const info = this.s.insert.run({
      event_id,
      agent_id: event.agent_id,
      run_id: event.run_id,
      scope: event.scope,
      kind: event.kind,
      dedupe_key: event.dedupe_key,
      confidence: event.confidence,
      content_md: event.content_md,
      source: JSON.stringify(event.source),
      supersedes: event.supersedes,
      ttl_days: event.ttl_days,
      created_at: extra.created_at,
      content_hash: extra.content_hash,
      identity: extra.identity,
      idempotency_key: extra.idempotency_key,
      deprecated: extra.deprecated ? 1 : 0,
      scanned: extra.scanned ? 1 : 0,
    })
    const seq = Number(info.lastInsertRowid)
    this.s.ftsInsert.run(seq, ftsText(event.content_md), event.dedupe_key)
    return {seq, event_id}
  }

  /** Points the pin of (scope, key) at its newest live event, or drops it when there is none. */
  private repin(scope: string, key: string): void {
    const newest = this.s.newestLive.get(scope, key)
    if (newest === undefined) this.s.dropPin.run(scope, key)
    else this.s.setPin.run(scope, key, newest.seq)
  }

  findDuplicateSync(identity: string, idempotencyKey?: string): EarlierAppend | null {
    if (idempotencyKey !== undefined) {
      const row = this.s.byIdempotencyKey.get(idempotencyKey)
      if (row !== undefined) return {status: row.identity === identity ? 'duplicate' : 'key_reused', event: toRecord(row)}
    }
    const row = this.s.byIdentity.get(identity)
    if (row !== undefined) return {status: 'duplicate', event: toRecord(row)}
    // Deleted by a cleanup since: a late retry of it must not bring it back.
    const gone = (idempotencyKey === undefined ? undefined : this.s.deletedByKey.get(idempotencyKey)) ?? this.s.deletedByIdentity.get(identity)
    return gone === undefined ? null : {status: 'deleted', event_id: gone.event_id, deleted_at: gone.deleted_at}
  }

  /** Appends one event, durably, in a transaction of its own or (group commit) shared with others. */
  append(request: AppendEventRequest): Promise<AppendEventOutcome> {
    if (!this.groupCommit) return Promise.resolve(this.appendOne.immediate(request))
    return new Promise((resolve, reject) => {
      this.pending.push({request, resolve, reject})
      if (!this.flushScheduled) {
        this.flushScheduled = true
        setImmediate(() => this.flush())
      }
    })
  }

  /** Writes every pending append (up to MAX_BATCH) in one transaction, then answers them. */
  flush(): void {
    this.flushScheduled = false
    const batch = this.pending.splice(0, MAX_BATCH)
    if (this.pending.length > 0) {
      this.flushScheduled = true
      setImmediate(() => this.flush())
    }
    if (batch.length === 0) return
    debug('group commit of %d appends', batch.length)
    const results: ({ok: true; outcome: AppendEventOutcome} | {ok: false; error: unknown})[] = []
    const relaxed = this.walSync !== null
    if (relaxed) this.s.syncNormal.run()
    try {
      this.db
        .transaction(() => {
          for (const item of batch) {
            try {
              results.push({ok: true, outcome: this.appendOne(item.request)})
            } catch (error) {
              results.push({ok: false, error})
            }
          }
        })
        .immediate()
    } catch (error) {
      // The commit itself failed: nothing of the batch is stored.
      for (const item of batch) item.reject(error)
      return
    } finally {
      if (relaxed) this.s.syncFull.run()
    }
    const answer = () => {
      for (const [index, item] of batch.entries()) {
        const result = results[index]
        if (result.ok) item.resolve(result.outcome)
        else item.reject(result.error)
      }
    }
    if (this.walSync === null) {
      answer()
      return
    }
    // Answered only once on disk. If the flush fails, the appends are committed but not known to be durable:
    // they are answered with the error, and a retry finds them (status duplicate).
    this.walSync.sync().then(answer, (error: unknown) => {
      for (const item of batch) item.reject(error)
    })
  }

  private appendSteps(request: AppendEventRequest): AppendEventOutcome {
    const duplicate = this.findDuplicateSync(request.identity, request.idempotencyKey)
    if (duplicate !== null) return duplicate
    const {event} = request
    let target: EventRecord | null = null
    if (event.supersedes !== null) {
      const row = this.s.byId.get(event.supersedes)
      if (row === undefined || !scopeMatches(request.visible, row.scope)) return {status: 'supersedes_missing'}
      target = toRecord(row)
    }
    const pinned = this.s.pin.get(event.scope, event.dedupe_key)
    const replaced = pinned === undefined ? null : this.get(pinned.event_seq)
    // "Newest" is the insertion order here and (created_at, event_id) in the pure rules of events/: created_at
    // never goes back (a clock stepping back gives the previous time), so both always agree.
    this.lastCreatedAt ??= this.s.maxCreatedAt.get()?.created_at ?? request.now
    const createdAt = request.now > this.lastCreatedAt ? request.now : this.lastCreatedAt
    this.lastCreatedAt = createdAt
    const {seq, event_id} = this.insert(event, {
      created_at: createdAt,
      content_hash: request.contentHash,
      identity: request.identity,
      idempotency_key: request.idempotencyKey ?? null,
      deprecated: false,
      scanned: request.scanned,
    })
    this.s.setPin.run(event.scope, event.dedupe_key, seq)
    if (target !== null) {
      this.s.deprecate.run(target.seq)
      const targetPin = this.s.pin.get(target.scope, target.dedupe_key)
      if (targetPin !== undefined && targetPin.event_seq === target.seq) this.repin(target.scope, target.dedupe_key)
    }
    const stored: EventRecord = {
      ...event,
      seq,
      event_id,
      created_at: createdAt,
      content_hash: request.contentHash,
      deprecated: false,
      masked: false,
      scanned: request.scanned,
      ttl_candidate: false,
    }
    return {status: 'created', event: stored, replaced, superseded: target, runCount: this.s.runCount.get(event.agent_id, event.run_id)?.n ?? 1}
  }

  snapshot(scopes: readonly string[], limitRecent: number, maxPinsPerScope: number): SnapshotRows {
    return this.snapshotRead(scopes, limitRecent, maxPinsPerScope)
  }

  private snapshotSteps(scopes: readonly string[], limitRecent: number, maxPinsPerScope: number): SnapshotRows {
    const pinned: EventRecord[] = []
    const recent: EventRecord[] = []
    const contenders: EventRecord[] = []
    for (const scope of new Set(scopes)) {
      const pins = this.s.pinnedOf.all(scope, maxPinsPerScope).map(toRecord)
      // Conflict_resolution events apart: a settled one is left out of recent_events, and limitRecent others must remain.
      const resolutions = this.s.recentResolutionsOf.all(scope, limitRecent).map(toRecord)
      pinned.push(...pins)
      recent.push(...this.s.recentOf.all(scope, limitRecent).map(toRecord), ...resolutions)
      for (const conflictKey of flaggedKeys([...pins, ...resolutions])) contenders.push(...this.s.newestPerAgent.all(scope, conflictKey).map(toRecord))
    }
    return {pinned, recent, contenders}
  }

  query(query: EventQuery): EventQueryResult {
    const params: unknown[] = []
    const where = [scopeSql(query.visible, params, 'e.scope')]
    if (query.scope !== undefined) where.push(scopeSql(query.scope, params, 'e.scope'))
    const conditions: [unknown, string][] = [
      // `+`: not a term an index may serve. SQLite 3.53 fails to plan `kind = ?` beside an OR of scopes when the
      // bound kind is the one of the partial index memory_events_resolutions ("internal query planner error").
      [query.kind, '+e.kind = ?'],
      [query.dedupeKey, 'e.dedupe_key = ?'],
      [query.agentId, 'e.agent_id = ?'],
      [query.since, 'e.created_at >= ?'],
      [query.until, 'e.created_at < ?'],
    ]
    for (const [value, sql] of conditions) {
      if (value === undefined) continue
      where.push(sql)
      params.push(value)
    }
    if (!query.includeDeprecated) where.push('e.deprecated = 0')
    const read = this.db.transaction((): EventQueryResult => {
      if (query.text === undefined) {
        const filter = where.join(' AND ')
        const total = this.prepared<{n: number}>(`SELECT COUNT(*) AS n FROM memory_events e WHERE ${filter}`).get(...params)?.n ?? 0
        const rows = this.prepared<EventRow>(`SELECT ${E_COLUMNS} FROM memory_events e WHERE ${filter} ORDER BY e.seq DESC LIMIT ?`).all(...params, query.limit)
        return {events: rows.map(toRecord), total}
      }
      const match = ftsQuery(query.text)
      if (match === null) return {events: [], total: 0}
      const filter = ['memory_events_fts MATCH ?', ...where].join(' AND ')
      const from = 'memory_events_fts JOIN memory_events e ON e.seq = memory_events_fts.rowid'
      const total = this.prepared<{n: number}>(`SELECT COUNT(*) AS n FROM ${from} WHERE ${filter}`).get(match, ...params)?.n ?? 0
      const rows = this.prepared<EventRow & {rank_score: number}>(
        `SELECT ${E_COLUMNS}, ${BM25} AS rank_score FROM ${from} WHERE ${filter} ORDER BY rank_score, e.seq DESC LIMIT ?`,
      ).all(match, ...params, query.limit)
      // bm25() is lower-is-better and negative; the answer's score is higher-is-better.
      return {events: rows.map((row) => ({...toRecord(row), score: Math.round(-row.rank_score * 1e6) / 1e6})), total}
    })
    return read.deferred()
  }

  janitorInput(visible: ScopeFilter, maxUnscanned: number): JanitorInput {
    const read = this.db.transaction((): JanitorInput => {
      const byseq = new Map<number, EventRecord>()
      const add = (rows: EventRow[]) => {
        for (const row of rows) if (!byseq.has(row.seq)) byseq.set(row.seq, toRecord(row))
      }
      let params: unknown[] = []
      let scope = scopeSql(visible, params, 'scope')
      add(
        this.prepared<EventRow>(
          `SELECT ${E_COLUMNS} FROM memory_events e JOIN (
             SELECT scope, dedupe_key FROM memory_events WHERE deprecated = 0 AND ${scope} GROUP BY scope, dedupe_key HAVING COUNT(*) > 1
           ) g ON e.scope = g.scope AND e.dedupe_key = g.dedupe_key WHERE e.deprecated = 0`,
        ).all(...params),
      )
      add(this.prepared<EventRow>(`SELECT ${COLUMNS} FROM memory_events WHERE ttl_days > 0 AND deprecated = 0 AND ${scope}`).all(...params))
      add(
        this.prepared<EventRow>(`SELECT ${COLUMNS} FROM memory_events WHERE kind = 'conflict_resolution' AND ${scope}`).all(
          ...params,
        ),
      )
      const events = [...byseq.values()].sort((a, b) => a.seq - b.seq)
      const unscanned = this.prepared<EventRow>(`SELECT ${COLUMNS} FROM memory_events WHERE scanned = 0 AND ${scope} ORDER BY seq LIMIT ?`)
        .all(...params, maxUnscanned)
        .map(toRecord)
      const unscannedAll = this.prepared<{n: number}>(`SELECT COUNT(*) AS n FROM memory_events WHERE scanned = 0 AND ${scope}`).get(...params)?.n ?? 0
      params = []
      scope = scopeSql(visible, params, 'scope')
      const pinnedCount = this.prepared<{n: number}>(`SELECT COUNT(*) AS n FROM memory_pins WHERE ${scope}`).get(...params)?.n ?? 0
      return {events, unscanned, unscannedLeft: unscannedAll - unscanned.length, pinnedCount}
    })
    return read.deferred()
  }

  applyConsolidation(changes: ConsolidationChanges): ConsolidationApplied {
    const run = this.db.transaction((): ConsolidationApplied => {
      const applied: ConsolidationApplied = {ttlMarked: [], resolutions: new Map(), masked: []}
      for (const id of changes.ttlCandidates) {
        if (this.s.markTtl.run(id).changes > 0) applied.ttlMarked.push(id)
      }
      for (const {key, request} of changes.resolutions) {
        const existing = this.s.liveResolution.get(request.event.scope, request.event.dedupe_key)
        if (existing !== undefined) {
          applied.resolutions.set(key, {event_id: existing.event_id, created: false})
          continue
        }
        const outcome = this.appendOne(request)
        if (outcome.status === 'created') applied.resolutions.set(key, {event_id: outcome.event.event_id, created: true})
        else if (outcome.status === 'duplicate' || outcome.status === 'key_reused') applied.resolutions.set(key, {event_id: outcome.event.event_id, created: false})
        else if (outcome.status === 'deleted') applied.resolutions.set(key, {event_id: outcome.event_id, created: false})
      }
      for (const mask of changes.masks) {
        const row = this.s.byId.get(mask.event_id)
        if (row === undefined) continue
        const result = this.s.mask.run(mask.content_md, mask.content_hash, mask.run_id, JSON.stringify(mask.source), mask.event_id, mask.expectHash)
        if (result.changes === 0) continue
        this.s.ftsDelete.run(row.seq)
        this.s.ftsInsert.run(row.seq, ftsText(mask.content_md), row.dedupe_key)
        applied.masked.push(mask.event_id)
      }
      for (const id of changes.scanned) this.s.markScanned.run(id)
      return applied
    })
    return run.immediate()
  }

  cleanupCandidates(query: CleanupQuery, limit: number): {candidates: CleanupCandidate[]; total: number} {
    const read = this.db.transaction(() => {
      const params: unknown[] = []
      const where = cleanupSql(query, params)
      const total = this.prepared<{n: number}>(`SELECT COUNT(*) AS n FROM memory_events WHERE ${where}`).get(...params)?.n ?? 0
      const rows = this.prepared<EventRow>(`SELECT ${COLUMNS} FROM memory_events WHERE ${where} ORDER BY seq LIMIT ?`).all(...params, limit)
      const candidates = rows.map((row): CleanupCandidate => ({...toRecord(row), reason: row.deprecated === 1 ? 'deprecated' : 'expired'}))
      return {candidates, total}
    })
    return read.deferred()
  }

  deleteEvents(eventIds: readonly string[], query: CleanupQuery): string[] {
    const params: unknown[] = []
    const where = cleanupSql(query, params)
    const candidate = this.prepared<EventRow>(`SELECT ${COLUMNS} FROM memory_events WHERE event_id = ? AND ${where}`)
    const run = this.db.transaction((): string[] => {
      const deleted: string[] = []
      for (const id of new Set(eventIds)) {
        const row = candidate.get(id, ...params)
        if (row === undefined) continue
        this.s.remove.run(row.seq)
        this.s.ftsDelete.run(row.seq)
        this.s.rememberDeleted.run(row.identity, row.idempotency_key, row.event_id, new Date().toISOString())
        const pin = this.s.pin.get(row.scope, row.dedupe_key)
        if (pin !== undefined && pin.event_seq === row.seq) this.repin(row.scope, row.dedupe_key)
        deleted.push(id)
      }
      return deleted
    })
    return run.immediate()
  }

  import(events: readonly ImportedEvent[]): string[] {
    const run = this.db.transaction((): string[] => {
      const ids: string[] = []
      for (const event of events) {
        const {seq, event_id} = this.insert(event, {
          created_at: event.created_at,
          content_hash: event.content_hash,
          identity: event.identity,
          idempotency_key: event.idempotency_key ?? null,
          deprecated: event.deprecated ?? false,
          scanned: event.scanned ?? false,
        })
        if (!event.deprecated) this.s.setPin.run(event.scope, event.dedupe_key, seq)
        if (this.lastCreatedAt !== undefined && event.created_at > this.lastCreatedAt) this.lastCreatedAt = event.created_at
        ids.push(event_id)
      }
      return ids
    })
    return run.immediate()
  }

  count(): number {
    return this.s.count.get()?.n ?? 0
  }
}
