/**
 * The storage behind `jarvis serve`, as an interface so that a PostgreSQL backend can follow the
 * embedded SQLite one (docs/decisions/server-stack.md).
 *
 * Every method is async even though better-sqlite3 is synchronous: a networked backend needs it, and
 * the routes must not depend on a write finishing within one tick.
 *
 * Model: a flat map of `.memory/`-relative paths to text files. Each file carries a per-file revision
 * (`rev`, 1 on creation, +1 on every change including deletion, never reset), the sha256 hex of its
 * UTF-8 bytes, `updatedAt` (server time, ISO 8601), the agent that wrote it, and the server-wide change
 * sequence (`seq`) of the commit that last touched it. A deletion leaves a tombstone (`deleted: true`,
 * no content, no hash) whose rev continues the file's history.
 */
import type {OAuthStorage} from './oauth-types.js'

/** Metadata of one path, live or tombstone. */
export interface FileMeta {
  path: string
  rev: number
  /** sha256 hex of the content; `null` for a tombstone. */
  hash: string | null
  updatedAt: string
  author: string
  /** The change sequence of the commit that last wrote or deleted this path. */
  seq: number
  deleted: boolean
}

/** One path with its content (`null` for a tombstone). */
export interface FileRecord extends FileMeta {
  content: string | null
}

export interface StatusSnapshot {
  /** The server-wide change sequence: the seq of the newest commit that changed anything (0 when empty). */
  seq: number
  /**
   * Random id of this database, fixed at creation. A client that recorded a different one must not use its
   * `since`: the seqs belong to another history (a wiped or replaced server).
   */
  serverId: string
  /** True when `files` lists every path: no `since`, or a `since` greater than `seq` (which cannot be this history's). */
  full: boolean
  /** Every path (live and tombstones) whose seq is greater than `since`, or all of them (see `full`). */
  files: FileMeta[]
  /** The records of the paths asked to be read with the status (`alsoRead`), as of the same moment; absent ones are not there. */
  read: Map<string, FileRecord>
}

/** Expected revision of a path: a number, or `null` / `0` for "I believe it does not exist". */
export type BaseRev = number | null

export interface CommitRequest {
  /** path → new content. Paths are already normalised by `checkRelativePath`. */
  writes: ReadonlyMap<string, string>
  /** Paths to delete (tombstone). A path that is not live is a no-op. */
  deletes: readonly string[]
  /**
   * Optimistic concurrency: for each path of `writes`/`deletes` that has an entry here, the expected
   * current revision. A path without an entry is written unconditionally (last writer wins).
   */
  base: ReadonlyMap<string, BaseRev>
  /**
   * When set, the commit is done at most once: a second commit with the same key changes nothing and
   * answers `{ok: true, duplicate: true}`. Used by sync-task (`sync-task:<agent>:<taskId>`).
   */
  idempotencyKey?: string
  /**
   * What the audit log records of this commit, in the commit's own transaction: a `push` (when anything changed)
   * or a `switch-project`; a `conflict` when a base is stale, or for the paths the client says it `merged` with a
   * newer server version before pushing. Absent: nothing is recorded (sync-task).
   */
  audit?: {kind: 'push' | 'switch-project'; detail?: string; merged?: readonly string[]}
}

export interface CommitResult {
  ok: true
  /** The server seq after this commit (unchanged when the commit changed nothing). */
  seq: number
  /** True when nothing was written because `idempotencyKey` had already been committed. */
  duplicate: boolean
  /** Paths written by this commit, with their new metadata. */
  written: FileMeta[]
  /** Paths turned into tombstones by this commit. */
  deleted: FileMeta[]
  /** Writes whose content equalled the live content, and deletes of a tombstone: nothing changed. */
  unchanged: FileMeta[]
  /** Deletes of a path the server has never seen: nothing changed. */
  unknown: string[]
  /** The audit entries recorded with it (request.audit set and something changed), oldest first. */
  audit?: AuditEntry[]
}

export interface CommitStale {
  ok: false
  /** Paths whose `base` did not match, sorted. Nothing was written. */
  stale: string[]
  /** The `conflict` audit entry recorded (request.audit set). */
  audit?: AuditEntry[]
}

export type CommitOutcome = CommitResult | CommitStale

