/**
 * The input and output schemas of the MCP tools (CONTRACT §5), built from the zod schemas of src/schemas/.
 * One table for both doors: `jarvis mcp` (stdio) and `/mcp` on `jarvis serve` publish exactly these.
 *
 * Every output schema admits a tool error: a refused or failed call answers `isError: true` with
 * `structuredContent: {error: {code, message, exit}}`, and an SDK client checks structured content against the
 * output schema even on an error result. So each result schema is published with its fields optional plus an
 * optional `error`; the result itself is checked against the full schema by the tests.
 *
 * One source of truth per result: each output schema is checked at compile time against the result type of the
 * operation behind its tool (`ResultsFitTheirSchemas` at the end of this file). A field added to an operation's
 * result and not to its tool's schema fails `npm run typecheck`, naming the field: an SDK client that listed the
 * tools refuses a result with a field the schema does not list (error -32602), so the field would break every agent.
 *
 * The file tools accept the design's argument names (memory_ls(prefix, limit), memory_read(path),
 * memory_write(path, content, tags?, metadata?), memory_edit(path, patch), memory_grep(pattern, prefix?, limit?))
 * and keep the earlier ones as aliases; arguments.ts turns either into the one call a backend gets.
 */
import {z} from 'zod'

import type {GrepResult, ReadResult} from '../ops/files.js'
import type {LsResult} from '../ops/memory-ls.js'
import type {AppendResult} from '../ops/events/append.js'
import type {SnapshotResult} from '../ops/events/snapshot.js'
import type {RecallResult} from '../ops/recall.js'
import type {MemorySearchResult} from '../ops/search.js'
import type {SyncOnceResult} from '../ops/sync.js'
import type {TaskCompleteResult} from '../ops/task.js'
import type {EditResult, WriteResult} from '../files/index.js'

import {
  agentIdSchema,
  appendResponseSchema,
  CONTENT_MD_MAX,
  confidenceSchema,
  dedupeKeySchema,
  eventKindSchema,
  isoDateTimeSchema,
  memoryPathSchema,
  noNul,
  scopeSchema,
  snapshotResponseSchema,
  storedMemoryEventSchema,
  workerMemorySchema,
} from '../schemas/index.js'

/**
 * A first bound on the texts of a write or an edit, in characters: a longer text is over the 4 MiB of UTF-8 a memory
 * file may hold anyway (a character is at least one byte). What the file would hold is checked in bytes by the write
 * itself (files/tools.ts assertWritable), as on the command line.
 */
export const MAX_FILE_CHARS = 4 * 1024 * 1024
/** Queries, regexes, replace texts of an edit: generous, but bounded so a huge string is a clear refusal. */
const MAX_QUERY_CHARS = 2000
const MAX_PATH_CHARS = 1024

// ---------------------------------------------------------------------------------------------------------------
// errors

export const toolErrorSchema = z.object({
  /** The stable code of the error (`SECRET_REFUSED`, `UNREACHABLE`, `BAD_INPUT`, `LOCKED`, `CONFLICT_LEFT`, …). */
  code: z.string(),
  message: z.string(),
  /** The exit code the same refusal has on the command line (CONTRACT §2). */
  exit: z.number().int().min(1).max(6),
  data: z.record(z.string(), z.unknown()).optional(),
})
export type ToolErrorContent = z.output<typeof toolErrorSchema>

// ---------------------------------------------------------------------------------------------------------------
// inputs

const path = memoryPathSchema.describe('A memory file, relative to .memory/ (e.g. projects/my-app/notes.md).')
const prefix = z.string().max(MAX_PATH_CHARS).describe('Only files under this path of .memory/ (e.g. episodes/).')
const hash = z.string().regex(/^[0-9a-f]{64}$/, {error: 'must be the hash memory_read returned (64 lowercase hex characters)'})

