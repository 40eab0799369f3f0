/**
 * The team storage of `jarvis serve --database postgres://…`: everything in one PostgreSQL database, shared by any
 * number of server processes (node-postgres; docs/decisions/postgresql.md). Loaded only when such a URL is given.
 *
 * - The same tables and columns as the SQLite storage (so a dump moves between them unchanged), with the text
 *   columns that are compared or sorted in the "C" collation: byte order, as in SQLite, whatever the database's
 *   locale.
 * - A memory commit locks the one `server_state` row (`FOR UPDATE`) first: commits from every process are
 *   serialized by the database, so revisions, the change sequence, the `409` on a stale base and idempotency keys
 *   hold across processes. The commits a process receives while one transaction is under way go together in the
 *   next (batches.ts): one lock, four round trips and one WAL flush for the group, each commit still planned on the
 *   rows as the ones before it left them. Reads (status, pull) are single statements — one snapshot each — and
 *   never wait.
 * - Migrations run at start in one transaction under an advisory lock: processes that start together apply each
 *   one exactly once, and the others wait for it.
 * - Broadcasts reach the WebSocket clients of every process: each process publishes what it sends with
 *   `pg_notify` and LISTENs on one connection of its own for what the others sent (BroadcastRelay).
 * - A workspace other than the default one (docs/decisions/workspaces.md) is the same tables in a schema of its own,
 *   `jarvis_ws_<name>`: its connections search only that schema, it has its own NOTIFY channel and its own event-log
 *   lock, so nothing of one workspace is reachable through another's storage.
 */
import {randomBytes} from 'node:crypto'

import createDebug from 'debug'
import pg from 'pg'

import {BadInputError, ExitCode, JarvisError} from '../../errors.js'
import {AUDIT_COLUMNS, type AuditRow, auditValues, commitAuditEntries, toAuditEntry} from './audit-rows.js'
import {Batcher, CommitFailed} from './batches.js'
import {planCommit} from './commit-rules.js'
import {insertAudit, PG_AUDIT_MIGRATION_SQL, selectAudit} from './postgres-audit.js'
import {type Last, LastStatementFailed, runAfter, runThenCommit, type Statement} from './postgres-pipeline.js'
import {COLUMNS as EVENT_COLUMNS} from './event-rows.js'
import {KEY_COLUMNS, KEYS_WORKSPACE_MIGRATION_SQL, type KeyRow, toKey} from './key-rows.js'
import {tsText} from './fts.js'
import {redactDatabaseUrl} from './open.js'
import {olderSchemaRefusal} from './schema-version.js'
import {OAUTH_MIGRATION_DESCRIPTION, OAUTH_MIGRATION_SQL} from './oauth-rows.js'
import {PostgresOAuthStore} from './postgres-oauth.js'
import {EVENTS_LOCK, FTS_VALUE, PG_APPEND_FUNCTION_SQL, PG_DELETED_EVENTS_MIGRATION_SQL, PG_EVENTS_MIGRATION_SQL, PG_LIVE_EVENTS_MIGRATION_SQL, PostgresEventLog} from './postgres-events.js'
import {DUMP_TABLES, DUMP_ORDER, dumpFilter, EMPTY_BEFORE_IMPORT, type DumpItem, type DumpRow, type DumpTable, type DumpTally} from './sqlite-dump.js'
import {DEFAULT_WORKSPACE} from './workspace-name.js'
import type {
  ApiKey,
  AppendEventOutcome,
  AuditEntry,
  AuditQuery,
  AppendEventRequest,
  BroadcastRelay,
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

const debug = createDebug('jarvis:server:postgres')

const MIGRATIONS: readonly {version: number; description: string; sql: string}[] = [
  {
    version: 1,
    description: 'files with revisions and tombstones, server change sequence, idempotency keys',
    sql: `
      CREATE TABLE server_state (
        id integer PRIMARY KEY CHECK (id = 1),
        seq bigint NOT NULL,
        server_id text NOT NULL
      );
      INSERT INTO server_state (id, seq, server_id) VALUES (1, 0, replace(gen_random_uuid()::text, '-', ''));
      CREATE TABLE files (
        path text COLLATE "C" PRIMARY KEY,
        content text,
        hash text,
        rev integer NOT NULL,
        updated_at text NOT NULL,
        author text NOT NULL,
        seq bigint NOT NULL,
        deleted smallint NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
        CHECK ((deleted = 1 AND content IS NULL AND hash IS NULL) OR (deleted = 0 AND content IS NOT NULL AND hash IS NOT NULL))
      );
      CREATE INDEX files_by_seq ON files (seq);
      CREATE TABLE idempotency_keys (
        key text COLLATE "C" PRIMARY KEY,
        seq bigint NOT NULL,
        created_at text NOT NULL
      );
    `,
  },
  {version: 2, description: 'shared event log: memory_events (with its tsvector), memory_pins', sql: PG_EVENTS_MIGRATION_SQL},
  {version: 3, description: 'identities and idempotency keys of events a cleanup deleted, so a late retry is not stored again', sql: PG_DELETED_EVENTS_MIGRATION_SQL},
  {
    version: 4,
    description: 'API keys: the sha256 of each token, its agent, role, expiry and revocation',
    sql: `
      CREATE TABLE api_keys (
        id text COLLATE "C" PRIMARY KEY,
        token_hash text NOT NULL UNIQUE,
        agent_id text NOT NULL,
        role text NOT NULL CHECK (role IN ('read', 'write', 'admin')),
        created_at text COLLATE "C" NOT NULL,
        expires_at text,
        revoked_at text
      );
    `,
  },
  {version: 5, description: "the workspace of each API key (keys made before are the default workspace's)", sql: KEYS_WORKSPACE_MIGRATION_SQL},
  {version: 6, description: 'audit log: pushes, conflicts, refused and masked secrets, forgotten events, project switches, keys', sql: PG_AUDIT_MIGRATION_SQL},
  {version: 7, description: OAUTH_MIGRATION_DESCRIPTION, sql: OAUTH_MIGRATION_SQL},
  {version: 8, description: 'appends in one round trip: the function jarvis_append_events', sql: PG_APPEND_FUNCTION_SQL},
  {version: 9, description: "each scope's live events by seq, for the snapshot's newest ones", sql: PG_LIVE_EVENTS_MIGRATION_SQL},
]

export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0

/** Advisory lock held while migrations run (EVENTS_LOCK is the event log's). */
const MIGRATION_LOCK = 0x6a61_7201
/** The NOTIFY channel of WebSocket broadcasts. */
const BROADCAST_CHANNEL = 'jarvis_broadcast'
/** How long a lost LISTEN connection waits before it connects again; doubled after each failed try, up to MAX_RELISTEN_MS. */
const RELISTEN_MS = 1000
const MAX_RELISTEN_MS = 8000
/** A NOTIFY payload must stay under 8000 bytes: broadcasts are sent in groups of at most this many bytes. */
const MAX_NOTIFY_BYTES = 7900
/** Commits written in one transaction at most; a group also stops growing past this many bytes of content. */
const MAX_COMMIT_GROUP = 128
const MAX_COMMIT_GROUP_BYTES = 16 * 1024 * 1024

const FILE_META = 'path, hash, rev, updated_at, author, seq, deleted'

interface FileRow {
  path: string
  content?: string | null
  hash: string | null
  rev: number
  updated_at: string
  author: string
  seq: number
  deleted: number
}

function toMeta(row: FileRow): FileMeta {
  return {path: row.path, rev: row.rev, hash: row.hash, updatedAt: row.updated_at, author: row.author, seq: row.seq, deleted: row.deleted === 1}
}

/** bigint (int8) and COUNT(*) as JS numbers: seqs stay far below 2^53. */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => (oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format))) as typeof pg.types.getTypeParser,
}

