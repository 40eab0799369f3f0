/**
 * Schemas of the machine-local `.nexus/` tree (CONTRACT §1): config, sync state, outbox and audit lines.
 * Every object is loose: fields this version does not know survive a read-modify-write (seed 001 §12).
 */
import {z} from 'zod'

import {agentIdSchema, isoDateTimeSchema, memoryPathSchema, pathRecord, projectSlugSchema, revisionSchema, sha256HexSchema} from './common.js'
import {confidenceSchema, memoryEventSchema, scopeSchema} from './events.js'
import {taskResultSchema} from './memory.js'
import {projectActiveRequestSchema} from './protocol.js'

/** Seed 002 "Configuration" defaults. */
export const SYNC_SETTINGS_DEFAULTS = {
  enabled: true,
  autoSync: true,
  incrementalSync: true,
  deduplicateMessages: true,
  maxRetries: 3,
  retryDelay: 1000,
  lockTimeout: 5000,
  requestTimeout: 60_000,
} as const

/** What a sync does with a file both sides changed: its own merge rule, the newer side whole, or nothing (a person decides). */
export const syncStrategySchema = z.enum(['merge', 'lww', 'manual'])
export type SyncStrategy = z.output<typeof syncStrategySchema>

export const syncSettingsSchema = z.looseObject({
  enabled: z.boolean().default(SYNC_SETTINGS_DEFAULTS.enabled),
  autoSync: z.boolean().default(SYNC_SETTINGS_DEFAULTS.autoSync),
  incrementalSync: z.boolean().default(SYNC_SETTINGS_DEFAULTS.incrementalSync),
  deduplicateMessages: z.boolean().default(SYNC_SETTINGS_DEFAULTS.deduplicateMessages),
  maxRetries: z.number().int().min(0).default(SYNC_SETTINGS_DEFAULTS.maxRetries),
  /** Milliseconds before the first retry. */
  retryDelay: z.number().int().min(0).default(SYNC_SETTINGS_DEFAULTS.retryDelay),
  /** Milliseconds to wait for the tree lock. */
  lockTimeout: z.number().int().min(0).default(SYNC_SETTINGS_DEFAULTS.lockTimeout),
  /** Milliseconds to wait for the server's answer to one request. */
  requestTimeout: z.number().int().min(100).default(SYNC_SETTINGS_DEFAULTS.requestTimeout),
  /** Per path pattern (glob, relative to .memory/; the first that matches wins), what a sync does when both sides changed a file. */
  strategies: z.record(z.string().min(1), syncStrategySchema).optional(),
  /**
   * A watch of the tree started on demand by a call in a large tree that finds none running, so that the calls after it
   * need not look at every file (src/warm/demand.ts); `off`: never started (a running `sync --watch` or MCP session
   * still answers). Absent: on demand.
   */
  watcher: z.enum(['on-demand', 'off']).optional(),
})
export type SyncSettings = z.output<typeof syncSettingsSchema>

/** Where a replica lives: absolute, or `~/…` under the home directory of whoever runs jarvis. */
const replicaPathSchema = z.lazy(() =>
  z
    .string()
    .min(1)
    .refine((p) => p.startsWith('/') || p === '~' || p.startsWith('~/') || /^[A-Za-z]:[\\/]/.test(p), 'must be an absolute path or start with ~/'),
)

/**
 * The folder under `.memory/` a replica mirrors into. Plain segments only, never under `jarvis/` (worker
 * memory): the replica owns its folder, so two replicas must not share or nest one (checked below).
 */
const replicaFolderSchema = z.lazy(() =>
  z
    .string()
    .max(200)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/, 'must be a relative folder of plain names (letters, digits, . _ -) separated by /')
    .refine((folder) => folder.split('/')[0] !== 'jarvis', 'jarvis/ holds worker memory; choose another folder'),
)

/** OpenClaw's own memory files (`MEMORY.md`, `memory/YYYY-MM-DD.md`) as a replica; docs/replicas.md. */
export const openclawReplicaSchema = z.lazy(() =>
  z.looseObject({
    kind: z.literal('openclaw'),
    path: replicaPathSchema.unwrap().meta({description: "OpenClaw's workspace directory", examples: ['~/.openclaw/workspace']}),
    folder: replicaFolderSchema.unwrap().default('openclaw').meta({description: 'Folder under .memory/ that mirrors the workspace'}),
    /** false keeps the entry (and its bases) but skips it: the way to pause a replica. */
    enabled: z.boolean().default(true),
  }),
)
export type OpenclawReplica = z.output<typeof openclawReplicaSchema>

