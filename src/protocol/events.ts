/**
 * The client of the shared event log (docs/event-log.md, CONTRACT §3): `/v1/memory/*`. Same connection, error
 * mapping and zod-checked answers as MemoryClient, which it extends.
 */
import {z} from 'zod'

import {
  type AppendResponse,
  appendResponseSchema,
  type MemoryEvent,
  type SnapshotResponse,
  snapshotResponseSchema,
  storedMemoryEventSchema,
} from '../schemas/index.js'
import {type ClientOptions, MemoryClient} from './client.js'

// Every sync loads this module and reads none of its answers: they are built at their first parse (z.lazy), as the
// schemas of src/schemas are (src/schemas/index.ts).

/**
 * The answer of an append as read here. The seed says only that it carries `event_id / status`, naming no values:
 * `duplicate` means the event was stored before, any other word (a seed-style gateway's `ok`) that it is stored
 * now; a missing `warnings` is none.
 */
const appendAnswerSchema = z.lazy(() =>
  appendResponseSchema.unwrap().extend({
    status: z
      .string()
      .min(1)
      .transform((status): AppendResponse['status'] => (status === 'duplicate' ? 'duplicate' : 'created')),
  }),
)

/** Filters of `GET /v1/memory/events`; every one is optional. */
export interface EventQuery {
  scope?: string
  kind?: string
  dedupe_key?: string
  agent?: string
  since?: string
  until?: string
  /** Free text: the answer is ranked by relevance. */
  q?: string
  limit?: number
  include_deprecated?: boolean
}

export const eventListResponseSchema = z.lazy(() =>
  z.looseObject({
    events: z.array(storedMemoryEventSchema.unwrap()),
    total: z.number().int().nonnegative().optional(),
  }),
)
export type EventListResponse = z.output<typeof eventListResponseSchema>

/** A count, or the list it counts (the doc names the field, not its shape): both are read as ids + count. */
const countOrIds = z.lazy(() =>
  z.union([
    z.number().int().nonnegative(),
    z.array(z.union([z.string(), z.looseObject({event_id: z.string()})])),
  ]),
)

const findingSchema = z.lazy(() =>
  z.looseObject({kind: z.string(), rule: z.string().optional(), field: z.string().optional(), line: z.number().optional(), column: z.number().optional()}),
)

export const consolidateResponseSchema = z.lazy(() =>
  z.looseObject({
    pinned: countOrIds.unwrap().default(0),
    ttl_candidates: countOrIds.unwrap().default(0),
    conflicts: z
      .array(
        z.looseObject({
          scope: z.string(),
          dedupe_key: z.string(),
          event_ids: z.array(z.string()),
          resolution_event_id: z.string().nullable().optional(),
        }),
      )
      .default([]),
    masked: z.array(z.looseObject({event_id: z.string(), findings: z.array(findingSchema.unwrap()).default([])})).default([]),
    changed: z.boolean().optional(),
  }),
)
export type ConsolidateResponse = z.output<typeof consolidateResponseSchema>

export interface CleanupRequest {
  older_than_days: number
  scope?: string
  dry_run: boolean
  event_ids?: string[]
}

/** A cleanup candidate: an event, or at least its id (a leaner server may send only ids). */
const cleanupItemSchema = z.lazy(() =>
  z.union([
    z.string().transform((event_id) => ({event_id}) as {event_id: string} & Record<string, unknown>),
    z.looseObject({event_id: z.string()}),
  ]),
)
export const cleanupResponseSchema = z.lazy(() =>
  z.looseObject({
    candidates: z.array(cleanupItemSchema.unwrap()).default([]),
    deleted: z.array(cleanupItemSchema.unwrap()).default([]),
  }),
)
export type CleanupResponse = z.output<typeof cleanupResponseSchema>

/** The event-log endpoints (docs/event-log.md "Wire"). */
export class EventsClient extends MemoryClient {
  /** An EventsClient on the same server, token and byte counter as `client` (itself when it already is one). */
  static over(client: MemoryClient): EventsClient {
    return client instanceof EventsClient ? client : new EventsClient(MemoryClient.optionsOf(client))
  }

  constructor(options: ClientOptions) {
    super(options)
  }

  /** Appends one event; `idempotencyKey` makes a retry (the outbox, a lost answer) count once. */
  append(event: MemoryEvent, idempotencyKey?: string): Promise<AppendResponse> {
    return this.call('POST', '/v1/memory/append', event, appendAnswerSchema, idempotencyKey ? {'idempotency-key': idempotencyKey} : {})
  }

  snapshot(query: {agentId: string; scopes: string[]; limitRecent?: number}): Promise<SnapshotResponse> {
    const params = new URLSearchParams({agent_id: query.agentId, scopes: query.scopes.join(',')})
    if (query.limitRecent !== undefined) params.set('limit_recent', String(query.limitRecent))
    return this.call('GET', `/v1/memory/snapshot?${params}`, undefined, snapshotResponseSchema)
  }

  events(query: EventQuery = {}): Promise<EventListResponse> {
    const params = new URLSearchParams()
    for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, String(value))
    const search = params.toString()
    return this.call('GET', `/v1/memory/events${search ? `?${search}` : ''}`, undefined, eventListResponseSchema)
  }

  consolidate(): Promise<ConsolidateResponse> {
    return this.call('POST', '/v1/memory/consolidate', {}, consolidateResponseSchema)
  }

  cleanup(request: CleanupRequest): Promise<CleanupResponse> {
    return this.call('POST', '/v1/memory/cleanup', request, cleanupResponseSchema)
  }
}
