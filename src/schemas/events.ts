/**
 * The shared event log: one memory event, and the answers of `/v1/memory/append` and
 * `/v1/memory/snapshot`. Shape and character sets are checked here; the rules that need the log
 * (dedupe, supersedes, confidence warnings, secret scan, the 1200-character advice) live in events/.
 */
import {z} from 'zod'

import {agentIdSchema, isoDateTimeSchema, noNul, PROJECT_SLUG_PATTERN, sha256HexSchema} from './common.js'

/** The seed recommends 1200 characters (a warning in events/); past this hard limit an event is refused. */
export const CONTENT_MD_MAX = 4000
export const CONTENT_MD_RECOMMENDED = 1200
/** The longest text search of the event log a server answers (`GET /v1/memory/events?q=`), in UTF-16 code units. */
export const EVENT_QUERY_MAX = 500

/**
 * CONTRACT §4: the seed's `[a-z0-9_-]` plus `:`, because the seed's own GOOD examples (`config:...`) use it.
 * The length limit is part of the regex so that the JSON Schema carries it too.
 */
export const DEDUPE_KEY_PATTERN = /^[a-z0-9_:-]{1,64}$/
export const dedupeKeySchema = z
  .string()
  .regex(DEDUPE_KEY_PATTERN, {error: 'must be 1-64 characters of lowercase a-z, 0-9, "_", ":" or "-" (e.g. config:telegram_bot_token_location)'})

const slug = PROJECT_SLUG_PATTERN.source.slice(1, -1)
const agents = agentIdSchema.options.join('|')
/** `global`, `project:<slug>` or `agent:<agent_id>`; who may read and write which is the server's business. */
export const scopeSchema = z
  .string()
  .regex(new RegExp(`^(?:global|project:${slug}|agent:(?:${agents}))$`), {
    error: `must be "global", "project:<slug>" or "agent:<${agents}>"`,
  })
export type Scope = z.output<typeof scopeSchema>

/**
 * The seed's nine kinds, plus `conflict_resolution` (seed 001 §7 C-3): the janitor appends one when agents disagree
 * on a key, asking a person or an agent to confirm.
 */
const EVENT_KINDS = ['decision', 'config', 'constraint', 'workflow', 'fact', 'bug', 'todo', 'log', 'deprecation', 'conflict_resolution'] as const
export const eventKindSchema = z.enum(EVENT_KINDS, {error: (issue) => (issue.code === 'invalid_value' ? `must be one of ${EVENT_KINDS.join(', ')}` : undefined)})
export type EventKind = z.output<typeof eventKindSchema>

export const confidenceSchema = z.enum(['high', 'med', 'low'])
export type Confidence = z.output<typeof confidenceSchema>

/** Half of a surrogate pair is no character: stored, it came back as replacement characters, its hash another text's. */
const wellFormed = [(text: string) => !/\p{Cs}/u.test(text), {error: 'is not well-formed Unicode (a lone surrogate)'}] as const

export const memoryEventSchema = z.lazy(() =>
  z
    .looseObject({
      agent_id: agentIdSchema,
      /** Unique per run (a UUID is recommended); part of the idempotency key of an append. */
      run_id: z.string().min(1).max(128).refine(...noNul).refine(...wellFormed),
      scope: scopeSchema,
      kind: eventKindSchema,
      dedupe_key: dedupeKeySchema,
      confidence: confidenceSchema,
      content_md: z.string().max(CONTENT_MD_MAX).regex(/\S/, {error: 'must not be blank'}).refine(...noNul).refine(...wellFormed),
      source: z.looseObject({
        /** Where a person or agent wrote it; `obsidian`: a person's edit in a vault's daily note (replicas). */
        system: z.enum(['telegram', 'cli', 'web', 'obsidian', 'other']),
        thread_id: z.string().refine(...noNul).refine(...wellFormed).optional(),
        message_id: z.string().refine(...noNul).refine(...wellFormed).optional(),
      }),
      /** The event_id this one replaces; `null` and absent both mean none (kept as sent, so a rewrite is exact). */
      supersedes: z.string().min(1).refine(...noNul).refine(...wellFormed).nullable().optional(),
      /** 0 keeps the event for good; more makes it a cleanup candidate after that many days. */
      ttl_days: z.number().int().nonnegative().default(0),
    })
    .meta({title: 'Memory event', description: 'Body of POST /v1/memory/append'}),
)
export type MemoryEvent = z.output<typeof memoryEventSchema>
export type MemoryEventInput = z.input<typeof memoryEventSchema>

/** An event as the log holds it: the server adds its id and the time it was stored. */
export const storedMemoryEventSchema = z.lazy(() =>
  memoryEventSchema.unwrap().extend({
    /**
     * Read as any name: a server may hold an event of an agent outside the four (a conflict flag that an older
     * janitor, run with a CI job's key, wrote as that key's agent); one such event must not make the memory unreadable.
     */
    agent_id: z.string().min(1),
    /** Read as any name: a newer server may store a source this version does not know yet (obsidian came later than telegram). */
    source: z.looseObject({system: z.string().min(1), thread_id: z.string().optional(), message_id: z.string().optional()}),
    event_id: z.string().min(1),
    /** Optional because a seed-style gateway may leave it out of a snapshot. */
    created_at: isoDateTimeSchema.optional(),
    /** Superseded by a later event (seed 001 §7 C-2): hidden from pinned memory, still listed in the log. */
    deprecated: z.boolean().default(false),
    /** sha256 of `content_md` as stored (lowercase hex); absent from a seed-style gateway. */
    content_hash: sha256HexSchema.optional(),
    /** The janitor replaced a secret or personal data in this event with `[REDACTED:<rule>]` (seed 001 §8 MUST-S5). */
    masked: z.boolean().optional(),
    /** The janitor found this event past its `ttl_days`: a cleanup candidate, deleted only after a person approves. */
    ttl_candidate: z.boolean().optional(),
  }),
)
export type StoredMemoryEvent = z.output<typeof storedMemoryEventSchema>

/** `created`: stored now; `duplicate`: the same event was stored before and this is its id (an idempotent retry). */
export const appendResponseSchema = z.lazy(() =>
  z
    .looseObject({
      event_id: z.string().min(1),
      status: z.enum(['created', 'duplicate']),
      warnings: z.array(z.string()).default([]),
    })
    .meta({title: 'Append answer', description: 'Answer of POST /v1/memory/append'}),
)
export type AppendResponse = z.output<typeof appendResponseSchema>

export const snapshotResponseSchema = z.lazy(() =>
  z
    .looseObject({
      pinned_md: z.string(),
      recent_events: z.array(storedMemoryEventSchema.unwrap()),
      /** e.g. `JARVIS_RULESET=v1.0` (seed 001 §12): a client compares it to know the rules it reads under. */
      ruleset_stamp: z.string().min(1),
      snapshot_id: z.string().min(1),
    })
    .meta({title: 'Memory snapshot', description: 'Answer of GET /v1/memory/snapshot'}),
)
export type SnapshotResponse = z.output<typeof snapshotResponseSchema>
