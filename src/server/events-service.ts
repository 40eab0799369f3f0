/**
 * The shared event log on the server (docs/event-log.md, seed 001): append, snapshot, list/search, consolidate
 * and cleanup over the EventStorage, with the rules of events/ (scopes, identity, redaction, snapshot, janitor).
 * Routes (routes/events.ts) only adapt HTTP. The server never trusts a client: it checks every field, takes the
 * agent from the token, and scans for secrets and personal data itself.
 */
import createDebug from 'debug'
import type {z} from 'zod'

import {
  appendWarnings,
  buildSnapshot,
  canRead,
  canWrite,
  conflictResolutionEvent,
  contentHash,
  defaultSnapshotScopes,
  describeFindings,
  eventIdentity,
  findSensitive,
  maskSensitive,
  MAX_EVENTS_PER_RUN,
  planConsolidation,
  sensitiveFieldsOf,
  type SensitiveFinding,
} from '../events/index.js'
import {
  agentIdSchema,
  dedupeKeySchema,
  EVENT_QUERY_MAX,
  eventKindSchema,
  holdsNul,
  memoryEventSchema,
  NUL_REFUSAL,
  scopeSchema,
  type AppendResponse,
  type MemoryEvent,
  type SnapshotResponse,
  type StoredMemoryEvent,
} from '../schemas/index.js'
import {type AuditService, refusedDetail} from './audit-service.js'
import type {Broadcaster} from './broadcast.js'
import {HttpError} from './http-error.js'
import {badRequest, booleanParam, integerParam, single, timeParam} from './query-params.js'
import type {AppendEventRequest, CleanupQuery, EarlierAppend, EventRecord, EventStorage, KeyRole, NewEvent, ScopeFilter} from './storage/types.js'

const debug = createDebug('jarvis:server:events')

/** Default and bounds of `limit_recent` (snapshot). */
export const DEFAULT_LIMIT_RECENT = 50
export const MAX_LIMIT_RECENT = 500
/** Default and bound of `limit` (events list). */
export const DEFAULT_LIST_LIMIT = 50
export const MAX_LIST_LIMIT = 500
/** Default and bound of `limit` (cleanup candidates listed). */
export const DEFAULT_CLEANUP_LIMIT = 1000
export const MAX_CLEANUP_LIMIT = 10_000
/**
 * Pins read per scope for a snapshot, in key order (the order pinned_md lists them): more than its 4000
 * characters can show, so the text is the whole log's; and a snapshot's cost stays flat however many keys a
 * scope has (docs/protocol.md).
 */
export const MAX_PINS_PER_SCOPE = 200
/** Events the janitor scans for secrets in one run (a run over a large import goes on in the next run). */
export const MAX_SCAN_PER_RUN = 10_000
/** The janitor yields to the event loop after this many scans, so the server keeps answering. */
const SCANS_PER_TURN = 100
/** An Idempotency-Key header: 1-200 printable ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/
const DAY_MS = 86_400_000

export interface EventServiceOptions {
  storage: EventStorage
  now: () => Date
  /** Tells the WebSocket clients that may read its scope of each event appended (EVENT_APPENDED). */
  broadcaster?: Broadcaster
  /** Where refused appends, supersedes, masks and forgotten events are recorded; none: nothing is. */
  audit?: AuditService
}

/** Query of GET /v1/memory/snapshot, as sent. */
export interface SnapshotQuery {
  agent_id?: unknown
  scopes?: unknown
  limit_recent?: unknown
}

/** Query of GET /v1/memory/events, as sent. */
export interface ListQuery {
  scope?: unknown
  kind?: unknown
  dedupe_key?: unknown
  agent?: unknown
  since?: unknown
  until?: unknown
  q?: unknown
  limit?: unknown
  include_deprecated?: unknown
}

export interface ListAnswer {
  events: (StoredMemoryEvent & {score?: number})[]
  total: number
}

export interface ConsolidateAnswer {
  /** How many events are pinned (the newest live event of each key) in the scopes the caller can read. */
  pinned: number
  ttl_candidates: string[]
  conflicts: {scope: string; dedupe_key: string; event_ids: string[]; agents: string[]; resolution_event_id: string | null}[]
  masked: {event_id: string; findings: SensitiveFinding[]}[]
  /** Events not scanned yet beyond this run's limit: run again to scan them. */
  unscanned_left: number
  changed: boolean
}