export const snapshotInput = z.object({
  scopes: z.array(scopeSchema).min(1).max(20).optional().describe('Default: global, project:<the tree project>, agent:<you>.'),
  limit_recent: z.number().int().min(1).max(500).optional().describe('How many recent events (default 50).'),
})

export const appendInput = z.object({
  kind: eventKindSchema,
  key: dedupeKeySchema.optional().describe('The stable key of what this event is about (its dedupe_key), e.g. config:bot_token_location.'),
  dedupe_key: dedupeKeySchema.optional().describe('Same as key.'),
  content: z.string().min(1).max(CONTENT_MD_MAX).describe('Short Markdown: what, why, since when (at most 1200 characters recommended).'),
  scope: scopeSchema.optional().describe('global (default), project:<slug>, or agent:<you> for notes only you read.'),
  confidence: confidenceSchema.optional(),
  supersedes: z.string().min(1).max(200).optional().describe('The event_id this event replaces.'),
  ttl_days: z.number().int().min(0).max(36_500).optional().describe('Days until it becomes a cleanup candidate; 0 keeps it.'),
  tags: z.array(z.string().min(1).max(64)).max(20).optional(),
})

export const searchInput = z.object({
  query: z.string().min(1).max(MAX_QUERY_CHARS).refine(...noNul),
  limit: z.number().int().min(1).max(100).optional(),
  scope: z.string().max(100).optional().describe('Events of this scope only (global, project:<slug>, agent:<you>, or agent:* / project:*).'),
  kind: eventKindSchema.optional().describe('Events of this kind only.'),
})

export const recallInput = z.object({
  query: z.string().min(1).max(MAX_QUERY_CHARS),
  limit: z.number().int().min(1).max(10).optional().describe('Files to name (default 3).'),
  max_tokens: z.number().int().min(16).max(100_000).optional().describe('Cut the block to about this many tokens (4 characters each).'),
})

export const lsInput = z.object({
  prefix: prefix.optional(),
  limit: z.number().int().min(1).max(10_000).optional(),
})

export const readInput = z.object({path})

export const writeInput = z.object({
  path,
  content: z.string().max(MAX_FILE_CHARS).describe('The whole file (Markdown, optional YAML front matter).'),
  title: z.string().max(500).optional(),
  tags: z.array(z.string().min(1).max(64)).max(50).optional(),
  metadata: z
    .record(z.string().min(1).max(100), z.unknown())
    .optional()
    .describe('Fields for the front matter of the file (e.g. {"project": "my-app", "source": "review"}); title and tags, when given, win over theirs.'),
  base_hash: hash.optional().describe('The hash memory_read returned: if the file changed since, the write is merged with that change or refused, never overwrites it.'),
})

const replaceText = z.string().min(1).max(MAX_FILE_CHARS).describe('The exact text to replace; it must occur once.')
const withText = z.string().max(MAX_FILE_CHARS).describe('The text that replaces it.')
const unifiedDiff = z
  .string()
  .min(1)
  .max(MAX_FILE_CHARS)
  .describe('A unified diff of the file, as `diff -u` or `git diff` print it (@@ hunks; the file names are not read). Each hunk is placed where its context and removed lines are.')

export const editInput = z.object({
  path,
  patch: z
    .union([unifiedDiff, z.object({replace: replaceText, with: withText})])
    .optional()
    .describe('The change: a unified diff of the file, or {replace, with} to replace the one occurrence of a text.'),
  replace: replaceText.optional().describe('Same as patch.replace: give patch, or replace and with.'),
  with: withText.optional().describe('Same as patch.with.'),
  base_hash: hash.optional().describe('The hash memory_read returned: if the file changed since, the edit is merged with that change or refused, never overwrites it.'),
})

const grepPattern = z.string().min(1).max(MAX_QUERY_CHARS)
export const grepInput = z.object({
  pattern: grepPattern.optional().describe('A JavaScript regular expression, matched line by line.'),
  regex: grepPattern.optional().describe('Same as pattern.'),
  prefix: prefix.optional(),
  limit: z.number().int().min(1).max(10_000).optional(),
  ignore_case: z.boolean().optional(),
})