interface PendingCommit {
  request: CommitRequest
  author: string
  now: string
}

/** The current rows of the paths a group of commits names, and which of its idempotency keys are taken: one statement. */
const COMMIT_READ_SQL = `
  SELECT ${FILE_META}, NULL::text AS key FROM files WHERE path = ANY($1::text[])
  UNION ALL
  SELECT NULL::text, NULL::text, NULL::integer, NULL::text, NULL::text, NULL::bigint, NULL::smallint, key FROM idempotency_keys WHERE key = ANY($2::text[])`

/** Everything a group of commits writes, in one statement: the files, the idempotency keys, the seq and the audit entries. */
const COMMIT_WRITE_SQL = `
  WITH written AS (
    INSERT INTO files (path, content, hash, rev, deleted, updated_at, author, seq)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::smallint[], $6::text[], $7::text[], $8::bigint[])
    ON CONFLICT (path) DO UPDATE SET content = excluded.content, hash = excluded.hash, rev = excluded.rev,
      updated_at = excluded.updated_at, author = excluded.author, seq = excluded.seq, deleted = excluded.deleted
  ),
  keys AS (
    INSERT INTO idempotency_keys (key, seq, created_at) SELECT * FROM unnest($9::text[], $10::bigint[], $11::text[])
  ),
  state AS (
    UPDATE server_state SET seq = $12 WHERE id = 1 AND seq <> $12
  )
  INSERT INTO audit_log (at, agent, kind, paths, event_ids, count, detail)
  SELECT at, agent, kind, paths, event_ids, count, detail
  FROM unnest($13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::integer[], $19::text[]) WITH ORDINALITY AS t(at, agent, kind, paths, event_ids, count, detail, n)
  ORDER BY n RETURNING ${AUDIT_COLUMNS}`

/**
 * One statement, one snapshot: the seq and server id, the metadata of every path changed after `$1` (every path when
 * `$1` is null or beyond the seq: another database's history), and the rows of the paths `$2` (with content).
 */
const STATUS_SQL = `
  SELECT s.seq, s.server_id,
    COALESCE((
      SELECT json_agg(json_build_object('path', f.path, 'hash', f.hash, 'rev', f.rev, 'updated_at', f.updated_at, 'author', f.author, 'seq', f.seq, 'deleted', f.deleted) ORDER BY f.path)
      FROM files f WHERE f.seq > CASE WHEN $1::bigint IS NULL OR $1::bigint > s.seq THEN -1 ELSE $1::bigint END
    ), '[]'::json) AS files,
    COALESCE((
      SELECT json_agg(json_build_object('path', r.path, 'hash', r.hash, 'rev', r.rev, 'updated_at', r.updated_at, 'author', r.author, 'seq', r.seq, 'deleted', r.deleted, 'content', r.content))
      FROM files r WHERE r.path = ANY($2::text[])
    ), '[]'::json) AS read
  FROM server_state s WHERE s.id = 1`