export interface MemoryStorage {
  /**
   * Metadata of every path changed after `since` (all paths without it), with the current seq, read consistently;
   * and, read in the same view, the records of `alsoRead` (the server's status names the active project).
   */
  status(since?: number, alsoRead?: readonly string[]): Promise<StatusSnapshot>
  /** The records of the given paths; a path the server has never seen is absent from the map. */
  read(paths: readonly string[]): Promise<Map<string, FileRecord>>
  /**
   * Applies writes and deletes as ONE transaction: every base matches and all of it is stored, with one
   * new seq shared by every changed path, or nothing is stored.
   *
   * Base rule for a path with a base entry `b`:
   * - live at rev r: matches when b === r; a write of content identical to the live content always
   *   matches (both sides already agree) and changes nothing;
   * - tombstone at rev r: matches when b === r, null or 0; deleting a tombstone always matches (no-op);
   * - never seen: matches when b is null or 0; deleting it is a no-op.
   */
  commit(request: CommitRequest, author: string, now: string): Promise<CommitOutcome>
  /** The current server-wide change sequence (cheap: no file list). */
  seq(): Promise<number>
  /** Whether an idempotency key has been committed. */
  hasCommitted(idempotencyKey: string): Promise<boolean>
  /** Closes the backend; the instance is unusable afterwards. Idempotent. */
  close(): Promise<void>
}

// ---------------------------------------------------------------------------------------------------------
// The shared event log (docs/event-log.md, seed 001): append-only memory events, their pins and a text index.
// ---------------------------------------------------------------------------------------------------------

/**
 * A set of scopes: a scope belongs to it when it equals one of `exact` or starts with one of `prefixes`.
 * The storage knows nothing of who may read what; the service turns the rules (events/rules.ts) into
 * filters like `{exact: ['global', 'agent:claude'], prefixes: ['project:']}`.
 */
export interface ScopeFilter {
  exact: readonly string[]
  prefixes: readonly string[]
}

export function scopeMatches(filter: ScopeFilter, scope: string): boolean {
  return filter.exact.includes(scope) || filter.prefixes.some((prefix) => scope.startsWith(prefix))
}

/** What an append stores; the storage adds `seq`, `event_id` and the flags. */
export interface NewEvent {
  agent_id: string
  run_id: string
  scope: string
  kind: string
  dedupe_key: string
  confidence: 'high' | 'med' | 'low'
  content_md: string
  source: Record<string, unknown>
  supersedes: string | null
  ttl_days: number
}

/** An event as the storage holds it. `seq` is the storage's insertion order: the newest event has the highest. */
export interface EventRecord extends NewEvent {
  seq: number
  event_id: string
  /** Server time of the append, ISO 8601 UTC with milliseconds; never earlier than the previous append's. */
  created_at: string
  /** sha256 hex of `content_md` as stored (changes when the janitor masks it). */
  content_hash: string
  /** Superseded by a later event: never pinned again. */
  deprecated: boolean
  /** The janitor replaced sensitive text in it. */
  masked: boolean
  /** The janitor found it past its ttl_days. */
  ttl_candidate: boolean
  /** The secret/PII scan has seen it (every append is scanned; bulk imports are not). */
  scanned: boolean
}

export interface AppendEventRequest {
  event: NewEvent
  /** sha256 hex of the event's identity (events/rules.ts eventIdentity): the same event is stored once. */
  identity: string
  /** `<agent>:<Idempotency-Key header>` when the client sent one: a second append with it stores nothing. */
  idempotencyKey?: string
  /** sha256 hex of `content_md`. */
  contentHash: string
  /** The scopes the writer may see: a `supersedes` target outside them is treated as missing. */
  visible: ScopeFilter
  /** Server time, ISO 8601 UTC. */
  now: string
  /** Whether the secret/PII scan has seen it (true for every append through the server). */
  scanned: boolean
}

export type AppendEventOutcome =
  | {
      status: 'created'
      event: EventRecord
      /** The live event that was pinned for this scope and dedupe_key before (the one this event replaces), if any. */
      replaced: EventRecord | null
      /** The `supersedes` target as it was before this append (it is deprecated now). */
      superseded: EventRecord | null
      /** How many events this agent has appended in this run_id, this one included. */
      runCount: number
    }
  /** Stored before (same identity, or same idempotency key with the same identity): nothing was written. */
  | {status: 'duplicate'; event: EventRecord}
  /** The idempotency key was used for a different event: nothing was written. */
  | {status: 'key_reused'; event: EventRecord}
  /** Stored before and since deleted by a cleanup: a late retry, nothing was written. */
  | DeletedDuplicate
  /** `supersedes` names no event the writer can see: nothing was written. */
  | {status: 'supersedes_missing'}

/** An event a cleanup deleted: its identity and idempotency key are remembered, so a late retry is not stored again. */
export interface DeletedDuplicate {
  status: 'deleted'
  event_id: string
  deleted_at: string
}

/** What an append finds of an earlier one: the same event stored, its key used for another, or it deleted since. */
export type EarlierAppend = {status: 'duplicate' | 'key_reused'; event: EventRecord} | DeletedDuplicate

