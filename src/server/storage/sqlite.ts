/**
 * The embedded storage of `jarvis serve`: one SQLite file (better-sqlite3) in the data directory.
 *
 * - WAL journal: readers (status, pull) never wait for a writer and a crash never leaves a torn page.
 * - A commit is on disk before the push is answered, so an acknowledged write survives a power cut, not only a
 *   process crash (a client that was answered 200 would never push that change again). With group commit (the
 *   default) commits are written with `synchronous = NORMAL` and answered once an asynchronous flush of the WAL has
 *   them on disk (wal-sync.ts): the flush does not hold up the event loop, and the commits made while one runs share
 *   the next. Without it, `synchronous = FULL` fsyncs each commit as it is written.
 * - Every commit runs in one IMMEDIATE transaction: the base checks and the writes are atomic.
 * - `schema_migrations` records the applied schema versions; a database written by a newer server is refused.
 * - Migration 2 adds the shared event log (sqlite-events.ts): `memory_events`, `memory_pins`, `memory_events_fts`.
 */
import {chmodSync} from 'node:fs'
import {join} from 'node:path'

import type Database from 'better-sqlite3'

import {BadInputError, JarvisError, ExitCode} from '../../errors.js'
import {defaultDataDir, makeDataDir} from '../config.js'
import {commitAuditEntries} from './audit-rows.js'
import {planCommit} from './commit-rules.js'
import {AUDIT_MIGRATION_SQL, SqliteAuditLog} from './sqlite-audit.js'
import {DELETED_EVENTS_MIGRATION_SQL, EVENTS_MIGRATION_SQL, SqliteEventLog} from './sqlite-events.js'
import {type DumpItem, type DumpRow, type DumpTable, exportRows, importRows, isEmpty} from './sqlite-dump.js'
import {KEYS_WORKSPACE_MIGRATION_SQL} from './key-rows.js'
import {KEYS_MIGRATION_SQL, SqliteKeyStore} from './sqlite-keys.js'
import {OAUTH_MIGRATION_DESCRIPTION, OAUTH_MIGRATION_SQL} from './oauth-rows.js'
import {SqliteOAuthStore} from './sqlite-oauth.js'
import {openSqlite} from '../../store/sqlite-open.js'
import {olderSchemaRefusal} from './schema-version.js'
import {WalSync, type SyncFn} from './wal-sync.js'
import {DEFAULT_WORKSPACE} from './workspace-name.js'

export {baseMatches} from './commit-rules.js'
import type {
  ApiKey,
  AppendEventOutcome,
  AuditEntry,
  AuditQuery,
  AppendEventRequest,
  CleanupCandidate,
  CleanupQuery,
  CommitOutcome,
  CommitRequest,
  ConsolidationApplied,
  ConsolidationChanges,
  EarlierAppend,
  EventQuery,
  EventQueryResult,
  FileMeta,
  FileRecord,
  ImportedEvent,
  JanitorInput,
  NewAuditEntry,
  ScopeFilter,
  ServerStorage,
  SnapshotRows,
  StatusSnapshot,
} from './types.js'

export const SQLITE_FILE_NAME = 'jarvis.sqlite'