/** The PostgreSQL schema of a workspace other than the default one (whose tables stay where they always were). */
export function workspaceSchema(workspace: string): string {
  // A workspace name is lower-case letters, digits and `-` (workspace-name.ts): `-` → `_` keeps names apart and quote-free.
  return `jarvis_ws_${workspace.replace(/-/g, '_')}`
}

/** How long a first connection may take before the database counts as not answering. */
const CONNECT_TIMEOUT_MS = 15_000

/** The error of a database jarvis cannot use, saying what to do where the reason is a known one. */
function unusableDatabase(url: string, error: unknown): JarvisError {
  const message = (error as Error).message
  // pg's words when the server asks for a password (SCRAM, md5) and none was given.
  const hint = /client password must be a string|password authentication failed|no password supplied/i.test(message)
    ? '; give the password in the URL (postgres://user:password@host/db), in PGPASSWORD, or in ~/.pgpass'
    : ''
  return new JarvisError(`cannot use the PostgreSQL database ${redactDatabaseUrl(url)}: ${message}${hint}`, {
    code: 'STORAGE',
    exit: ExitCode.failed,
    data: {database: redactDatabaseUrl(url)},
    cause: error,
  })
}

export interface PostgresStorageOptions {
  /** The workspace whose memory this is; default the default workspace (the database's own search_path). */
  workspace?: string
  /**
   * Whether a schema older than this jarvis's is brought up to date (default: the server and the commands that write)
   * or refused (false: the commands that only read, schema-version.ts).
   */
  migrate?: boolean
}

export class PostgresStorage implements ServerStorage {
  readonly url: string
  /** The schema of a non-default workspace, or undefined for the default one. */
  readonly schema: string | undefined
  private readonly pool: pg.Pool
  private readonly events: PostgresEventLog
  readonly oauth: PostgresOAuthStore
  private readonly commits: Batcher<PendingCommit, CommitOutcome>
  private readonly channel: string
  private readonly workspace: string
  private closed = false
  private listener: pg.Client | null = null

  private constructor(url: string, options: PostgresStorageOptions) {
    this.url = redactDatabaseUrl(url)
    const workspace = options.workspace ?? DEFAULT_WORKSPACE
    this.workspace = workspace
    this.schema = workspace === DEFAULT_WORKSPACE ? undefined : workspaceSchema(workspace)
    this.channel = this.schema === undefined ? BROADCAST_CHANNEL : `${this.schema}_broadcast`
    this.pool = new pg.Pool({
      connectionString: url,
      types: TYPES,
      // A workspace's own pool is small: a server may hold many (idle connections close after 10 s).
      max: this.schema === undefined ? 10 : 4,
      application_name: 'jarvis serve',
      // Only the workspace's schema is searched: a table missing there is an error, never another workspace's table.
      ...(this.schema === undefined ? {} : {options: `-c search_path=${this.schema}`}),
    })
    // An idle connection the server dropped must not end the process: the next query gets a new one.
    this.pool.on('error', (error) => debug('idle connection lost: %s', error.message))
    this.events = new PostgresEventLog({
      write: (work, options = {}) => this.transaction(work, {lock: EVENTS_LOCK, ...options}),
      read: (work) => this.transaction(work, {readOnly: true}),
      query: (name, text, values) => this.query(name, text, values),
    })
    this.oauth = new PostgresOAuthStore(this.pool, (work) => this.transaction(work))
    this.commits = new Batcher('commits', (group) => this.commitGroup(group), {
      maxItems: MAX_COMMIT_GROUP,
      sizeOf: ({request}) => [...request.writes.values()].reduce((sum, content) => sum + content.length, 0),
      maxBytes: MAX_COMMIT_GROUP_BYTES,
    })
  }

  /**
   * A connection of the pool, for one transaction: pg emits 'error' on a connection that ends while it is checked out
   * (a terminated backend, a failover, PostgreSQL stopped with `-m immediate`), and the pool listens only to idle ones.
   * Unheard, that 'error' ends the process with every request in it; heard, only the statement in flight fails (with
   * the same error: 503), and `release` destroys the connection rather than pool it again.
   */
  private async checkout(): Promise<{client: pg.PoolClient; release: (broken?: Error) => void}> {
    const client = await this.pool.connect()
    let lost: Error | undefined
    const onError = (error: Error) => {
      lost = error
      debug('connection lost while in use: %s', error.message)
    }
    client.on('error', onError)
    return {
      client,
      release: (broken) => {
        client.off('error', onError)
        client.release(broken ?? lost)
      },
    }
  }

  /** One statement on a pooled connection, prepared once per connection under `name` (the statement's text never changes). */
  private async query<R>(name: string, text: string, values: unknown[]): Promise<R[]> {
    return (await this.pool.query({name, text, values})).rows as R[]
  }

  /**
   * Connects, and brings the schema up to date (once, even when several processes start together); with `migrate:
   * false`, refuses a schema that is not this jarvis's instead, changing nothing.
   */
  static async open(url: string, options: PostgresStorageOptions = {}): Promise<PostgresStorage> {
    // One connection of its own first, ended whatever happens: a connection that fails half-way (a SCRAM login
    // without a password) leaves its socket open inside the pool, and the process would never exit.
    await PostgresStorage.ask(url, 'SELECT 1', [])
    const storage = new PostgresStorage(url, options)
    try {
      if (options.migrate ?? true) await storage.migrate()
      else await storage.assertCurrentSchema()
    } catch (error) {
      await storage.pool.end().catch(() => {})
      if (error instanceof JarvisError) throw error
      throw unusableDatabase(url, error)
    }
    return storage
  }