export interface CleanupAnswer {
  dry_run: boolean
  /** The candidates as they were before this request deleted anything (oldest first, at most `limit`). */
  candidates: (StoredMemoryEvent & {reason: 'expired' | 'deprecated'})[]
  /** How many candidates there are in all (may exceed the list). */
  total: number
  /** The event ids deleted now (always empty on a dry run). */
  deleted: string[]
  /** Requested ids that were not deleted: not (or no longer) candidates, or not visible to the caller. */
  skipped: string[]
}

/**
 * The scopes `agentId` may read, as a storage filter. For every valid scope (the only kind stored) it says exactly
 * what events/rules.ts canRead says (test/server/events-storage.test.ts checks it).
 */
export function readableScopes(agentId: string, admin = false): ScopeFilter {
  return admin ? {exact: [], prefixes: ['']} : {exact: ['global', `agent:${agentId}`], prefixes: ['project:']}
}

/** `field/sub: message` lines and the first bad field, from zod issues under `prefix` (`body`, `querystring`). */
function zodProblems(issues: readonly z.core.$ZodIssue[], prefix: string): {field: string; problems: string[]} {
  const problems = issues.map((issue) => `${[prefix, ...issue.path.map(String)].join('/')}: ${issue.message}`)
  const first = issues[0]
  return {field: [prefix, ...(first?.path.map(String) ?? [])].join('/'), problems}
}

/** A record as it goes on the wire (StoredMemoryEvent: the event, its id and time, and its flags). */
export function toWire(record: EventRecord): StoredMemoryEvent {
  return {
    event_id: record.event_id,
    agent_id: record.agent_id as StoredMemoryEvent['agent_id'],
    run_id: record.run_id,
    scope: record.scope,
    kind: record.kind as StoredMemoryEvent['kind'],
    dedupe_key: record.dedupe_key,
    confidence: record.confidence,
    content_md: record.content_md,
    source: record.source as StoredMemoryEvent['source'],
    supersedes: record.supersedes,
    ttl_days: record.ttl_days,
    created_at: record.created_at,
    deprecated: record.deprecated,
    content_hash: record.content_hash,
    masked: record.masked,
    ttl_candidate: record.ttl_candidate,
  }
}

/**
 * A scope selector of `events` and `cleanup`: a scope (`global`, `project:x`, `agent:claude`) or a prefix ending in
 * `*` (`agent:*`, `project:*`, `*`). A scope the caller cannot read is refused (403); a prefix is quietly limited
 * to what the caller can read.
 */
function scopeSelector(value: string, field: string, agentId: string, admin = false): ScopeFilter {
  if (value.endsWith('*')) {
    const prefix = value.slice(0, -1)
    if (!/^[a-z0-9:._-]{0,80}$/.test(prefix)) throw badRequest(field, 'must be a scope, or a scope prefix ending in "*" (agent:*, project:*)')
    return {exact: [], prefixes: [prefix]}
  }
  const parsed = scopeSchema.safeParse(value)
  if (!parsed.success) throw badRequest(field, parsed.error.issues[0]?.message ?? 'is not a scope')
  if (!canRead(agentId, value, admin)) throw forbiddenScope(field, value, agentId)
  return {exact: [value], prefixes: []}
}

function forbiddenScope(field: string, scope: string, agentId: string): HttpError {
  return new HttpError(403, 'forbidden', `${field}: ${scope} is another agent's private scope; ${agentId} may read and write global, project:* and agent:${agentId}`, {
    field,
    scope,
  })
}

export class EventService {
  private readonly storage: EventStorage
  private readonly now: () => Date
  private readonly broadcaster?: Broadcaster
  private readonly audit?: AuditService
  /** Consolidations run one at a time: each reads, scans, then applies. */
  private consolidating: Promise<unknown> = Promise.resolve()

  constructor(options: EventServiceOptions) {
    this.storage = options.storage
    this.now = options.now
    this.broadcaster = options.broadcaster
    this.audit = options.audit
  }