interface Migration {
  version: number
  description: string
  sql: string
}

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'files with revisions and tombstones, server change sequence, idempotency keys',
    sql: `
      CREATE TABLE server_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        seq INTEGER NOT NULL,
        server_id TEXT NOT NULL
      );
      INSERT INTO server_state (id, seq, server_id) VALUES (1, 0, lower(hex(randomblob(16))));
      CREATE TABLE files (
        path TEXT PRIMARY KEY,
        content TEXT,
        hash TEXT,
        rev INTEGER NOT NULL,
        updated_at TEXT NOT NULL,
        author TEXT NOT NULL,
        seq INTEGER NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
        CHECK ((deleted = 1 AND content IS NULL AND hash IS NULL) OR (deleted = 0 AND content IS NOT NULL AND hash IS NOT NULL))
      ) WITHOUT ROWID;
      CREATE INDEX files_by_seq ON files (seq);
      CREATE TABLE idempotency_keys (
        key TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        created_at TEXT NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    description: 'shared event log: memory_events, memory_pins, memory_events_fts (FTS5)',
    sql: EVENTS_MIGRATION_SQL,
  },
  {
    version: 3,
    description: 'identities and idempotency keys of events a cleanup deleted, so a late retry is not stored again',
    sql: DELETED_EVENTS_MIGRATION_SQL,
  },
  {
    version: 4,
    description: 'API keys: the sha256 of each token, its agent, role, expiry and revocation',
    sql: KEYS_MIGRATION_SQL,
  },
  {
    version: 5,
    description: 'the workspace of each API key (keys made before are the default workspace\'s)',
    sql: KEYS_WORKSPACE_MIGRATION_SQL,
  },
  {
    version: 6,
    description: 'audit log: pushes, conflicts, refused and masked secrets, forgotten events, project switches, keys',
    sql: AUDIT_MIGRATION_SQL,
  },
  {version: 7, description: OAUTH_MIGRATION_DESCRIPTION, sql: OAUTH_MIGRATION_SQL},
]

export const SQLITE_SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0

interface FileRow {
  path: string
  content: string | null
  hash: string | null
  rev: number
  updated_at: string
  author: string
  seq: number
  deleted: number
}

type MetaRow = Omit<FileRow, 'content'>

function toMeta(row: MetaRow): FileMeta {
  return {
    path: row.path,
    rev: row.rev,
    hash: row.hash,
    updatedAt: row.updated_at,
    author: row.author,
    seq: row.seq,
    deleted: row.deleted === 1,
  }
}

function toRecord(row: FileRow): FileRecord {
  return {...toMeta(row), content: row.content}
}

export interface SqliteStorageOptions {
  /** Directory holding the database file; created (mode 0700) when missing. */
  dataDir: string
  /** File name inside `dataDir`; default `jarvis.sqlite`. */
  fileName?: string
  /**
   * Event-log appends that arrive together share one transaction (each in its own savepoint), and are answered once
   * an asynchronous flush of the WAL has them on disk (sqlite-events.ts, wal-sync.ts); default true. False gives
   * every append its own synchronous=FULL transaction (the benchmark compares both).
   */
  groupCommit?: boolean
  /** How the WAL is flushed after a group commit; default fdatasync on the thread pool (tests replace it). */
  walFlush?: SyncFn
  /**
   * Whether a schema older than this jarvis's is brought up to date (default: the server and the commands that write)
   * or refused (false: the commands that only read, schema-version.ts).
   */
  migrate?: boolean
  /** The workspace whose storage this is, named when an older schema is refused. */
  workspace?: string
}

export class SqliteStorage implements ServerStorage {
  readonly file: string
  private readonly db: Database.Database
  private closed = false
  private readonly statements
  private readonly events: SqliteEventLog
  private readonly keys: SqliteKeyStore
  private readonly audit: SqliteAuditLog
  readonly oauth: SqliteOAuthStore
  private readonly walSync: WalSync | null
  /**
   * The transactions every request runs, made once: better-sqlite3's `transaction()` builds four wrapper functions
   * and their properties at each call.
   */
  private readonly statusRead: (after: number | undefined, alsoRead: readonly string[]) => StatusSnapshot
  private readonly pathsRead: (paths: readonly string[]) => Map<string, FileRecord>
  private readonly commitRun: (request: CommitRequest, author: string, now: string) => CommitOutcome

  constructor(options: SqliteStorageOptions) {
    makeDataDir(options.dataDir)
    this.file = join(options.dataDir, options.fileName ?? SQLITE_FILE_NAME)
    try {
      this.db = openSqlite(this.file)
    } catch (error) {
      const message = (error as Error).message
      // better-sqlite3 is native code built for the Node that installed it: after a switch of Node it cannot load.
      if ((error as NodeJS.ErrnoException).code === 'ERR_DLOPEN_FAILED' || message.includes('NODE_MODULE_VERSION')) {
        throw new JarvisError(
          `jarvis serve cannot load its SQLite module (better-sqlite3): it was built for another Node than this one (${process.version}). Rebuild it for this Node with \`npm rebuild better-sqlite3\` in the jarvis package directory, or start jarvis serve with the Node jarvis was installed with`,
          {code: 'STORAGE', exit: ExitCode.failed, data: {file: this.file}, cause: error},
        )
      }
      throw new JarvisError(`cannot open the server database ${this.file}: ${message}`, {
        code: 'STORAGE',
        exit: ExitCode.failed,
        data: {file: this.file},
        cause: error,
      })
    }
    try {
      chmodSync(this.file, 0o600)
      const mode = this.db.pragma('journal_mode = WAL', {simple: true})
      if (String(mode).toLowerCase() !== 'wal') throw new Error(`journal_mode is ${String(mode)}, not wal`)
      this.db.pragma('synchronous = FULL')
      this.db.pragma('busy_timeout = 5000')
      if (options.migrate ?? true) this.migrate()
      else this.assertCurrentSchema(options.workspace ?? DEFAULT_WORKSPACE)
    } catch (error) {
      this.db.close()
      if (error instanceof JarvisError) throw error
      throw new JarvisError(`cannot prepare the server database ${this.file}: ${(error as Error).message}`, {
        code: 'STORAGE',
        exit: ExitCode.failed,
        data: {file: this.file},
        cause: error,
      })
    }
    this.statements = {
      seq: this.db.prepare<[], {seq: number}>('SELECT seq FROM server_state WHERE id = 1'),
      serverId: this.db.prepare<[], {server_id: string}>('SELECT server_id FROM server_state WHERE id = 1'),
      setSeq: this.db.prepare<[number]>('UPDATE server_state SET seq = ? WHERE id = 1'),
      metaSince: this.db.prepare<[number], MetaRow>(
        'SELECT path, hash, rev, updated_at, author, seq, deleted FROM files WHERE seq > ? ORDER BY path',
      ),
      one: this.db.prepare<[string], FileRow>(
        'SELECT path, content, hash, rev, updated_at, author, seq, deleted FROM files WHERE path = ?',
      ),
      upsert: this.db.prepare<[string, string | null, string | null, number, string, string, number, number]>(
        `INSERT INTO files (path, content, hash, rev, updated_at, author, seq, deleted) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (path) DO UPDATE SET content = excluded.content, hash = excluded.hash, rev = excluded.rev,
           updated_at = excluded.updated_at, author = excluded.author, seq = excluded.seq, deleted = excluded.deleted`,
      ),
      hasKey: this.db.prepare<[string], {seq: number}>('SELECT seq FROM idempotency_keys WHERE key = ?'),
      syncNormal: this.db.prepare('PRAGMA synchronous = NORMAL'),
      syncFull: this.db.prepare('PRAGMA synchronous = FULL'),
      addKey: this.db.prepare<[string, number, string]>(
        'INSERT INTO idempotency_keys (key, seq, created_at) VALUES (?, ?, ?)',
      ),
    }
    const groupCommit = options.groupCommit ?? true
    let walSync: WalSync | null = null
    if (groupCommit) {
      try {
        walSync = new WalSync(`${this.file}-wal`, options.walFlush)
      } catch {
        walSync = null // no WAL file to flush by hand: event-log batches commit with synchronous=FULL instead
      }
    }
    this.walSync = walSync
    this.events = new SqliteEventLog(this.db, {groupCommit, walSync})
    this.keys = new SqliteKeyStore(this.db)
    this.audit = new SqliteAuditLog(this.db)
    this.oauth = new SqliteOAuthStore(this.db)
    this.statusRead = this.db.transaction((after: number | undefined, alsoRead: readonly string[]) => this.statusSteps(after, alsoRead)).deferred
    this.pathsRead = this.db.transaction((paths: readonly string[]) => this.readSteps(paths)).deferred
    this.commitRun = this.db.transaction((request: CommitRequest, author: string, now: string) => this.commitSteps(request, author, now)).immediate
  }

  private migrate(): void {
    this.db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)',
    )
    const applied = new Set(
      this.db
        .prepare<[], {version: number}>('SELECT version FROM schema_migrations')
        .all()
        .map((row) => row.version),
    )
    assertNotNewer(this.file, Math.max(0, ...applied))
    const record = this.db.prepare<[number, string, string]>(
      'INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)',
    )
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue
      this.db.transaction(() => {
        this.db.exec(migration.sql)
        record.run(migration.version, migration.description, new Date().toISOString())
      }).immediate()
    }
  }

  /** Refuses a schema older (or newer) than this jarvis's, changing nothing: for the commands that only read. */
  private assertCurrentSchema(workspace: string): void {
    const applied = appliedVersions(this.db)
    assertNotNewer(this.file, Math.max(0, ...applied))
    const missing = MIGRATIONS.find((migration) => !applied.has(migration.version))
    if (missing) throw olderSchemaRefusal(`the server database ${this.file}`, missing.version - 1, SQLITE_SCHEMA_VERSION, workspace, {file: this.file})
  }

  private currentSeq(): number {
    return this.statements.seq.get()?.seq ?? 0
  }

  async status(since?: number, alsoRead: readonly string[] = []): Promise<StatusSnapshot> {
    return this.statusRead(since, alsoRead)
  }

  private statusSteps(after: number | undefined, alsoRead: readonly string[]): StatusSnapshot {
    const seq = this.currentSeq()
    const serverId = this.statements.serverId.get()?.server_id ?? ''
    // A since beyond the seq comes from another database (wiped, restored): answer everything.
    const full = after === undefined || after > seq
    const records = new Map<string, FileRecord>()
    for (const path of alsoRead) {
      const row = this.statements.one.get(path)
      if (row) records.set(path, toRecord(row))
    }
    return {seq, serverId, full, files: this.statements.metaSince.all(full ? -1 : after).map(toMeta), read: records}
  }

  async read(paths: readonly string[]): Promise<Map<string, FileRecord>> {
    return this.pathsRead(paths)
  }

  private readSteps(paths: readonly string[]): Map<string, FileRecord> {
    const found = new Map<string, FileRecord>()
    for (const path of paths) {
      const row = this.statements.one.get(path)
      if (row) found.set(path, toRecord(row))
    }
    return found
  }

  async seq(): Promise<number> {
    return this.currentSeq()
  }

  async hasCommitted(idempotencyKey: string): Promise<boolean> {
    return this.statements.hasKey.get(idempotencyKey) !== undefined
  }

  async commit(request: CommitRequest, author: string, now: string): Promise<CommitOutcome> {
    if (this.walSync === null) return this.commitRun(request, author, now)
    this.statements.syncNormal.run()
    let outcome: CommitOutcome
    try {
      outcome = this.commitRun(request, author, now)
    } finally {
      this.statements.syncFull.run()
    }
    // Answered only once on disk. If the flush fails, the commit is stored but not known to be durable: it is answered
    // with the error, and the client's retry finds its base stale (or its idempotency key taken) and pulls.
    await this.walSync.sync()
    return outcome
  }

  /** One commit, inside its transaction. */
  private commitSteps(request: CommitRequest, author: string, now: string): CommitOutcome {
    const seqBefore = this.currentSeq()
    if (request.idempotencyKey !== undefined && this.statements.hasKey.get(request.idempotencyKey)) {
      return {ok: true, seq: seqBefore, duplicate: true, written: [], deleted: [], unchanged: [], unknown: []}
    }
    const current = new Map<string, FileMeta>()
    for (const path of [...request.writes.keys(), ...request.deletes]) {
      const row = this.statements.one.get(path)
      if (row) current.set(path, toMeta(row))
    }
    const plan = planCommit(request, current, seqBefore, author, now)
    if (!plan.ok) return this.withAudit(request, plan, author, now)
    for (const row of plan.rows) this.statements.upsert.run(row.path, row.content, row.hash, row.rev, now, author, plan.result.seq, row.deleted ? 1 : 0)
    if (plan.rows.length > 0) this.statements.setSeq.run(plan.result.seq)
    if (request.idempotencyKey !== undefined) this.statements.addKey.run(request.idempotencyKey, plan.result.seq, now)
    return this.withAudit(request, plan.result, author, now)
  }

  /** Records the commit's audit entries (if any) in the running transaction, and answers the outcome with them. */
  private withAudit<T extends CommitOutcome>(request: CommitRequest, outcome: T, author: string, now: string): T {
    const entries = commitAuditEntries(request, outcome, author, now)
    return entries.length === 0 ? outcome : {...outcome, audit: this.audit.appendSync(entries)}
  }

  // The audit log (sqlite-audit.ts).

  async appendAudit(entries: readonly NewAuditEntry[]): Promise<AuditEntry[]> {
    return this.audit.append(entries)
  }

  async queryAudit(query: AuditQuery): Promise<AuditEntry[]> {
    return this.audit.query(query)
  }

  // The event log (docs/event-log.md); the SQL lives in sqlite-events.ts.

  async findDuplicate(identity: string, idempotencyKey?: string): Promise<EarlierAppend | null> {
    return this.events.findDuplicateSync(identity, idempotencyKey)
  }

  async appendEvent(request: AppendEventRequest): Promise<AppendEventOutcome> {
    return this.events.append(request)
  }

  async snapshotEvents(scopes: readonly string[], limitRecent: number, maxPinsPerScope: number): Promise<SnapshotRows> {
    return this.events.snapshot(scopes, limitRecent, maxPinsPerScope)
  }

  async queryEvents(query: EventQuery): Promise<EventQueryResult> {
    return this.events.query(query)
  }

  async janitorInput(visible: ScopeFilter, maxUnscanned: number): Promise<JanitorInput> {
    return this.events.janitorInput(visible, maxUnscanned)
  }

  async applyConsolidation(changes: ConsolidationChanges): Promise<ConsolidationApplied> {
    return this.events.applyConsolidation(changes)
  }

  async cleanupCandidates(query: CleanupQuery, limit: number): Promise<{candidates: CleanupCandidate[]; total: number}> {
    return this.events.cleanupCandidates(query, limit)
  }

  async deleteEvents(eventIds: readonly string[], query: CleanupQuery): Promise<string[]> {
    return this.events.deleteEvents(eventIds, query)
  }

  async importEvents(events: readonly ImportedEvent[]): Promise<string[]> {
    return this.events.import(events)
  }

  async countEvents(): Promise<number> {
    return this.events.count()
  }

  async addKey(key: ApiKey, tokenHash: string): Promise<void> {
    this.keys.add(key, tokenHash)
  }

  async listKeys(): Promise<ApiKey[]> {
    return this.keys.list()
  }

  async revokeKey(id: string, now: string): Promise<ApiKey | null> {
    return this.keys.revoke(id, now)
  }

  async keyByTokenHash(tokenHash: string): Promise<ApiKey | null> {
    return this.keys.byTokenHash(tokenHash)
  }

  /** The tally, then every row of `tables`, the keys of workspace `keysOf` only (null: every workspace's), in one read transaction (sqlite-dump.ts). */
  dumpRows(tables?: readonly DumpTable[], keysOf?: string | null): Iterable<DumpItem> {
    return exportRows(this.db, tables, keysOf)
  }

  /** Loads a dump into this storage, which must hold no file, event or default-workspace key yet. */
  async loadRows(rows: AsyncIterable<{row: DumpRow; where: string}>): Promise<Record<DumpTable, number>> {
    if (!isEmpty(this.db)) throw new BadInputError(`${this.file} already holds memory: import into a new data directory`, {file: this.file})
    return importRows(this.db, rows)
  }

  async ping(): Promise<boolean> {
    if (this.closed) return false
    try {
      return this.statements.seq.get() !== undefined
    } catch {
      return false
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.events.flush()
    this.closed = true
    await this.walSync?.close()
    this.db.close()
  }
}