export interface EventQuery {
  /** Scopes the caller may read (always applied). */
  visible: ScopeFilter
  /** Further narrowing by scope (the `scope` parameter), if any. */
  scope?: ScopeFilter
  kind?: string
  dedupeKey?: string
  agentId?: string
  /** created_at >= since (ISO 8601 UTC). */
  since?: string
  /** created_at < until (ISO 8601 UTC). */
  until?: string
  /** Full-text query as the user typed it; results are then ranked by relevance. */
  text?: string
  includeDeprecated: boolean
  limit: number
}

export interface EventQueryResult {
  /** Newest first, or best match first with `text` (then `score` is set: higher is better). */
  events: (EventRecord & {score?: number})[]
  /** How many events match, ignoring `limit`. */
  total: number
}

export interface SnapshotRows {
  /** For each scope, the newest live event of each dedupe_key: the first `maxPinsPerScope` keys in key order. */
  pinned: EventRecord[]
  /**
   * For each scope, the `limitRecent` newest live events other than conflict_resolution events, and apart the
   * `limitRecent` newest live conflict_resolution events: a settled one is left out of recent_events, and
   * `limitRecent` others must still be there. In no particular order.
   */
  recent: EventRecord[]
  /**
   * For each conflict_resolution event here (pinned or recent) whose `source.conflict_key` names the key it flags:
   * the newest live event of each agent on that key, so that the snapshot can tell an open conflict from a settled one.
   */
  contenders: EventRecord[]
}

export interface JanitorInput {
  /**
   * The events the janitor can act on: live events sharing a scope and dedupe_key with another live event
   * (possible conflicts), live events with a ttl_days, and every conflict_resolution event (live or not).
   */
  events: EventRecord[]
  /** Events (live or deprecated) the secret/PII scan has not seen yet, oldest first, at most `maxUnscanned`. */
  unscanned: EventRecord[]
  /** Unscanned events left beyond `maxUnscanned` (a later run scans them). */
  unscannedLeft: number
  /** How many events are pinned in the visible scopes. */
  pinnedCount: number
}

export interface ConsolidationChanges {
  /** Event ids to mark as ttl candidates. */
  ttlCandidates: readonly string[]
  /** conflict_resolution events to append (skipped when a live one with the same scope and dedupe_key exists). */
  resolutions: readonly {key: string; request: AppendEventRequest}[]
  /** Masked fields; applied only when the event's content_hash is still `expectHash`. */
  masks: readonly {event_id: string; expectHash: string; content_md: string; content_hash: string; run_id: string; source: Record<string, unknown>}[]
  /** Event ids the scan has now seen. */
  scanned: readonly string[]
}

export interface ConsolidationApplied {
  ttlMarked: string[]
  /** key → the appended (or already present) resolution event id. */
  resolutions: Map<string, {event_id: string; created: boolean}>
  masked: string[]
}

export interface CleanupQuery {
  visible: ScopeFilter
  scope?: ScopeFilter
  /** Only events created before this time (ISO 8601 UTC). */
  createdBefore: string
  /** Now (ISO 8601 UTC), for TTL expiry. */
  now: string
}

export interface CleanupCandidate extends EventRecord {
  /** Why it may go: past its ttl_days, or superseded. */
  reason: 'expired' | 'deprecated'
}

/** Event-log operations. Like MemoryStorage, async so that a networked backend fits. */
export interface EventStorage {
  /** Looks up an earlier append of the same event (by idempotency key first, then identity) without writing. */
  findDuplicate(identity: string, idempotencyKey?: string): Promise<EarlierAppend | null>
  /**
   * Appends one event in ONE transaction: duplicate check, `supersedes` check (the target must exist and be
   * visible; it becomes deprecated), the insert, the pin of its scope and dedupe_key, the text index.
   */
  appendEvent(request: AppendEventRequest): Promise<AppendEventOutcome>
  /** Pinned and recent events of the given scopes, read consistently. */
  snapshotEvents(scopes: readonly string[], limitRecent: number, maxPinsPerScope: number): Promise<SnapshotRows>
  queryEvents(query: EventQuery): Promise<EventQueryResult>
  janitorInput(visible: ScopeFilter, maxUnscanned: number): Promise<JanitorInput>
  /** Applies a consolidation in ONE transaction. */
  applyConsolidation(changes: ConsolidationChanges): Promise<ConsolidationApplied>
  /** Events of `query` older than `createdBefore` that are expired or deprecated; at most `limit`, oldest first. */
  cleanupCandidates(query: CleanupQuery, limit: number): Promise<{candidates: CleanupCandidate[]; total: number}>
  /** Deletes those of `eventIds` that are still candidates of `query`, in ONE transaction; returns the deleted ids. */
  deleteEvents(eventIds: readonly string[], query: CleanupQuery): Promise<string[]>
  /**
   * Stores many events at once (imports, benchmarks, tests), in one transaction, keeping pins and the text
   * index right. Every event gets `created_at` (default now), `scanned` (default false) and flags as given.
   */
  importEvents(events: readonly ImportedEvent[]): Promise<string[]>
  /** Number of stored events. */
  countEvents(): Promise<number>
}