  private nowIso(): string {
    return this.now().toISOString()
  }

  // ---------------------------------------------------------------------------------------------------- append

  /**
   * POST /v1/memory/append. Order of checks: body agent_id (403), fields (400), scope (403), an earlier append of
   * the same event (answered `duplicate`, nothing stored), secrets and personal data (422), then one storage
   * transaction (supersedes target: 400). The earlier append is looked for in that transaction, or before the
   * refusal when the scan finds something: the answers are those of the order above, in one round trip less.
   */
  async append(body: unknown, agentId: string, idempotencyHeader: string | undefined): Promise<AppendResponse> {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('body', 'must be a JSON object (a memory event)')
    const claimed = (body as Record<string, unknown>).agent_id
    if (claimed !== undefined && claimed !== agentId) {
      throw new HttpError(403, 'forbidden', `body/agent_id names ${JSON.stringify(claimed)}, but the token belongs to ${agentId}`, {field: 'body/agent_id'})
    }
    const parsed = memoryEventSchema.safeParse({...body, agent_id: agentId})
    if (!parsed.success) {
      if (parsed.error.issues.some((issue) => issue.path[0] === 'agent_id')) {
        throw new HttpError(403, 'forbidden', `the token's agent ${agentId} is not one of the agents of the shared event log`, {field: 'body/agent_id'})
      }
      const {field, problems} = zodProblems(parsed.error.issues, 'body')
      throw new HttpError(400, 'bad_request', problems.join('; '), {field, problems})
    }
    const event = parsed.data
    if (!canWrite(agentId, event.scope)) throw forbiddenScope('body/scope', event.scope, agentId)

    let idempotencyKey: string | undefined
    if (idempotencyHeader !== undefined) {
      if (!IDEMPOTENCY_KEY.test(idempotencyHeader)) {
        throw badRequest('header/idempotency-key', 'must be 1-200 printable ASCII characters without spaces')
      }
      idempotencyKey = `${agentId}:${idempotencyHeader}`
    }
    const identity = eventIdentity(event)
    // The scan before the duplicate check: a clean event goes straight to the append, whose transaction finds an
    // earlier append of it (by key, then identity, then among the deleted) exactly as findDuplicate does, and is
    // answered the same — a round trip to the database less for every append. Only an event the scan refuses is
    // looked up first: a retry of one stored before (before a rule was added, or imported) is still `duplicate`.
    const findings = await findSensitive(scannedFields(event))
    if (findings.length > 0) {
      const earlier = await this.storage.findDuplicate(identity, idempotencyKey)
      if (earlier !== null) return this.duplicateAnswer(earlier, event)
      await this.audit?.record({at: this.nowIso(), agent: agentId, kind: 'refused', paths: [], event_ids: [], count: findings.length, detail: refusedDetail(`a ${event.kind} event for ${event.scope}`, findings)})
      throw new HttpError(422, 'sensitive', `refused: the event holds ${describeFindings(findings)}. Secrets and personal data are never stored in the shared memory; remove them and write again.`, {
        field: `body/${findings[0].field.replace(/\./g, '/')}`,
        findings,
      })
    }

    const request: AppendEventRequest = {
      event: toNewEvent(event),
      identity,
      idempotencyKey,
      contentHash: contentHash(event.content_md),
      visible: readableScopes(agentId),
      now: this.now().toISOString(),
      scanned: true,
    }
    const outcome = await this.storage.appendEvent(request)
    switch (outcome.status) {
      case 'duplicate':
      case 'key_reused':
      case 'deleted':
        return this.duplicateAnswer(outcome, event)
      case 'supersedes_missing':
        throw badRequest('body/supersedes', `names ${JSON.stringify(event.supersedes)}, which is no event ${agentId} can see`)
      case 'created':
        break
    }
    // The rules of events/ appendWarnings, over what the transaction saw: the event it replaced as the newest of its
    // key and the one it superseded (a log of those two gives the same warnings as the whole log, but the run count).
    const {replaced, superseded} = outcome
    const seen = [replaced, superseded].filter((record): record is EventRecord => record !== null).map(toWire)
    const stored = outcome.event
    this.broadcaster?.broadcast(
      {type: 'EVENT_APPENDED', event_id: stored.event_id, scope: stored.scope, kind: stored.kind, dedupe_key: stored.dedupe_key, agent_id: stored.agent_id, created_at: stored.created_at},
    )
    if (superseded !== null) {
      await this.audit?.record({at: stored.created_at, agent: agentId, kind: 'supersede', paths: [], event_ids: [stored.event_id, superseded.event_id], count: 1, detail: `${superseded.event_id} (${superseded.dedupe_key}) superseded by a ${stored.kind} event`})
    }
    const warnings = appendWarnings(event, seen)
    if (superseded !== null && superseded.deprecated) warnings.push(`${superseded.event_id}, which this event supersedes, was already superseded`)
    if (outcome.runCount > MAX_EVENTS_PER_RUN) {
      warnings.push(`this is event ${outcome.runCount} of run ${event.run_id}; a run should write at most ${MAX_EVENTS_PER_RUN}`)
    }
    return {event_id: outcome.event.event_id, status: 'created', warnings}
  }