export const taskInput = z.object({
  type: z.string().min(1).max(200).describe('What kind of task (e.g. code-review, bugfix).'),
  taskId: z.string().min(1).max(200).optional().describe('Default: a new UUID.'),
  input: z.string().max(20_000).optional(),
  output: z.string().max(20_000).optional(),
  success: z.boolean().optional().describe('Default true.'),
  responseTime: z.number().nonnegative().optional().describe('Milliseconds.'),
  model: z.string().max(200).optional(),
  filesModified: z.array(z.string().max(MAX_PATH_CHARS)).max(1000).optional(),
  timestamp: isoDateTimeSchema.optional(),
})

export const syncInput = z.object({
  dry_run: z.boolean().optional().describe('Only say what a sync would do (the plan); nothing is sent, fetched or written.'),
})

export type SnapshotInput = z.output<typeof snapshotInput>
export type AppendInput = z.output<typeof appendInput>
export type SearchInput = z.output<typeof searchInput>
export type RecallInput = z.output<typeof recallInput>
export type LsInput = z.output<typeof lsInput>
export type ReadInput = z.output<typeof readInput>
export type WriteInput = z.output<typeof writeInput>
export type EditInput = z.output<typeof editInput>
export type GrepInput = z.output<typeof grepInput>
export type TaskInput = z.output<typeof taskInput>
export type SyncInput = z.output<typeof syncInput>

// ---------------------------------------------------------------------------------------------------------------
// outputs (the operations' results)

export const snapshotOutput = snapshotResponseSchema.unwrap().extend({
  agent_id: z.string(),
  scopes: z.array(z.string()),
  server: z.string().optional(),
  cached: z.object({at: z.string(), age_seconds: z.number(), server: z.string().optional()}).nullable().optional(),
})

const appendStatus = appendResponseSchema.unwrap().shape.status
const appendedEvent = z.object({event_id: z.string(), status: appendStatus, scope: z.string(), kind: z.string(), dedupe_key: z.string(), warnings: z.array(z.string())})
export const appendOutput = z.object({
  agent_id: z.string(),
  run_id: z.string(),
  server: z.string().optional(),
  event_id: z.string().optional(),
  status: appendStatus.optional(),
  events: z.array(appendedEvent),
  warnings: z.array(z.string()),
})

const searchHit = z.object({
  path: z.string(),
  title: z.string().optional(),
  score: z.number(),
  snippet: z.array(z.object({line: z.number().int(), text: z.string()})),
})
/** The filters of an event search, as the server was asked them. */
const eventFilters = z.object({
  scope: z.string().optional(),
  kind: z.string().optional(),
  dedupe_key: z.string().optional(),
  agent: z.string().optional(),
  since: z.string().optional(),
  until: z.string().optional(),
  q: z.string().optional(),
  limit: z.number().optional(),
  include_deprecated: z.boolean().optional(),
})
const eventList = z.object({
  server: z.string().optional(),
  query: z.string().optional(),
  filters: eventFilters,
  total: z.number().int(),
  events: z.array(storedMemoryEventSchema.unwrap().extend({score: z.number().optional()})),
})
export const searchOutput = z.object({
  query: z.string(),
  files: z.object({hits: z.array(searchHit), mode: z.enum(['hybrid', 'keyword']), model: z.string().optional(), note: z.string().optional()}).nullable(),
  events: eventList.nullable(),
  notes: z.array(z.string()),
})

export const recallOutput = z.object({
  block: z.string().describe('The [MEMORY CONTEXT] block, ready for a prompt.'),
  hits: z.array(searchHit),
  mode: z.enum(['hybrid', 'keyword']),
  model: z.string().optional().describe('The embedding model of a hybrid ranking.'),
  note: z.string().optional(),
})

