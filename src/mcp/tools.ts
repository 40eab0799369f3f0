/**
 * The tool table of CONTRACT §5: name, description, input and output schema, the backend call, and a short text
 * rendering of the result. Both doors (`jarvis mcp`, `/mcp`) publish this one table.
 */
import type {z} from 'zod'

import {shorten} from '../schemas/shorten.js'
import {editCallOf, grepQueryOf} from './arguments.js'
import type {McpBackend} from './backend.js'
import {
  appendInput,
  appendOutput,
  editInput,
  editOutput,
  grepInput,
  grepOutput,
  lsInput,
  lsOutput,
  readInput,
  readOutput,
  recallInput,
  recallOutput,
  searchInput,
  searchOutput,
  snapshotInput,
  snapshotOutput,
  syncInput,
  syncOutput,
  taskInput,
  taskOutput,
  writeInput,
  writeOutput,
  type ReadAnswer,
  type RecallOutput,
  type SyncOutput,
} from './schemas.js'

export interface ToolAnnotations {
  readOnlyHint?: boolean
  destructiveHint?: boolean
  idempotentHint?: boolean
  openWorldHint?: boolean
}

export interface ToolDefinition<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject, R = z.output<O>> {
  name: string
  title: string
  description: string
  input: I
  output: O
  annotations: ToolAnnotations
  run(backend: McpBackend, input: z.output<I>): Promise<R>
  /** A few lines for a model to read; the whole result is the structured content. */
  text(result: R): string
  /**
   * The structured content, when it is not the whole result: memory_read's text is its text content and is sent
   * once (a 4 MiB file sent twice or three times over is more than an MCP client reads in one message).
   */
  structured?(result: R): z.output<O>
}

function tool<I extends z.ZodObject, O extends z.ZodObject, R = z.output<O>>(definition: ToolDefinition<I, O, R>): ToolDefinition {
  return definition as unknown as ToolDefinition
}

const RECENT_SHOWN = 20
const LINE_CHARS = 160

function oneLine(text: string, max = LINE_CHARS): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return shorten(line, max)
}

/** The recall block cut to about `maxTokens` (4 characters a token), whole entries only. */
export function limitRecall(result: RecallOutput, maxTokens: number | undefined): RecallOutput {
  if (maxTokens === undefined || result.block.length <= maxTokens * 4) return result
  const max = maxTokens * 4
  const lines = result.block.split('\n')
  const kept = [lines[0]]
  const hits: RecallOutput['hits'] = []
  let length = lines[0].length
  for (let i = 1, hit = 0; i + 1 < lines.length; i += 2, hit++) {
    const add = lines[i].length + lines[i + 1].length + 2
    if (length + add > max) break
    kept.push(lines[i], lines[i + 1])
    length += add
    if (result.hits[hit]) hits.push(result.hits[hit])
  }
  if (kept.length === 1) kept.push('(no memory file fits in max_tokens)')
  return {...result, block: kept.join('\n'), hits}
}

function syncText(result: SyncOutput): string {
  if (result.dryRun && result.plan) {
    const planned = Object.entries(result.plan).filter(([kind, paths]) => kind !== 'record' && paths.length > 0)
    return [`dry run against ${result.server}, nothing changed; a sync would:`, ...planned.map(([kind, paths]) => `- ${kind}: ${paths.join(', ')}`), ...(planned.length === 0 ? ['- nothing'] : [])].join('\n')
  }
  const parts = [`pushed ${result.pushed.length}`, `pulled ${result.pulled.length}`, `merged ${result.merged.length}`, `deleted ${result.deleted.length}`]
  return [
    `synced with ${result.server} (${result.mode} mode): ${parts.join(', ')}`,
    ...result.conflicts.map((conflict) => `conflict: ${conflict.path}: ${conflict.reason}`),
    ...result.backups.map((backup) => `the local version of ${backup.path} lost and was kept as ${backup.backup}`),
    ...result.waiting.map((backup) => `waiting for \`jarvis resolve\`: ${backup}`),
    ...(result.replicas ?? []).map((replica) => `replica ${replica.kind} (${replica.workspace}): ${replica.error ? `failed: ${replica.error.message}` : (replica.skipped ?? `${replica.changes.length} change(s)`)}`),
  ].join('\n')
}