  private duplicateAnswer(found: EarlierAppend, sent: MemoryEvent): AppendResponse {
    // A late retry of an event a cleanup deleted: the same event, already decided about; not stored again.
    if (found.status === 'deleted') return {event_id: found.event_id, status: 'duplicate', warnings: [`${found.event_id} was stored before and deleted by a cleanup at ${found.deleted_at}; it is not stored again`]}
    if (found.status === 'key_reused') {
      throw new HttpError(
        422,
        'idempotency_key_reused',
        `the Idempotency-Key was already used for another event (${found.event.event_id}); send a new key for a new event`,
        {field: 'header/idempotency-key', event_id: found.event.event_id},
      )
    }
    return {event_id: found.event.event_id, status: 'duplicate', warnings: unappliedFields(found.event, sent)}
  }

  // -------------------------------------------------------------------------------------------------- snapshot

  /** GET /v1/memory/snapshot: pinned and recent events of the scopes, through the pure buildSnapshot. */
  /** `role` admin reads every scope (canRead); the snapshot is still the named agent's. */
  async snapshot(query: SnapshotQuery, agentId: string, role?: KeyRole): Promise<SnapshotResponse> {
    const named = single(query.agent_id, 'querystring/agent_id')
    if (named !== undefined && named !== '' && named !== agentId) {
      throw new HttpError(403, 'forbidden', `querystring/agent_id names ${JSON.stringify(named)}, but the token belongs to ${agentId}`, {
        field: 'querystring/agent_id',
      })
    }
    const scopesText = single(query.scopes, 'querystring/scopes')
    const scopes = scopesText === undefined || scopesText.trim() === '' ? defaultSnapshotScopes(agentId) : [...new Set(scopesText.split(',').map((s) => s.trim()))]
    for (const scope of scopes) {
      const parsed = scopeSchema.safeParse(scope)
      if (!parsed.success) throw badRequest('querystring/scopes', `names ${JSON.stringify(scope)}: ${parsed.error.issues[0]?.message ?? 'not a scope'}`)
      if (!canRead(agentId, scope, role === 'admin')) throw forbiddenScope('querystring/scopes', scope, agentId)
    }
    const limitRecent = integerParam(query.limit_recent, 'querystring/limit_recent', 1, MAX_LIMIT_RECENT, DEFAULT_LIMIT_RECENT)
    const rows = await this.storage.snapshotEvents(scopes, limitRecent, MAX_PINS_PER_SCOPE)
    const seen = new Set<string>()
    const events: StoredMemoryEvent[] = []
    // The pinned events, the recent ones, and the contenders of flagged conflicts: every event the pure
    // buildSnapshot needs to give the answer it would give for the whole log (docs/protocol.md).
    for (const record of [...rows.recent, ...rows.pinned, ...rows.contenders].sort((a, b) => b.seq - a.seq)) {
      if (seen.has(record.event_id)) continue
      seen.add(record.event_id)
      events.push(toWire(record))
    }
    return buildSnapshot(events, {limitRecent, scopes})
  }

  // ------------------------------------------------------------------------------------------------ list/search