export const lsOutput = z.object({
  prefix: z.string(),
  files: z.array(
    z.object({
      path: z.string(),
      title: z.string().optional(),
      tags: z.array(z.string()),
      size: z.number(),
      updatedAt: z.string(),
      problem: z.string().optional(),
    }),
  ),
  truncated: z.literal(true).optional().describe('More files are under the prefix than the limit lets through: ask again with a larger limit.'),
})

/**
 * memory_read's structured content: all but the file's text, which is the result's text content. Sent once: a 4 MiB
 * file of characters JSON escapes is 8 MiB as a JSON string, and an MCP client on stdio reads at most 10 MiB of one
 * message (mcp/stdio.ts).
 */
export const readOutput = z.object({
  path: z.string(),
  title: z.string().optional(),
  tags: z.array(z.unknown()),
  frontMatter: z.record(z.string(), z.unknown()),
  lastAccessed: z.string(),
  hash: z.string().describe('sha256 of the text: give it back as base_hash to memory_write / memory_edit.'),
})

const mergeReport = {
  hash: z.string().optional().describe('sha256 of the text now on disk.'),
  merged: z.boolean().optional().describe('True when the file had changed since it was read and the change was merged in.'),
}
export const writeOutput = z.object({path: z.string(), created: z.boolean(), changed: z.boolean(), ...mergeReport})
export const editOutput = z.object({path: z.string(), ...mergeReport})

export const grepOutput = z.object({
  regex: z.string(),
  prefix: z.string(),
  hits: z.array(z.object({path: z.string(), line: z.number().int(), text: z.string()})),
})

export const taskOutput = z.object({
  queued: z.literal(false),
  agentId: z.union([agentIdSchema, z.string()]),
  taskId: z.string(),
  workerMemory: workerMemorySchema,
})

const pathReason = z.object({path: z.string(), reason: z.string()})
const backup = z.object({path: z.string(), backup: z.string().describe('Where the version that lost was kept, relative to .memory/.')})
const replicaChange = z.object({action: z.string(), memoryPath: z.string(), workspacePath: z.string()})
/** What one configured replica (`.nexus/config.json` `replicas`) did around the sync. */
const replicaReport = z.object({
  id: z.string(),
  kind: z.string(),
  workspace: z.string(),
  folder: z.string(),
  skipped: z.string().optional(),
  error: z.object({code: z.string(), message: z.string()}).optional(),
  changes: z.array(replicaChange),
  conflicts: z.array(pathReason),
  backups: z.array(backup),
  held: z.array(replicaChange),
  refused: z.array(pathReason),
  left: z.array(z.string()),
  written: z.array(z.string()),
  kept: z.array(pathReason),
  appended: z.array(z.object({path: z.string(), event_id: z.string(), dedupe_key: z.string(), status: z.string()})),
})
const planned = z.array(z.string())
export const syncOutput = z.object({
  server: z.string(),
  mode: z.enum(['revision', 'timestamp']).describe('revision: the server keeps revisions; timestamp: a server with only the times of its files.'),
  pushed: z.array(z.string()),
  pulled: z.array(z.string()),
  merged: z.array(z.string()),
  deleted: z.array(z.string()),
  conflicts: z.array(z.object({path: z.string(), rule: z.string(), reason: z.string()})),
  backups: z.array(backup).describe('Conflicts of this sync: the server\'s version was kept, the local one saved here.'),
  waiting: z.array(z.string()).describe('Backups of earlier conflicts still waiting for `jarvis resolve` (relative to .memory/).'),
  invalid: z.array(z.object({path: z.string(), problems: z.array(z.string())})),
  refused: z
    .array(z.object({path: z.string(), findings: z.array(z.object({kind: z.enum(['secret', 'email', 'phone']), rule: z.string(), field: z.string(), line: z.number().int(), column: z.number().int()}))}))
    .describe('Files holding a secret or personal data: left on this machine as they are, not sent.'),
  outbox: z.object({sent: z.number(), left: z.number(), refused: z.number().optional(), dropped: z.number().optional(), missing: z.array(z.string()).optional()}),
  dryRun: z.boolean(),
  plan: z
    .object({push: planned, pull: planned, merge: planned, 'delete-remote': planned, 'delete-local': planned, record: planned})
    .optional()
    .describe('A dry run: what the sync would do, by action.'),
  attempts: z.number(),
  replicas: z.array(replicaReport).optional(),
})