export interface ImportedEvent extends NewEvent {
  created_at: string
  identity: string
  content_hash: string
  idempotency_key?: string
  deprecated?: boolean
  scanned?: boolean
}

// ---------------------------------------------------------------------------------------------------------
// The audit log (docs/audit.md): who changed, tried or was refused what, append-only.
// ---------------------------------------------------------------------------------------------------------

/**
 * What an audit entry records: a push that changed files, a push refused for a stale base (`conflict`), a secret
 * refused (`refused`) or masked by the janitor (`mask`), an event superseded or deleted by a cleanup (`forget`),
 * the active project switched, an API key made or revoked. Pulls are not recorded: they change nothing.
 */
export const AUDIT_KINDS = ['push', 'conflict', 'refused', 'mask', 'supersede', 'forget', 'switch-project', 'key'] as const
export type AuditKind = (typeof AUDIT_KINDS)[number]

/** One entry as written. Never holds a secret or a file's content: only names, ids, counts and rule names. */
export interface NewAuditEntry {
  /** Server time, ISO 8601 UTC. */
  at: string
  /** The agent of the token that did it (for a key made or revoked: the key's agent). */
  agent: string
  kind: AuditKind
  /** Memory files involved (`.memory/`-relative). */
  paths: string[]
  /** Events involved. */
  event_ids: string[]
  /** How many things it touched (files written and deleted, events forgotten, …). */
  count: number
  /** One line for a person: what happened (rule names, project id, key id), never a secret. */
  detail: string
}

/** A stored entry: `seq` orders the log (the newest entry has the highest). */
export interface AuditEntry extends NewAuditEntry {
  seq: number
}

export interface AuditQuery {
  agent?: string
  kind?: AuditKind
  /** Only entries older than this seq (the next page of a newest-first list). */
  before?: number
  /** Only entries at or after this time (ISO 8601 UTC). */
  since?: string
  limit: number
}

export interface AuditStorage {
  /** Appends entries in one transaction; answers them with their seqs. */
  appendAudit(entries: readonly NewAuditEntry[]): Promise<AuditEntry[]>
  /** Entries matching `query`, newest first. */
  queryAudit(query: AuditQuery): Promise<AuditEntry[]>
}

/** What a key may do: `read` reads only; `write` also pushes and appends; `admin` also manages keys. */
export const KEY_ROLES = ['read', 'write', 'admin'] as const
export type KeyRole = (typeof KEY_ROLES)[number]

/** An API key as stored: never the token itself, only its sha256. */
export interface ApiKey {
  /** `key_…`: names the key in `token list` and `token revoke` (not secret). */
  id: string
  /** The memory the key opens (storage/workspace-name.ts); keys of every workspace live in the default one's storage. */
  workspace: string
  agentId: string
  role: KeyRole
  createdAt: string
  expiresAt: string | null
  revokedAt: string | null
}

/** API keys made by `jarvis serve token create`, shared by every process on the same database. */
export interface KeyStorage {
  /** Stores a key (a revoked one too: an import brings keys as they were). */
  addKey(key: ApiKey, tokenHash: string): Promise<void>
  listKeys(): Promise<ApiKey[]>
  /** The key, revoked now (or earlier); null when there is no such key. */
  revokeKey(id: string, now: string): Promise<ApiKey | null>
  /** The key whose token has this sha256 (hex), revoked or expired ones included: the caller decides. */
  keyByTokenHash(tokenHash: string): Promise<ApiKey | null>
  /** True when the storage answers (for `/readyz`). */
  ping(): Promise<boolean>
}

/**
 * How the WebSocket broadcasts of one server process reach the clients of the others on the same database
 * (PostgreSQL LISTEN/NOTIFY); a backend that only one process can open has none.
 */
export interface BroadcastRelay {
  /** Hands a message (the JSON text sent to clients) to the other processes. */
  publish(data: string): Promise<void>
  /** From now on, `deliver` gets every message another process published; resolves once listening. */
  subscribe(deliver: (data: string) => void): Promise<void>
}

/** What `jarvis serve` needs from a backend: the memory files, the event log, the API keys and the apps' OAuth grants. */
export type ServerStorage = MemoryStorage &
  EventStorage &
  KeyStorage &
  AuditStorage & {
    /** Present when several processes can serve the same storage. */
    readonly relay?: BroadcastRelay
    /** The apps that sign in with OAuth (oauth-types.ts); used in the default workspace's storage only, like the keys. */
    readonly oauth: OAuthStorage
  }