  /** GET /v1/memory/events: readable scopes only; newest first, or ranked by relevance with `q`. */
  async list(query: ListQuery, agentId: string, role?: KeyRole): Promise<ListAnswer> {
    const admin = role === 'admin'
    const scopeText = single(query.scope, 'querystring/scope')
    const kind = single(query.kind, 'querystring/kind')
    if (kind !== undefined && !eventKindSchema.safeParse(kind).success) {
      throw badRequest('querystring/kind', `must be one of ${eventKindSchema.options.join(', ')}`)
    }
    const dedupeKey = single(query.dedupe_key, 'querystring/dedupe_key')
    if (dedupeKey !== undefined && !dedupeKeySchema.safeParse(dedupeKey).success) {
      throw badRequest('querystring/dedupe_key', 'must be 1-64 characters of a-z, 0-9, "_", ":" or "-"')
    }
    const agent = single(query.agent, 'querystring/agent')
    const text = single(query.q, 'querystring/q')
    if (text !== undefined && text.length > EVENT_QUERY_MAX) throw badRequest('querystring/q', `must be at most ${EVENT_QUERY_MAX} characters`)
    const answer = await this.storage.queryEvents({
      visible: readableScopes(agentId, admin),
      scope: scopeText === undefined || scopeText === '' ? undefined : scopeSelector(scopeText, 'querystring/scope', agentId, admin),
      kind,
      dedupeKey,
      agentId: agent === '' ? undefined : agent,
      since: timeParam(query.since, 'querystring/since'),
      until: timeParam(query.until, 'querystring/until'),
      text: text === undefined || text.trim() === '' ? undefined : text,
      includeDeprecated: booleanParam(query.include_deprecated, 'querystring/include_deprecated'),
      limit: integerParam(query.limit, 'querystring/limit', 1, MAX_LIST_LIMIT, DEFAULT_LIST_LIMIT),
    })
    return {
      events: answer.events.map((record) => (record.score === undefined ? toWire(record) : {...toWire(record), score: record.score})),
      total: answer.total,
    }
  }

  // ------------------------------------------------------------------------------------------------ consolidate

  /** POST /v1/memory/consolidate, one at a time. */
  consolidate(agentId: string): Promise<ConsolidateAnswer> {
    const run = this.consolidating.then(() => this.consolidateNow(agentId))
    this.consolidating = run.catch(() => undefined)
    return run
  }