export const TOOLS: ToolDefinition[] = [
  tool({
    name: 'memory_snapshot',
    title: 'Read the shared memory',
    description:
      'The pinned memory and the recent events of your scopes, as you should read them at the start of a task. When the memory cannot be read the call fails (exit 3): tell the user and stop, never go on from a guess.',
    input: snapshotInput,
    output: snapshotOutput,
    annotations: {readOnlyHint: true, openWorldHint: false},
    run: (backend, input) => backend.snapshot(input),
    text(result) {
      const recent = result.recent_events.slice(0, RECENT_SHOWN).map((event) => `- [${event.kind}] ${event.dedupe_key} (${event.scope}, ${event.agent_id}, ${event.event_id}): ${oneLine(event.content_md)}`)
      const more = result.recent_events.length > RECENT_SHOWN ? [`… ${result.recent_events.length - RECENT_SHOWN} more in the structured result`] : []
      return [result.pinned_md.trim() || '(nothing pinned)', '', `Recent events (${result.recent_events.length}, scopes ${result.scopes.join(', ')}):`, ...recent, ...more].join('\n')
    },
  }),
  tool({
    name: 'memory_append',
    title: 'Write to the shared memory',
    description:
      'Appends one event to the shared, append-only log: a kind, a stable key and short Markdown content saying what, why and since when. To replace an event, append the new one with supersedes set to the old event_id. Secrets and personal data are refused (exit 5) and nothing is stored.',
    input: appendInput,
    output: appendOutput,
    annotations: {readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false},
    run: (backend, input) => backend.append(input),
    text(result) {
      const lines = result.events.map((event) => `${event.status} ${event.event_id}: [${event.kind}] ${event.dedupe_key} in ${event.scope}`)
      return [...lines, ...result.warnings.map((warning) => `warning: ${warning}`)].join('\n')
    },
  }),
  tool({
    name: 'memory_search',
    title: 'Search the shared memory',
    description: 'Searches the memory files and the shared event log for a topic; each is ranked by its own engine. Only events of scopes you may read are searched.',
    input: searchInput,
    output: searchOutput,
    annotations: {readOnlyHint: true, openWorldHint: false},
    run: (backend, input) => backend.search(input),
    text(result) {
      const files = result.files?.hits.map((hit) => `- file ${hit.path}${hit.title ? ` (${hit.title})` : ''}: ${oneLine(hit.snippet.map((line) => line.text).join(' … '))}`) ?? []
      const events = result.events?.events.map((event) => `- event ${event.event_id} [${event.kind}] ${event.dedupe_key} (${event.scope}): ${oneLine(event.content_md)}`) ?? []
      const found = [...files, ...events]
      return [found.length === 0 ? `nothing found for ${JSON.stringify(result.query)}` : `found for ${JSON.stringify(result.query)}:`, ...found, ...result.notes.map((note) => `note: ${note}`)].join('\n')
    },
  }),
  tool({
    name: 'recall',
    title: 'Recall memory files for a prompt',
    description: 'The [MEMORY CONTEXT] block: the memory files that best match the query, each with a one-line summary, ready to put before a prompt.',
    input: recallInput,
    output: recallOutput,
    annotations: {readOnlyHint: true, openWorldHint: false},
    run: async (backend, input) => limitRecall(await backend.recall(input), input.max_tokens),
    text: (result) => result.block,
  }),
  tool({
    name: 'memory_ls',
    title: 'List memory files',
    description: 'The Markdown memory files under a prefix of .memory/, with their title, tags, size and time.',
    input: lsInput,
    output: lsOutput,
    annotations: {readOnlyHint: true, openWorldHint: false},
    run: (backend, input) => backend.ls(input),
    text: (result) =>
      result.files.length === 0
        ? `no memory file under ${JSON.stringify(result.prefix || '.memory/')}`
        : [...result.files.map((file) => `${file.path}${file.title ? ` — ${file.title}` : ''}${file.problem ? ` (problem: ${file.problem})` : ''}`), ...(result.truncated ? [`… and more: the first ${result.files.length} are listed; a larger limit lists more`] : [])].join('\n'),
  }),
  tool({
    name: 'memory_read',
    title: 'Read a memory file',
    description:
      'The text of one memory file, as the text content of the result (byte for byte, front matter included); its front matter and its hash as the structured content. Give the hash back as base_hash to memory_write or memory_edit: a change made meanwhile is then merged, never overwritten.',
    input: readInput,
    output: readOutput,
    annotations: {readOnlyHint: true, openWorldHint: false},
    run: (backend, input): Promise<ReadAnswer> => backend.read(input),
    text: (answer) => answer.text,
    structured: ({text: _text, ...file}) => file,
  }),
  tool({
    name: 'memory_write',
    title: 'Write a memory file',
    description:
      'Creates or replaces a memory file (Markdown, optional YAML front matter; tags and metadata go into the front matter). With base_hash (from memory_read), a file changed since it was read is merged with that change, or refused (exit 4) where the changes overlap. Secrets and personal data are refused (exit 5) and nothing is written.',
    input: writeInput,
    output: writeOutput,
    annotations: {readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false},
    run: (backend, input) => backend.write(input),
    text: (result) => `${result.changed ? (result.created ? 'created' : result.merged ? 'merged with a change made since it was read, and written:' : 'written') : 'unchanged'} ${result.path}${result.hash ? ` (hash ${result.hash})` : ''}`,
  }),
  tool({
    name: 'memory_edit',
    title: 'Edit a memory file',
    description:
      'Changes a memory file by a patch: a unified diff of the file, or {replace, with} to replace the one occurrence of a text. A diff or a text that does not match the file is refused (exit 2), nothing written. With base_hash (from memory_read), a file changed since it was read gets the edit merged with that change, or refused (exit 4) where the changes overlap. Secrets and personal data are refused (exit 5).',
    input: editInput,
    output: editOutput,
    annotations: {readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false},
    run: (backend, input) => backend.edit(editCallOf(input)),
    text: (result) => `${result.merged ? 'edited and merged with a change made since it was read:' : 'edited'} ${result.path}${result.hash ? ` (hash ${result.hash})` : ''}`,
  }),
  tool({
    name: 'memory_grep',
    title: 'Grep memory files',
    description: 'Lines of the memory files that match a regular expression (pattern), by path and line number.',
    input: grepInput,
    output: grepOutput,
    annotations: {readOnlyHint: true, openWorldHint: false},
    run: (backend, input) => backend.grep(grepQueryOf(input)),
    text: (result) => (result.hits.length === 0 ? `no line matches /${result.regex}/${result.prefix ? ` under ${result.prefix}` : ''}` : result.hits.map((hit) => `${hit.path}:${hit.line}: ${oneLine(hit.text, 200)}`).join('\n')),
  }),
  tool({
    name: 'task_complete',
    title: 'Record a finished task',
    description: "Records a finished task in your worker memory (jarvis/<agent>.json) and answers that memory. When the server cannot be reached the task is queued and the call fails with exit 3.",
    input: taskInput,
    output: taskOutput,
    annotations: {readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false},
    run: (backend, input) => backend.completeTask(input),
    text: (result) => `recorded task ${result.taskId} for ${result.agentId} (${result.workerMemory.recentTasks.length} recent tasks)`,
  }),
  tool({
    name: 'sync',
    title: 'Sync the memory files',
    description:
      "Syncs this tree's memory files with the server (three-way merge), and sends what waits in the outbox. On a conflict the server's version is kept and the local one saved as a backup, named in the result (backups; waiting: earlier ones not yet resolved). dry_run: only the plan.",
    input: syncInput,
    output: syncOutput,
    annotations: {readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false},
    run: (backend, input) => backend.sync(input),
    text: syncText,

  }),
]

export const TOOL_NAMES = TOOLS.map((definition) => definition.name)