/** The schema versions applied to a jarvis database (none when none is recorded), read without changing it. */
function appliedVersions(db: Database.Database): Set<number> {
  const table = db.prepare<[], {n: number}>("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get()
  if (table?.n !== 1) return new Set()
  return new Set(db.prepare<[], {version: number}>('SELECT version FROM schema_migrations').all().map((row) => row.version))
}

/** A database written by a newer jarvis is refused: this one does not know its tables. */
function assertNotNewer(file: string, version: number): void {
  if (version <= SQLITE_SCHEMA_VERSION) return
  throw new JarvisError(`the server database ${file} has schema version ${version}, newer than this jarvis (${SQLITE_SCHEMA_VERSION}); upgrade jarvis`, {
    code: 'STORAGE_VERSION',
    exit: ExitCode.failed,
    data: {file, version},
  })
}

/**
 * A consistent copy of the data directory's database in `file` (which must not exist), as it is: an older schema is
 * copied without being upgraded (a backup taken before an upgrade is one to go back to). Taken in one read
 * transaction while the server goes on writing: `VACUUM INTO`, not the backup API, which starts again whenever
 * another process writes to the source, so under a steady load it may never finish.
 */
export function copySqliteDatabase(dataDir: string | undefined, file: string): void {
  const source = join(dataDir ?? defaultDataDir(), SQLITE_FILE_NAME)
  let db: Database.Database
  try {
    db = openSqlite(source, {fileMustExist: true})
  } catch (error) {
    throw new JarvisError(`cannot open the server database ${source}: ${(error as Error).message}`, {code: 'STORAGE', exit: ExitCode.failed, data: {file: source}, cause: error})
  }
  try {
    db.pragma('busy_timeout = 5000')
    assertNotNewer(source, Math.max(0, ...appliedVersions(db)))
    db.prepare('VACUUM INTO ?').run(file)
  } finally {
    db.close()
  }
}

/** Opens (creating when needed) the SQLite storage in `dataDir`. */
export function openSqliteStorage(dataDir: string, fileName?: string, options: Pick<SqliteStorageOptions, 'groupCommit' | 'walFlush' | 'migrate' | 'workspace'> = {}): SqliteStorage {
  return new SqliteStorage({dataDir, fileName, ...options})
}