  /**
   * The janitor over the scopes the caller can read: scans the events not scanned yet, asks the pure
   * planConsolidation what to do, and applies it in one transaction: ttl candidates marked, one
   * conflict_resolution event per conflict (written as the calling agent: the janitor runs on its behalf),
   * sensitive text masked in place (the one in-place change of the log, seed 001 MUST-S5).
   */
  private async consolidateNow(agentId: string): Promise<ConsolidateAnswer> {
    const visible = readableScopes(agentId)
    const now = this.now()
    const input = await this.storage.janitorInput(visible, MAX_SCAN_PER_RUN)
    const findings = new Map<string, SensitiveFinding[]>()
    for (const [index, record] of input.unscanned.entries()) {
      const found = await findSensitive(scannedFields(record))
      if (found.length > 0) findings.set(record.event_id, found)
      if (index % SCANS_PER_TURN === SCANS_PER_TURN - 1) await new Promise((resolve) => setImmediate(resolve))
    }
    const byId = new Map<string, EventRecord>()
    for (const record of [...input.events, ...input.unscanned]) byId.set(record.event_id, record)
    const events = [...byId.values()].sort((a, b) => a.seq - b.seq).map(toWire)
    const plan = planConsolidation(events, now, findings)

    const masks = []
    for (const item of plan.toMask) {
      const record = byId.get(item.event_id)
      if (record === undefined) continue
      const content = await maskSensitive(record.content_md, 'content_md')
      const runId = await maskSensitive(record.run_id, 'run_id')
      const source = {...record.source}
      for (const [name, value] of Object.entries(source)) {
        if (name !== 'system' && typeof value === 'string') source[name] = (await maskSensitive(value, `source.${name}`)).text
      }
      masks.push({event_id: record.event_id, expectHash: record.content_hash, content_md: content.text, content_hash: contentHash(content.text), run_id: runId.text, source})
    }
    const nowIso = now.toISOString()
    const resolutions = plan.conflicts.map((conflict) => {
      // Written as the calling agent: the janitor runs on its behalf. The log knows only the four agents, so a caller
      // outside them (a CI job's key) writes it as the first agent of the conflict, naming itself in the source.
      // source.conflict_key names the key it flags, so that a snapshot can find the contenders by index.
      const caller = agentIdSchema.safeParse(agentId)
      const writer = caller.success ? caller.data : (conflict.agents[0] as MemoryEvent['agent_id'])
      const flagged = conflictResolutionEvent(conflict, {agent_id: writer, run_id: `janitor:${conflict.resolution_key}`})
      const source = {...flagged.source, conflict_key: conflict.dedupe_key, ...(caller.success ? {} : {consolidated_by: agentId})}
      const event: NewEvent = {...toNewEvent(flagged), source}
      const request: AppendEventRequest = {
        event,
        identity: eventIdentity(flagged),
        contentHash: contentHash(event.content_md),
        visible,
        now: nowIso,
        scanned: true,
      }
      return {key: `${conflict.scope}\u0000${conflict.resolution_key}`, request}
    })
    const applied = await this.storage.applyConsolidation({
      ttlCandidates: plan.ttlCandidates,
      resolutions,
      masks,
      scanned: input.unscanned.map((record) => record.event_id),
    })
    const maskedSet = new Set(applied.masked)
    const masked = plan.toMask.filter((item) => maskedSet.has(item.event_id)).map((item) => ({event_id: item.event_id, findings: item.findings}))
    if (masked.length > 0) {
      const rules = [...new Set(masked.flatMap((item) => item.findings.map((finding) => finding.rule)))].sort()
      await this.audit?.record({at: nowIso, agent: agentId, kind: 'mask', paths: [], event_ids: masked.map((item) => item.event_id), count: masked.length, detail: `the janitor masked ${masked.length} event(s): ${rules.join(', ')}`})
    }
    if (masked.length > 0) debug('masked %d events: %o', masked.length, masked.map((m) => ({event_id: m.event_id, rules: m.findings.map((f) => f.rule)})))
    const created = [...applied.resolutions.values()].filter((r) => r.created).length
    return {
      pinned: input.pinnedCount,
      ttl_candidates: plan.ttlCandidates,
      conflicts: plan.conflicts.map((conflict) => ({
        scope: conflict.scope,
        dedupe_key: conflict.dedupe_key,
        event_ids: conflict.event_ids,
        agents: conflict.agents,
        resolution_event_id: applied.resolutions.get(`${conflict.scope}\u0000${conflict.resolution_key}`)?.event_id ?? null,
      })),
      masked,
      unscanned_left: input.unscannedLeft,
      changed: applied.ttlMarked.length > 0 || created > 0 || masked.length > 0,
    }
  }

  // ---------------------------------------------------------------------------------------------------- cleanup