export type SnapshotOutput = z.output<typeof snapshotOutput>
export type AppendOutput = z.output<typeof appendOutput>
export type SearchOutput = z.output<typeof searchOutput>
export type RecallOutput = z.output<typeof recallOutput>
export type LsOutput = z.output<typeof lsOutput>
export type ReadOutput = z.output<typeof readOutput>
/** What a backend answers for memory_read: the structured content and the file's text. */
export type ReadAnswer = ReadOutput & {text: string}
export type WriteOutput = z.output<typeof writeOutput>
export type EditOutput = z.output<typeof editOutput>
export type GrepOutput = z.output<typeof grepOutput>
export type TaskOutput = z.output<typeof taskOutput>
export type SyncOutput = z.output<typeof syncOutput>

/** The published output schema of a result schema: every field optional, plus `error` (see the top of this file). */
export function publishedOutput<S extends z.ZodObject>(schema: S) {
  return schema.partial().extend({error: toolErrorSchema.optional()})
}

// ---------------------------------------------------------------------------------------------------------------
// each operation's result fits its tool's output schema (checked by `npm run typecheck`)

type ItemOf<T> = T extends readonly (infer Item)[] ? Item : never

/**
 * The fields of `R`, at any depth (as `a.b`, `list[].c`), that the schema type `O` does not list: the ones an SDK
 * client refuses. An object schema that admits any field (z.looseObject) lists every field.
 */
type Unlisted<R, O, At extends string = ''> = R extends readonly unknown[]
  ? Unlisted<ItemOf<R>, ItemOf<NonNullable<O>>, At extends `${infer Field}.` ? `${Field}[].` : `${At}[].`>
  : R extends object
    ? string extends keyof NonNullable<O>
      ? never
      : {[K in keyof R & string]-?: K extends keyof NonNullable<O> ? Unlisted<R[K], NonNullable<O>[K], `${At}${K}.`> : `${At}${K}`}[keyof R & string]
    : never

/**
 * True when a result of type `R` validates against the output schema of type `O`: it is assignable to it, and has
 * no field the schema does not list. Else a type that names what is wrong, shown by the compiler's error.
 */
type Fits<R, O> = [R] extends [O]
  ? [Unlisted<R, O>] extends [never]
    ? true
    : {'add these fields of the result to the tool\'s output schema in src/mcp/schemas.ts': Unlisted<R, O>}
  : {'the result type does not match the tool\'s output schema in src/mcp/schemas.ts': R}

type Holds<T extends true> = T

/**
 * The operations behind `jarvis mcp` (mcp/local.ts) against their tools' output schemas. The `/mcp` backend
 * (mcp/hosted.ts) builds its results as the schema types themselves.
 */
export type ResultsFitTheirSchemas = [
  Holds<Fits<SnapshotResult, SnapshotOutput>>,
  Holds<Fits<AppendResult, AppendOutput>>,
  Holds<Fits<MemorySearchResult, SearchOutput>>,
  Holds<Fits<RecallResult, RecallOutput>>,
  Holds<Fits<LsResult, LsOutput>>,
  Holds<Fits<Omit<ReadResult, 'text' | 'body'> & {hash: string}, ReadOutput>>,
  Holds<Fits<WriteResult & {hash?: string}, WriteOutput>>,
  Holds<Fits<EditResult & {hash?: string}, EditOutput>>,
  Holds<Fits<GrepResult, GrepOutput>>,
  Holds<Fits<TaskCompleteResult, TaskOutput>>,
  Holds<Fits<SyncOnceResult, SyncOutput>>,
]