/** Which scopes an event replica shows; default: `global`, and `project:<slug>` when the tree has a project. */
const replicaScopesSchema = z.lazy(() => z.array(scopeSchema).min(1).optional().meta({description: 'Scopes of the events shown (default: global and the project of the tree)'}))

/**
 * The confirmed decisions of the event log as one Markdown file per decision key, in a folder of the user's
 * choice (an AI_MEMORY folder, a notes app, a git repository); docs/replicas.md.
 */
export const aiMemoryReplicaSchema = z.lazy(() =>
  z.looseObject({
    kind: z.literal('ai-memory'),
    path: replicaPathSchema.unwrap().meta({description: 'Folder the decision files are written to', examples: ['~/AI_MEMORY']}),
    scopes: replicaScopesSchema.unwrap(),
    /** A decision below this confidence is not yet a confirmed one. */
    minConfidence: confidenceSchema.default('med').meta({description: 'Lowest confidence of a decision written (high, med or low)'}),
    enabled: z.boolean().default(true),
  }),
)
export type AiMemoryReplica = z.output<typeof aiMemoryReplicaSchema>

/** The day's events in an Obsidian vault's daily note, inside a block jarvis owns; docs/replicas.md. */
export const obsidianReplicaSchema = z.lazy(() =>
  z.looseObject({
    kind: z.literal('obsidian'),
    path: replicaPathSchema.unwrap().meta({description: 'The Obsidian vault (the folder that holds .obsidian/)', examples: ['~/Documents/Vault']}),
    scopes: replicaScopesSchema.unwrap(),
    /** The heading of jarvis's block in the note. */
    heading: z.string().trim().min(1).max(100).regex(/^[^\r\n#]+$/, 'must be one line of text without #').default('Jarvis').meta({description: "Heading of jarvis's block in the daily note"}),
    enabled: z.boolean().default(true),
  }),
)
export type ObsidianReplica = z.output<typeof obsidianReplicaSchema>

export const REPLICA_KINDS = ['openclaw', 'ai-memory', 'obsidian'] as const

/** One entry of `replicas`: files mirrored with `.memory/` (openclaw), or the event log written out (ai-memory, obsidian). */
export const replicaSchema = z.lazy(() =>
  z.discriminatedUnion('kind', [openclawReplicaSchema.unwrap(), aiMemoryReplicaSchema.unwrap(), obsidianReplicaSchema.unwrap()], {
    error: (issue) =>
      issue.code === 'invalid_union'
        ? `unknown replica kind ${JSON.stringify((issue.input as {kind?: unknown} | undefined)?.kind ?? null)} (this version knows: ${REPLICA_KINDS.join(', ')})`
        : undefined,
  }),
)
export type Replica = z.output<typeof replicaSchema>

// A config without replicas (most trees) never builds them: `replicas` is optional, and zod reads an absent value
// without building what it would have checked.
const replicasSchema = z.lazy(() =>
  z.array(replicaSchema.unwrap()).superRefine((replicas, ctx) => {
    // Only an openclaw replica owns a folder of .memory/; the event replicas write outside the tree.
    const folderOf = (replica: Replica) => (replica.kind === 'openclaw' ? replica.folder : null)
    replicas.forEach((replica, i) => {
      const folder = folderOf(replica)
      if (folder === null) return
      const clash = replicas.findIndex((other, j) => {
        const theirs = folderOf(other)
        return j < i && theirs !== null && (theirs === folder || theirs.startsWith(`${folder}/`) || folder.startsWith(`${theirs}/`))
      })
      if (clash !== -1) ctx.addIssue({code: 'custom', path: [i, 'folder'], message: `.memory/${folder}/ overlaps replicas.${clash}.folder (.memory/${folderOf(replicas[clash])}/); give each replica its own folder`})
    })
  }),
)

export const nexusConfigSchema = z
  .looseObject({
    server: z.url({protocol: /^https?$/, error: 'must be an http(s) URL'}).optional(),
    /** The agent this machine writes as; also names its worker memory `jarvis/<agentId>.json`. */
    agentId: agentIdSchema.optional(),
    /** Slug of the project: the `project:<slug>` scope of events written from this tree. */
    project: projectSlugSchema.optional(),
    // prefault, not default: zod 4 returns a default as-is, a prefault is parsed (so the field defaults apply).
    sync: syncSettingsSchema.prefault({}),
    /** Other copies of the memory kept in step by `jarvis replicate` and `jarvis sync` (docs/replicas.md). */
    replicas: replicasSchema.optional(),
  })
  .meta({title: 'Nexus config', description: '.nexus/config.json'})
export type NexusConfig = z.output<typeof nexusConfigSchema>
export type NexusConfigInput = z.input<typeof nexusConfigSchema>

/**
 * `.nexus/replicas/<id>/state.json`: which files the last replication left equal on both sides, by their path
 * under the replica's folder, with the hash of the base copy kept beside it in `base/`.
 */
export const replicaStateSchema = z.lazy(() =>
  z
    .looseObject({
      version: z.literal(1).default(1),
      kind: z.string().min(1),
      /** The workspace as resolved (absolute), and the folder under `.memory/`: for a person looking at `.nexus/`. */
      path: z.string().min(1),
      folder: z.string().min(1),
      updatedAt: isoDateTimeSchema.optional(),
      files: z.record(z.string(), z.looseObject({hash: sha256HexSchema})).default(() => ({})),
    })
    .meta({title: 'Replica state', description: '.nexus/replicas/<id>/state.json'}),
)
export type ReplicaState = z.output<typeof replicaStateSchema>

/**
 * `.nexus/replicas/<id>/state.json` of an event replica (ai-memory, obsidian): the hash of what jarvis last wrote
 * to each of its files (a file whose text no longer has that hash was edited by a person, and is theirs), by its
 * path under the replica's directory; for obsidian, what jarvis wrote is its block of the note.
 */
export const eventReplicaStateSchema = z.lazy(() =>
  z
    .looseObject({
      version: z.literal(1).default(1),
      kind: z.string().min(1),
      path: z.string().min(1),
      updatedAt: isoDateTimeSchema.optional(),
      /** obsidian: the last day (YYYY-MM-DD, local time) whose note was written; the next run starts there. */
      lastDay: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).optional(),
      files: z.record(z.string(), z.looseObject({hash: sha256HexSchema, day: z.string().optional()})).default(() => ({})),
    })
    .meta({title: 'Event replica state', description: '.nexus/replicas/<id>/state.json of an ai-memory or obsidian replica'}),
)
export type EventReplicaState = z.output<typeof eventReplicaStateSchema>

/**
 * `.nexus/backup-owners.json`: which memory file each conflict backup in `.memory/` belongs to, by the backup's
 * path. A backup's name alone cannot say it when two files share a stem (`notes.md`, `notes.json`).
 */
export const backupOwnersSchema = z.lazy(() =>
  z
    .looseObject({
      version: z.literal(1).default(1),
      backups: pathRecord(memoryPathSchema).default(() => ({})),
    })
    .meta({title: 'Backup owners', description: '.nexus/backup-owners.json'}),
)
export type BackupOwners = z.output<typeof backupOwnersSchema>

/**
 * `.nexus/replica-failures.json`: the last failure of each replica (by its id), until a later run of it succeeds;
 * `jarvis status` shows them. Only what a person needs to see that a replica is broken, and why.
 */
export const replicaFailuresSchema = z.lazy(() =>
  z
    .looseObject({
      version: z.literal(1).default(1),
      failures: z
        .record(z.string(), z.looseObject({at: isoDateTimeSchema, kind: z.string().min(1), workspace: z.string(), code: z.string(), message: z.string()}))
        .default(() => ({})),
    })
    .meta({title: 'Replica failures', description: '.nexus/replica-failures.json'}),
)
export type ReplicaFailures = z.output<typeof replicaFailuresSchema>

/**
 * `.nexus/conflicts/<key>.json`: what a conflict that left a backup was between, so that `jarvis resolve --keep
 * local` can put back the local side of the overlap only. `key` is made from the file and the backup's text (a
 * backup keeps its text when it is renamed to a number, not its name). `base`: the text both sides started from
 * (null: none known); `remote`: the other side's text; `merged`: what the sync wrote into the file.
 */
export const conflictRecordSchema = z.lazy(() =>
  z
    .looseObject({
      version: z.literal(1).default(1),
      file: memoryPathSchema,
      at: isoDateTimeSchema,
      base: z.string().nullable(),
      remote: z.string(),
      merged: z.string(),
    })
    .meta({title: 'Conflict record', description: '.nexus/conflicts/<key>.json'}),
)
export type ConflictRecord = z.output<typeof conflictRecordSchema>

/** The base of one synced path: what the file was at its last sync, for the next three-way merge. */
export const syncedFileStateSchema = z.lazy(() =>
  z.looseObject({
    /** sha256 hex of the base content (the file as of its last sync). */
    hash: sha256HexSchema,
    /** Server revision, when the server speaks revisions. */
    rev: revisionSchema.optional(),
    /** Server `updatedAt` of the base, when known (the only clock a seed-style server offers). */
    updatedAt: isoDateTimeSchema.optional(),
    /** When this client last synced the path. */
    syncedAt: isoDateTimeSchema,
  }),
)
export type SyncedFileState = z.output<typeof syncedFileStateSchema>

export const syncStateSchema = z.lazy(() =>
  z
    .looseObject({
      /** A later format gets a new number, so an old client stops instead of misreading it. */
      version: z.literal(1).default(1),
      server: z.string().optional(),
      /** The server's change sequence as of the last full sync, for `status?since=`. */
      seq: z.number().int().nonnegative().optional(),
      /** `timestamp` when the server sends no revisions (CONTRACT §3); the command reports it. */
      mode: z.enum(['revision', 'timestamp']).optional(),
      lastSyncAt: isoDateTimeSchema.optional(),
      files: pathRecord(syncedFileStateSchema.unwrap()).default(() => ({})),
      /** Session sync state (seed 002 ISyncState), owned by session/. */
      sessions: z.record(z.string(), z.unknown()).optional(),
    })
    .meta({title: 'Sync state', description: '.nexus/sync-state.json'}),
)
export type SyncState = z.output<typeof syncStateSchema>
export type SyncStateInput = z.input<typeof syncStateSchema>

export const outboxKindSchema = z.enum(['task-result', 'memory-event', 'active-project'])
export type OutboxKind = z.output<typeof outboxKindSchema>

/**
 * One line of `.nexus/outbox.jsonl`. `payload` is checked against its kind's body schema when it is sent, not
 * when it is read: an entry written by an older version must still be readable, to be reported if refused.
 */
export const outboxEntrySchema = z.lazy(() =>
  z
    .looseObject({
      id: z.string().min(1),
      kind: outboxKindSchema,
      createdAt: isoDateTimeSchema,
      payload: z.unknown(),
    })
    .meta({title: 'Outbox entry', description: 'One line of .nexus/outbox.jsonl'}),
)
export type OutboxEntry = z.output<typeof outboxEntrySchema>

/** The entry types jarvis writes (seed 003 §8); readers accept any other name a newer version writes. */
export const AUDIT_TYPES = ['sync', 'conflict', 'backup', 'resolution', 'partition', 'reconnect', 'delete', 'lock', 'error', 'mask', 'replicate'] as const
export type AuditType = (typeof AUDIT_TYPES)[number]

export const auditEntrySchema = z
  .looseObject({
    at: isoDateTimeSchema,
    type: z.string().min(1).meta({examples: [...AUDIT_TYPES]}),
  })
  .meta({title: 'Audit entry', description: 'One line of .nexus/audit.jsonl; every other field depends on `type`'})
export type AuditEntry = z.output<typeof auditEntrySchema>

/** The body schema each outbox kind is checked against before it is sent. */
export const outboxPayloadSchemas = {
  'task-result': taskResultSchema,
  'memory-event': memoryEventSchema,
  'active-project': projectActiveRequestSchema,
} as const satisfies Record<OutboxKind, z.ZodType>

/**
 * `.nexus/pending-episodes/<time>-<agent>-<session>-<n>.json`: what a recording hook could not write into the session's
 * episode because another jarvis held the tree past its wait. Written once, atomically, without the lock; the next
 * hook or background sync that holds the lock writes it into the episode and removes it (src/hook/pending.ts).
 */
export const pendingEpisodeSchema = z.looseObject({
  agent: z.enum(['claude', 'gemini', 'codex', 'openclaw']),
  sessionId: z.string().min(1),
  /** The session's digest as the hook made it, lines holding a secret already left out. */
  digest: z.object({
    decisions: z.array(z.string()),
    files: z.array(z.object({path: z.string(), verbs: z.array(z.string())})),
    learned: z.string().optional(),
    sources: z.array(z.string()),
  }),
  /** Whether the session adds to memory (a session that only asked writes no new episode). */
  adds: z.boolean(),
  /** The session's first day (YYYY-MM-DD), when known. */
  startDate: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/)
    .optional(),
  /** When the hook ran: the episode's `updated` time. */
  at: isoDateTimeSchema,
  project: z.string().optional(),
})
export type PendingEpisode = z.output<typeof pendingEpisodeSchema>