  /** POST /v1/memory/cleanup: lists candidates; deletes the approved ones that still are. */
  async cleanup(body: unknown, agentId: string, role?: KeyRole): Promise<CleanupAnswer> {
    const admin = role === 'admin'
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('body', 'must be a JSON object')
    const b = body as Record<string, unknown>
    const days = b.older_than_days
    if (typeof days !== 'number' || !Number.isInteger(days) || days < 0 || days > 36_500) {
      throw badRequest('body/older_than_days', 'must be a whole number of days from 0 to 36500')
    }
    if (typeof b.dry_run !== 'boolean') throw badRequest('body/dry_run', 'must be true (list only) or false (delete event_ids)')
    const dryRun = b.dry_run
    let eventIds: string[] = []
    if (b.event_ids !== undefined) {
      if (!Array.isArray(b.event_ids) || b.event_ids.length > MAX_CLEANUP_LIMIT || !b.event_ids.every((id) => typeof id === 'string' && id.length > 0 && id.length <= 100)) {
        throw badRequest('body/event_ids', `must be a list of at most ${MAX_CLEANUP_LIMIT} event ids`)
      }
      const nul = b.event_ids.findIndex((id: string) => holdsNul(id))
      if (nul !== -1) throw badRequest(`body/event_ids/${nul}`, NUL_REFUSAL)
      eventIds = b.event_ids as string[]
    }
    if (!dryRun && b.event_ids === undefined) {
      throw badRequest('body/event_ids', 'is required when dry_run is false: list the candidates a person approved (from a dry run)')
    }
    if (b.scope !== undefined && typeof b.scope !== 'string') throw badRequest('body/scope', 'must be a string')
    let limit = DEFAULT_CLEANUP_LIMIT
    if (b.limit !== undefined) {
      if (typeof b.limit !== 'number' || !Number.isInteger(b.limit) || b.limit < 1 || b.limit > MAX_CLEANUP_LIMIT) {
        throw badRequest('body/limit', `must be an integer from 1 to ${MAX_CLEANUP_LIMIT}`)
      }
      limit = b.limit
    }
    const now = this.now()
    const query: CleanupQuery = {
      visible: readableScopes(agentId, admin),
      scope: b.scope === undefined || b.scope === '' ? undefined : scopeSelector(b.scope as string, 'body/scope', agentId, admin),
      createdBefore: new Date(now.getTime() - days * DAY_MS).toISOString(),
      now: now.toISOString(),
    }
    const {candidates, total} = await this.storage.cleanupCandidates(query, limit)
    const deleted = dryRun ? [] : await this.storage.deleteEvents(eventIds, query)
    if (deleted.length > 0) {
      await this.audit?.record({at: query.now, agent: agentId, kind: 'forget', paths: [], event_ids: deleted, count: deleted.length, detail: `${deleted.length} superseded or expired event(s) deleted by a cleanup`})
    }
    const gone = new Set(deleted)
    return {
      dry_run: dryRun,
      candidates: candidates.map((candidate) => ({...toWire(candidate), reason: candidate.reason})),
      total,
      deleted,
      skipped: dryRun ? [] : [...new Set(eventIds)].filter((id) => !gone.has(id)),
    }
  }
}

/**
 * The fields a write is scanned in: those of events/ sensitiveFieldsOf, plus every other value of `source`
 * (the object is open, so any key may carry text; a non-string value is scanned as its JSON).
 */
export function scannedFields(event: {content_md: string; dedupe_key: string; run_id: string; source: Record<string, unknown>}): Record<string, string> {
  const fields = sensitiveFieldsOf(event as Parameters<typeof sensitiveFieldsOf>[0])
  for (const [name, value] of Object.entries(event.source)) {
    const field = `source.${name}`
    if (name === 'system' || field in fields || value === undefined || value === null) continue
    fields[field] = typeof value === 'string' ? value : JSON.stringify(value)
  }
  return fields
}

function toNewEvent(event: MemoryEvent): NewEvent {
  return {
    agent_id: event.agent_id,
    run_id: event.run_id,
    scope: event.scope,
    kind: event.kind,
    dedupe_key: event.dedupe_key,
    confidence: event.confidence,
    content_md: event.content_md,
    source: event.source,
    supersedes: event.supersedes ?? null,
    ttl_days: event.ttl_days,
  }
}

/**
 * A duplicate is the event stored before (the same agent, run, scope, kind, key and text), whatever else was sent:
 * the fields outside its identity that this append changed are not applied, and the warning says so, where the
 * caller would otherwise believe a supersede or a TTL took effect.
 */
function unappliedFields(stored: EventRecord, sent: MemoryEvent): string[] {
  const changed: string[] = []
  if (sent.confidence !== stored.confidence) changed.push(`confidence ${stored.confidence} (this append said ${sent.confidence})`)
  if ((sent.supersedes ?? null) !== (stored.supersedes ?? null)) changed.push(`supersedes ${stored.supersedes ?? 'nothing'} (this append said ${sent.supersedes ?? 'nothing'})`)
  if (sent.ttl_days !== stored.ttl_days) changed.push(`ttl_days ${stored.ttl_days} (this append said ${sent.ttl_days})`)
  if (changed.length === 0) return []
  return [`${stored.event_id} is this same event, stored before (the same agent, run, scope, kind, key and text), and keeps ${changed.join(', ')}: a change needs a new event (new text, or a new run)`]
}