  /**
   * Runs `work` in one transaction (REPEATABLE READ read-only for reads; under an advisory lock when given). BEGIN,
   * the lock, `first` (a constant statement: no parameters) and `read` (a statement whose parameters do not depend
   * on `first`) go to the database in one round trip, and the rows of `first` and `read` are handed to `work`; `last`
   * sends the last statement of `work` with the COMMIT (postgres-pipeline.ts). `batch`: a failed COMMIT is thrown as
   * CommitFailed (its outcome is unknown).
   */
  private async transaction<T>(
    work: (client: pg.PoolClient, first: Record<string, unknown>[], last: Last, read: Record<string, unknown>[]) => Promise<T>,
    options: {readOnly?: boolean; lock?: number; first?: string; read?: Statement; batch?: boolean} = {},
  ): Promise<T> {
    const {client, release} = await this.checkout()
    let broken: Error | undefined
    // The last statement of `work` goes with the COMMIT: one round trip less. Once it was sent, the transaction is
    // over whatever `work` does next.
    let sentLast = false
    let committed = false
    const last: Last = async <R extends pg.QueryResultRow>(statement: Parameters<Last>[0]) => {
      if (sentLast) throw new Error('a transaction has one last statement')
      sentLast = true
      try {
        const result = await runThenCommit<R>(client, statement)
        committed = true
        return result
      } catch (error) {
        if (!(error instanceof LastStatementFailed)) throw error
        if (error.stage === 'statement') throw error.cause
        throw options.batch ? new CommitFailed(error.cause) : error.cause
      }
    }
    try {
      const begin = [options.readOnly ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN']
      if (options.lock !== undefined) {
        // The migration lock is one for the database; the event log's is a workspace's own (its schema's, a name of
        // lower-case letters, digits and `_`).
        const lock = Number(options.lock)
        begin.push(this.schema === undefined || lock === MIGRATION_LOCK ? `SELECT pg_advisory_xact_lock(${lock})` : `SELECT pg_advisory_xact_lock(${lock}, hashtext(${pg.escapeLiteral(this.schema)}))`)
      }
      if (options.first !== undefined) begin.push(options.first)
      let results: pg.QueryResult[]
      let read: Record<string, unknown>[] = []
      if (options.read === undefined) {
        const started = await client.query(begin.join('; '))
        results = Array.isArray(started) ? (started as pg.QueryResult[]) : [started]
      } else {
        const started = await runAfter(client, begin, options.read)
        results = started.leading
        read = started.result.rows
      }
      const result = await work(client, options.first === undefined ? [] : (results.at(-1)?.rows ?? []), last, read)
      if (committed) return result
      if (sentLast) throw new Error('the last statement of the transaction failed, and its error was not passed on')
      try {
        await client.query('COMMIT')
      } catch (error) {
        throw options.batch ? new CommitFailed(error) : error
      }
      return result
    } catch (error) {
      // Committed, and then `work` failed: what is stored is not what its caller is told; a batch must not try its
      // items again one by one, as it would for a transaction that stored nothing.
      if (committed) throw options.batch && !(error instanceof CommitFailed) ? new CommitFailed(error) : error
      await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError))
      throw error
    } finally {
      release(broken)
    }
  }

  /**
   * Refuses a database another application already uses: its own `schema_migrations` (Rails, Django, Flyway keep
   * one), or tables named as jarvis's without jarvis's migrations. Told "newer than this jarvis; upgrade" or "relation
   * files already exists", the user would look in the wrong place; nothing of the other application is changed.
   */
  private async assertOwnDatabase(client: pg.PoolClient | pg.Pool): Promise<void> {
    const {rows} = await client.query<{columns: string[]; files: boolean; count: number}>(
      `SELECT array(SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'schema_migrations') AS columns,
         to_regclass('files') IS NOT NULL AS files, (SELECT count(*)::int FROM schema_migrations) AS count`,
    )
    const [found] = rows
    const ours = ['version', 'description', 'applied_at'].every((column) => found.columns.includes(column))
    const why = !ours ? 'its schema_migrations table is not the one jarvis keeps' : found.count === 0 && found.files ? 'it has a files table that jarvis did not make' : null
    if (why === null) return
    throw new JarvisError(`the PostgreSQL database ${this.url} is used by another application (${why}); give jarvis a database of its own (CREATE DATABASE jarvis)`, {
      code: 'STORAGE',
      exit: ExitCode.failed,
      data: {database: this.url},
    })
  }

  /** A schema written by a newer jarvis is refused: this one does not know its tables. */
  private assertNotNewer(version: number): void {
    if (version <= POSTGRES_SCHEMA_VERSION) return
    throw new JarvisError(`the PostgreSQL database ${this.url} has schema version ${version}, newer than this jarvis (${POSTGRES_SCHEMA_VERSION}); upgrade jarvis`, {
      code: 'STORAGE_VERSION',
      exit: ExitCode.failed,
      data: {database: this.url, version},
    })
  }

  /** Refuses a schema older or newer than this jarvis's, changing nothing (schema-version.ts). */
  private async assertCurrentSchema(): Promise<void> {
    const present = (await this.pool.query<{present: boolean}>("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")).rows[0]?.present === true
    if (present) await this.assertOwnDatabase(this.pool)
    const applied = new Set(present ? (await this.pool.query<{version: number}>('SELECT version FROM schema_migrations')).rows.map((row) => row.version) : [])
    this.assertNotNewer(Math.max(0, ...applied))
    const missing = MIGRATIONS.find((migration) => !applied.has(migration.version))
    if (missing) {
      const where = this.schema === undefined ? `the PostgreSQL database ${this.url}` : `the schema ${this.schema} of the PostgreSQL database ${this.url}`
      throw olderSchemaRefusal(where, missing.version - 1, POSTGRES_SCHEMA_VERSION, this.workspace, {database: this.url})
    }
  }

  private async migrate(): Promise<void> {
    await this.transaction(
      async (client) => {
        if (this.schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`)
        await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, description text NOT NULL, applied_at text NOT NULL)')
        await this.assertOwnDatabase(client)
        const applied = new Set((await client.query<{version: number}>('SELECT version FROM schema_migrations')).rows.map((row) => row.version))
        this.assertNotNewer(Math.max(0, ...applied))
        for (const migration of MIGRATIONS) {
          if (applied.has(migration.version)) continue
          debug('applying migration %d: %s', migration.version, migration.description)
          await client.query(migration.sql)
          await client.query('INSERT INTO schema_migrations (version, description, applied_at) VALUES ($1, $2, $3)', [migration.version, migration.description, new Date().toISOString()])
        }
      },
      {lock: MIGRATION_LOCK},
    )
  }

  // Memory files.

  async status(since?: number, alsoRead: readonly string[] = []): Promise<StatusSnapshot> {
    const [state] = await this.query<{seq: number; server_id: string; files: FileRow[]; read: (FileRow & {content: string | null})[]}>('jarvis_status', STATUS_SQL, [since ?? null, [...alsoRead]])
    const seq = Number(state?.seq ?? 0)
    return {
      seq,
      serverId: state?.server_id ?? '',
      // A since beyond the seq comes from another database (wiped, restored): everything was answered.
      full: since === undefined || since > seq,
      files: (state?.files ?? []).map(toMeta),
      read: new Map((state?.read ?? []).map((row) => [row.path, {...toMeta(row), content: row.content}])),
    }
  }

  async read(paths: readonly string[]): Promise<Map<string, FileRecord>> {
    const rows = await this.query<FileRow & {content: string | null}>('jarvis_read', `SELECT ${FILE_META}, content FROM files WHERE path = ANY($1::text[])`, [[...paths]])
    return new Map(rows.map((row) => [row.path, {...toMeta(row), content: row.content}]))
  }

  async seq(): Promise<number> {
    return (await this.pool.query<{seq: number}>('SELECT seq FROM server_state WHERE id = 1')).rows[0]?.seq ?? 0
  }

  async hasCommitted(idempotencyKey: string): Promise<boolean> {
    return ((await this.pool.query('SELECT 1 FROM idempotency_keys WHERE key = $1', [idempotencyKey])).rowCount ?? 0) > 0
  }

  commit(request: CommitRequest, author: string, now: string): Promise<CommitOutcome> {
    return this.commits.submit({request, author, now})
  }

  /**
   * A group of commits in one transaction, in the order they came. The lock on the one state row serializes groups
   * of every process: the rows read after it are the last commit's. Each commit is then planned (commit-rules.ts) on
   * the rows as the commits before it in the group left them — its idempotency key, its bases, its new revisions
   * and seq — exactly as if it ran alone after them; and everything the group writes goes in one statement.
   */
  private commitGroup(group: readonly PendingCommit[]): Promise<CommitOutcome[]> {
    // The paths and keys the group names are read in the round trip of BEGIN and the lock (after the lock).
    const paths = [...new Set(group.flatMap(({request}) => [...request.writes.keys(), ...request.deletes]))]
    const keys = group.map(({request}) => request.idempotencyKey).filter((key): key is string => key !== undefined)
    return this.transaction(
      async (_client, locked, last, found) => {
        let seq = Number(locked[0]?.seq ?? 0)
        const current = new Map<string, FileMeta>()
        const taken = new Set<string>()
        for (const row of found as unknown as (FileRow & {key: string | null})[]) {
          if (row.key !== null) taken.add(row.key)
          else current.set(row.path, toMeta(row))
        }
        const files = new Map<string, {path: string; content: string | null; hash: string | null; rev: number; deleted: boolean; now: string; author: string; seq: number}>()
        const newKeys: {key: string; seq: number; now: string}[] = []
        const entries: NewAuditEntry[] = []
        const planned: {outcome: CommitOutcome; entries: number}[] = []
        const seqBefore = seq
        for (const {request, author, now} of group) {
          if (request.idempotencyKey !== undefined && taken.has(request.idempotencyKey)) {
            planned.push({outcome: {ok: true, seq, duplicate: true, written: [], deleted: [], unchanged: [], unknown: []}, entries: 0})
            continue
          }
          const plan = planCommit(request, current, seq, author, now)
          const outcome: CommitOutcome = plan.ok ? plan.result : plan
          if (plan.ok) {
            for (const row of plan.rows) {
              files.set(row.path, {...row, now, author, seq: plan.result.seq})
              current.set(row.path, {path: row.path, rev: row.rev, hash: row.hash, updatedAt: now, author, seq: plan.result.seq, deleted: row.deleted})
            }
            seq = plan.result.seq
            if (request.idempotencyKey !== undefined) {
              newKeys.push({key: request.idempotencyKey, seq, now})
              taken.add(request.idempotencyKey)
            }
          }
          const audit = commitAuditEntries(request, outcome, author, now)
          entries.push(...audit)
          planned.push({outcome, entries: audit.length})
        }
        if (files.size === 0 && newKeys.length === 0 && entries.length === 0 && seq === seqBefore) return planned.map(({outcome}) => outcome)
        const rows = [...files.values()]
        const audit = entries.map(auditValues)
        const written = await last<AuditRow>({
          name: 'jarvis_commit_write',
          text: COMMIT_WRITE_SQL,
          values: [
            rows.map((row) => row.path),
            rows.map((row) => row.content),
            rows.map((row) => row.hash),
            rows.map((row) => row.rev),
            rows.map((row) => (row.deleted ? 1 : 0)),
            rows.map((row) => row.now),
            rows.map((row) => row.author),
            rows.map((row) => row.seq),
            newKeys.map((row) => row.key),
            newKeys.map((row) => row.seq),
            newKeys.map((row) => row.now),
            seq,
            ...[0, 1, 2, 3, 4, 5, 6].map((column) => audit.map((values) => values[column])),
          ],
        })
        // The entries got their seqs in the order they were listed: handed back to their commits in that order.
        const stored = written.rows.map(toAuditEntry).sort((a, b) => a.seq - b.seq)
        let next = 0
        return planned.map(({outcome, entries: count}) => {
          if (count === 0) return outcome
          const audit = stored.slice(next, next + count)
          next += count
          return {...outcome, audit}
        })
      },
      {first: 'SELECT seq FROM server_state WHERE id = 1 FOR UPDATE', read: {name: 'jarvis_commit_read', text: COMMIT_READ_SQL, values: [paths, keys]}, batch: true},
    )
  }

  // The audit log (postgres-audit.ts).

  async appendAudit(entries: readonly NewAuditEntry[]): Promise<AuditEntry[]> {
    return this.transaction((client) => insertAudit(client, entries))
  }

  queryAudit(query: AuditQuery): Promise<AuditEntry[]> {
    return selectAudit(this.pool, query)
  }

  // The event log (postgres-events.ts).

  findDuplicate(identity: string, idempotencyKey?: string): Promise<EarlierAppend | null> {
    return this.events.findDuplicate(identity, idempotencyKey)
  }

  appendEvent(request: AppendEventRequest): Promise<AppendEventOutcome> {
    return this.events.appendEvent(request)
  }

  snapshotEvents(scopes: readonly string[], limitRecent: number, maxPinsPerScope: number): Promise<SnapshotRows> {
    return this.events.snapshotEvents(scopes, limitRecent, maxPinsPerScope)
  }

  queryEvents(query: EventQuery): Promise<EventQueryResult> {
    return this.events.queryEvents(query)
  }

  janitorInput(visible: ScopeFilter, maxUnscanned: number): Promise<JanitorInput> {
    return this.events.janitorInput(visible, maxUnscanned)
  }

  applyConsolidation(changes: ConsolidationChanges): Promise<ConsolidationApplied> {
    return this.events.applyConsolidation(changes)
  }

  cleanupCandidates(query: CleanupQuery, limit: number): Promise<{candidates: CleanupCandidate[]; total: number}> {
    return this.events.cleanupCandidates(query, limit)
  }

  deleteEvents(eventIds: readonly string[], query: CleanupQuery): Promise<string[]> {
    return this.events.deleteEvents(eventIds, query)
  }

  importEvents(events: readonly ImportedEvent[]): Promise<string[]> {
    return this.events.importEvents(events)
  }

  countEvents(): Promise<number> {
    return this.events.countEvents()
  }

  // API keys.

  async addKey(key: ApiKey, tokenHash: string): Promise<void> {
    await this.pool.query('INSERT INTO api_keys (id, token_hash, workspace, agent_id, role, created_at, expires_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
      key.id,
      tokenHash,
      key.workspace,
      key.agentId,
      key.role,
      key.createdAt,
      key.expiresAt,
      key.revokedAt,
    ])
  }

  async listKeys(): Promise<ApiKey[]> {
    return (await this.pool.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY created_at, id`)).rows.map(toKey)
  }

  async revokeKey(id: string, now: string): Promise<ApiKey | null> {
    await this.pool.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now, id])
    const row = (await this.pool.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1`, [id])).rows[0]
    return row ? toKey(row) : null
  }

  async keyByTokenHash(tokenHash: string): Promise<ApiKey | null> {
    const row = (await this.pool.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE token_hash = $1`, [tokenHash])).rows[0]
    return row ? toKey(row) : null
  }

  /** Whether the schema of workspace `workspace` exists in the database of `url` (the default one always does). */
  static async hasWorkspace(url: string, workspace: string): Promise<boolean> {
    if (workspace === DEFAULT_WORKSPACE) return true
    return PostgresStorage.ask(url, 'SELECT 1 FROM pg_namespace WHERE nspname = $1', [workspaceSchema(workspace)])
  }

  /** Whether a jarvis server ever set up the database of `url` (its migrations table is there), without setting it up. */
  static async hasServerData(url: string): Promise<boolean> {
    return PostgresStorage.ask(url, "SELECT 1 WHERE to_regclass('schema_migrations') IS NOT NULL", [])
  }

  /**
   * Drops the schema of workspace `workspace` (never the default one's) with everything in it: for an import into a new
   * workspace that failed, which must leave no workspace behind.
   */
  static async dropWorkspace(url: string, workspace: string): Promise<void> {
    if (workspace === DEFAULT_WORKSPACE) throw new Error('the default workspace is never dropped')
    await PostgresStorage.ask(url, `DROP SCHEMA IF EXISTS ${workspaceSchema(workspace)} CASCADE`, [])
  }

  /** Whether `sql` finds a row, on a connection of its own. */
  private static async ask(url: string, sql: string, values: unknown[]): Promise<boolean> {
    // A server that takes the connection and never answers is an error after a while, not a wait for ever.
    const client = new pg.Client({connectionString: url, application_name: 'jarvis serve', connectionTimeoutMillis: CONNECT_TIMEOUT_MS})
    // The statement in flight fails with the same error when the connection ends.
    client.on('error', () => {})
    try {
      await client.connect()
      return ((await client.query(sql, values)).rowCount ?? 0) > 0
    } catch (error) {
      throw unusableDatabase(url, error)
    } finally {
      await client.end().catch(() => {})
    }
  }

  async ping(): Promise<boolean> {
    if (this.closed) return false
    try {
      return (await this.pool.query('SELECT seq FROM server_state WHERE id = 1')).rowCount === 1
    } catch {
      return false
    }
  }

  // Export and import (dump.ts): the same rows as the SQLite storage's.

  /**
   * The tally, then every row of `tables` (the keys of workspace `keysOf` only; null: every workspace's), read in one
   * REPEATABLE READ transaction (a consistent copy while servers write), a page at a time.
   */
  async *dumpRows(tables: readonly DumpTable[] = DUMP_TABLES, keysOf: string | null = DEFAULT_WORKSPACE): AsyncGenerator<DumpItem> {
    const {client, release} = await this.checkout()
    let committed = false
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
      const counts: DumpTally['counts'] = {}
      for (const table of tables) counts[table] = Number((await client.query<{n: number}>(`SELECT COUNT(*) AS n FROM ${table} ${dumpFilter(table, keysOf)}`)).rows[0]?.n ?? 0)
      yield {counts}
      for (const table of tables) {
        const columns = table === 'memory_events' ? EVENT_COLUMNS : '*'
        await client.query(`DECLARE dump_rows NO SCROLL CURSOR FOR SELECT ${columns} FROM ${table} ${dumpFilter(table, keysOf)} ORDER BY ${DUMP_ORDER[table]}`)
        for (;;) {
          const page = await client.query<Record<string, unknown>>('FETCH 500 FROM dump_rows')
          for (const row of page.rows) yield {table, row}
          if (page.rows.length < 500) break
        }
        await client.query('CLOSE dump_rows')
      }
      await client.query('COMMIT')
      committed = true
    } finally {
      // Failed, or left before its end (a reader that stopped): the transaction is ended before the connection is pooled again.
      let broken: Error | undefined
      if (!committed) await client.query('ROLLBACK').catch((error: Error) => (broken = error))
      release(broken)
    }
  }

  /** Loads a dump into this database, which must hold no file, event or default-workspace key yet; all or nothing. */
  async loadRows(rows: AsyncIterable<{row: DumpRow; where: string}>): Promise<Record<DumpTable, number>> {
    return this.transaction(
      async (client) => {
        // Locked before the emptiness check, so two imports cannot both find it empty.
        await client.query('LOCK TABLE files, memory_events, api_keys, audit_log IN EXCLUSIVE MODE')
        const counts = (await client.query<{n: number}>(EMPTY_BEFORE_IMPORT)).rows[0]
        if ((counts?.n ?? 0) > 0) {
          const where = this.schema === undefined ? `the PostgreSQL database ${this.url}` : `the schema ${this.schema} of the PostgreSQL database ${this.url}`
          throw new BadInputError(`${where} already holds memory: import into a new database or workspace`, {database: this.url})
        }
        const known = new Map<string, Set<string>>()
        const columns = await client.query<{table_name: string; column_name: string}>(
          "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ANY($1::text[]) AND column_name <> 'fts'",
          [[...DUMP_TABLES]],
        )
        for (const {table_name, column_name} of columns.rows) known.set(table_name, (known.get(table_name) ?? new Set()).add(column_name))
        const imported = Object.fromEntries(DUMP_TABLES.map((table) => [table, 0])) as Record<DumpTable, number>
        for await (const {row: {table, row}, where} of rows) {
          const names = Object.keys(row)
          const unknown = names.find((name) => !known.get(table)?.has(name))
          if (unknown !== undefined) throw new Error(`${where}: ${table} has no column ${JSON.stringify(unknown)}`)
          const values = names.map((name) => row[name])
          let sql: string
          if (table === 'server_state') {
            // The one row exists from the first migration: it is replaced, not added.
            sql = `UPDATE server_state SET ${names.map((name, index) => `${name} = $${index + 1}`).join(', ')} WHERE id = 1`
          } else if (table === 'memory_events') {
            values.push(tsText(String(row.content_md)), tsText(String(row.dedupe_key)))
            sql = `INSERT INTO memory_events (${names.join(', ')}, fts) VALUES (${names.map((_, index) => `$${index + 1}`).join(', ')}, ${FTS_VALUE(`$${names.length + 1}`, `$${names.length + 2}`)})`
          } else {
            sql = `INSERT INTO ${table} (${names.join(', ')}) VALUES (${names.map((_, index) => `$${index + 1}`).join(', ')})`
          }
          try {
            await client.query(sql, values)
          } catch (error) {
            throw new Error(`${where}: ${table}: ${(error as Error).message}`)
          }
          imported[table]++
        }
        // The next event and audit entry get a seq after the imported ones.
        await client.query("SELECT setval(pg_get_serial_sequence('memory_events', 'seq'), COALESCE((SELECT MAX(seq) FROM memory_events), 0) + 1, false)")
        await client.query("SELECT setval(pg_get_serial_sequence('audit_log', 'seq'), COALESCE((SELECT MAX(seq) FROM audit_log), 0) + 1, false)")
        return imported
      },
      {lock: EVENTS_LOCK},
    )
  }

  // Broadcasts between processes.

  /**
   * Publishes with pg_notify and listens on a connection of its own; messages this process sent are not delivered
   * back. Broadcasts are sent in groups: while one NOTIFY is under way, the next messages wait and go together in the
   * next (one notification of at most MAX_NOTIFY_BYTES, a JSON list), on the listening connection, which commits
   * without waiting for the WAL flush (a notification is a hint, not data: a lost one loses nothing, and the
   * memory it announces is on disk already).
   */
  readonly relay: BroadcastRelay = (() => {
    const origin = randomBytes(8).toString('hex')
    const pending: string[] = []
    let sending: Promise<void> | null = null
    const send = async (): Promise<void> => {
      while (pending.length > 0) {
        // Sized as they go in the payload: each message a JSON string (quotes escaped), separated by commas.
        const group: string[] = []
        let bytes = Buffer.byteLength(JSON.stringify({origin, data: []}))
        while (pending.length > 0) {
          const size = Buffer.byteLength(JSON.stringify(pending[0])) + 1
          if (group.length > 0 && bytes + size > MAX_NOTIFY_BYTES) break
          bytes += size
          group.push(pending.shift() as string)
        }
        const via: pg.Client | pg.Pool = this.listener ?? this.pool
        try {
          await via.query({name: 'jarvis_notify', text: 'SELECT pg_notify($1, $2)', values: [this.channel, JSON.stringify({origin, data: group})]})
        } catch (error) {
          // A lost NOTIFY loses no data: a --watch client of another process catches up at its next sync.
          debug('broadcast of %d messages to the other processes failed: %s', group.length, (error as Error).message)
        }
      }
    }
    // Started after this turn: the messages published in it (a fan-out's write) go in one NOTIFY.
    const start = (): Promise<void> =>
      (sending = Promise.resolve()
        .then(send)
        .finally(() => {
          sending = null
          // Published between the last NOTIFY and now: sent too.
          if (pending.length > 0) void start()
        }))
    return {
      publish: (data: string) => {
        pending.push(data)
        return sending ?? start()
      },
      subscribe: (deliver: (data: string) => void) => this.listen(origin, deliver),
    }
  })()

  private async listen(origin: string, deliver: (data: string) => void): Promise<void> {
    if (this.closed) return
    const client = new pg.Client({connectionString: this.pool.options.connectionString, types: TYPES, application_name: 'jarvis serve (broadcasts)'})
    // This session's own NOTIFYs come back to it: told by the payload's first bytes (JSON.stringify puts `origin`
    // first), without parsing what it sent.
    const own = JSON.stringify({origin, data: []}).slice(0, -'"data":[]}'.length)
    client.on('notification', (message) => {
      if (message.channel !== this.channel || message.payload === undefined || message.payload.startsWith(own)) return
      try {
        // A list of messages; one message alone from a process of an earlier version.
        const note = JSON.parse(message.payload) as {origin?: string; data?: unknown}
        if (note.origin === origin) return
        for (const data of Array.isArray(note.data) ? note.data : [note.data]) if (typeof data === 'string') deliver(data)
      } catch (error) {
        debug('unreadable broadcast: %s', (error as Error).message)
      }
    })
    client.on('error', (error) => {
      debug('broadcast connection lost: %s', error.message)
      client.end().catch(() => {})
      // Only a connection that was listening is replaced from here; one lost while connecting fails its listen(),
      // whose caller tries again: two handlers retrying would make two listeners, and every broadcast heard twice.
      if (this.listener !== client) return
      this.listener = null
      this.listenAgain(origin, deliver, RELISTEN_MS)
    })
    try {
      await client.connect()
      // It also sends this process's broadcasts (relay): a NOTIFY commits without waiting for the WAL flush.
      await client.query(`SET synchronous_commit = off; LISTEN ${this.channel}`)
    } catch (error) {
      await client.end().catch(() => {})
      throw error
    }
    if (this.closed) {
      await client.end()
      return
    }
    this.listener = client
  }

  /**
   * Listens again after `delayMs`, and keeps trying, each wait twice the last up to MAX_RELISTEN_MS, until it
   * listens or the storage is closed: a database restarting takes longer than one wait. Broadcasts sent meanwhile
   * are missed; a --watch client catches up at its next sync.
   */
  private listenAgain(origin: string, deliver: (data: string) => void, delayMs: number): void {
    if (this.closed) return
    setTimeout(() => {
      this.listen(origin, deliver).catch((error: Error) => {
        debug('listen again failed: %s', error.message)
        this.listenAgain(origin, deliver, Math.min(delayMs * 2, MAX_RELISTEN_MS))
      })
    }, delayMs).unref()
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    const listener = this.listener
    this.listener = null
    await listener?.end().catch(() => {})
    await this.pool.end()
  }
}
