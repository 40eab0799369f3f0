/**
 * The backend of `/mcp` on `jarvis serve`: the same tools on the server's own memory, as the agent of the bearer
 * token. The event tools call the event log the `/v1` routes call (same scope rules, same secret scan); the file
 * tools act on the server's file store (the synced `.memory/` files) with the rules of the memory-file tools
 * (path guard, front matter, secret refusal, merge-or-refuse on a base); `sync` is refused: sync runs on a client.
 *
 * server/mcp/ adapts the server's services to `HostedServices` (and their HTTP errors to the contract's exit codes).
 */
import {randomUUID} from 'node:crypto'

import {BadInputError, ExitCode, JarvisError} from '../errors.js'
import {defaultSnapshotScopes} from '../events/rules.js'
import {checkMemoryPath, checkPrefix, compileGrep, composeMemoryText, type GrepFile, grepGuarded, type FrontMatter, MemoryFileNotFoundError, parseMemoryFile, tagsOf} from '../files/index.js'
import {applyEdit} from '../files/index.js'
import {assertWritable, mergeSinceBase} from '../files/tools.js'
import {newRunId} from '../ops/events/common.js'
import {agentPrompt} from '../ops/prompt.js'
import {RECALL_POOL} from '../ops/recall.js'
import {answeringLines, orderForQuery, queryTerms} from '../ops/recall-rules.js'
import {readTaskResult} from '../ops/task.js'
import type {AppendResponse, SnapshotResponse, StoredMemoryEvent, TaskResult, WorkerMemory} from '../schemas/index.js'
import {toSearchDocument} from '../search/document.js'
import {checkRecallLimit, MemoryTextIndex, recallBlock, searchTexts} from '../search/index.js'
import {hashText} from '../store/index.js'
import type {EditCall, GrepQuery} from './arguments.js'
import {type McpBackend, ReadTexts} from './backend.js'
import {eventOf} from './events.js'
import type {
  AppendInput,
  AppendOutput,
  EditOutput,
  GrepOutput,
  LsInput,
  LsOutput,
  ReadInput,
  ReadAnswer,
  RecallInput,
  RecallOutput,
  SearchInput,
  SearchOutput,
  SnapshotInput,
  SnapshotOutput,
  SyncOutput,
  TaskInput,
  TaskOutput,
  WriteInput,
  WriteOutput,
} from './schemas.js'

export interface HostedFile {
  path: string
  content: string
  rev: number
  hash: string
  updatedAt: string
}

export interface HostedChange {
  path: string
  rev: number
  updatedAt: string
  hash?: string | null
  deleted?: boolean
}

/** What the server offers the tools, as the token's agent. Every method throws JarvisErrors (exit codes of §2). */
export interface HostedServices {
  agentId: string
  /** The server's URL as the client reached it, for the instructions. */
  url?: string
  snapshot(query: {scopes?: string; limit_recent?: string}): Promise<SnapshotResponse>
  append(event: Record<string, unknown>, idempotencyKey: string): Promise<AppendResponse>
  events(query: {q?: string; scope?: string; kind?: string; limit?: string}): Promise<{events: (StoredMemoryEvent & {score?: number})[]; total: number}>
  /** Every path changed after `since` (every path without it), tombstones included, and the store's seq. */
  changes(since?: number): Promise<{seq: number; full: boolean; files: HostedChange[]}>
  /** The live files among `paths`. */
  read(paths: string[]): Promise<Map<string, HostedFile>>
  /** Writes `path` if its revision is still `baseRev` (null: it does not exist); `{ok: false}` when another write came first. */
  write(path: string, content: string, baseRev: number | null): Promise<{ok: true; rev: number; hash: string} | {ok: false}>
  syncTask(task: TaskResult): Promise<WorkerMemory>
}

/** Kept by the server for all `/mcp` requests: the keyword index of its files and the texts read through `/mcp`. */
export class HostedState {
  readonly texts = new ReadTexts()
  readonly index = new MemoryTextIndex()
  private seq: number | undefined
  private queue: Promise<unknown> = Promise.resolve()

  /** Brings the index up to date with the file store: only the paths changed since the last call are read. */
  refresh(services: HostedServices): Promise<void> {
    const run = this.queue.then(() => this.refreshNow(services))
    this.queue = run.catch(() => {})
    return run
  }

  private async refreshNow(services: HostedServices): Promise<void> {
    const changes = await services.changes(this.seq)
    if (changes.full) {
      const live = new Set(changes.files.filter((file) => !file.deleted).map((file) => file.path))
      for (const path of [...this.index.files.keys()]) if (!live.has(path)) this.index.delete(path)
    }
    const stale: string[] = []
    for (const file of changes.files) {
      if (!file.path.endsWith('.md')) continue
      if (file.deleted) this.index.delete(file.path)
      else if (file.hash == null || this.index.hashOf(file.path) !== file.hash) stale.push(file.path)
    }
    for (let i = 0; i < stale.length; i += READ_BATCH) {
      const batch = stale.slice(i, i + READ_BATCH)
      const read = await services.read(batch)
      for (const path of batch) {
        const file = read.get(path)
        if (file) this.index.set(path, file.content, file.hash, file.updatedAt)
        else this.index.delete(path)
      }
    }
    this.seq = changes.seq
  }
}

const READ_BATCH = 200
const WRITE_ATTEMPTS = 5
const DEFAULT_LIST_LIMIT = 100
const DEFAULT_GREP_LIMIT = 100

export class HostedBackend implements McpBackend {
  constructor(
    private readonly services: HostedServices,
    private readonly state: HostedState,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private get agentId(): string {
    return this.services.agentId
  }

  async snapshot(input: SnapshotInput): Promise<SnapshotOutput> {
    const scopes = input.scopes ?? defaultSnapshotScopes(this.agentId)
    const answer = await this.services.snapshot({scopes: scopes.join(','), limit_recent: input.limit_recent?.toString()})
    return {...answer, agent_id: this.agentId, scopes: [...new Set(scopes)], cached: null}
  }

  async append(input: AppendInput): Promise<AppendOutput> {
    const runId = newRunId('mcp')
    const event: Record<string, unknown> = {scope: 'global', confidence: 'high', ttl_days: 0, ...eventOf(input), agent_id: this.agentId, run_id: runId}
    const answer = await this.services.append(event, randomUUID())
    const appended = {event_id: answer.event_id, status: answer.status, scope: String(event.scope), kind: input.kind, dedupe_key: String(event.dedupe_key), warnings: answer.warnings}
    return {agent_id: this.agentId, run_id: runId, event_id: answer.event_id, status: answer.status, events: [appended], warnings: answer.warnings}
  }

  async search(input: SearchInput): Promise<SearchOutput> {
    const limit = input.limit ?? 10
    const [files, events] = await Promise.all([this.searchFiles(input.query, limit), this.services.events({q: input.query, scope: input.scope, kind: input.kind, limit: String(limit)})])
    const filters = {q: input.query, ...(input.scope === undefined ? {} : {scope: input.scope}), ...(input.kind === undefined ? {} : {kind: input.kind}), limit}
    return {query: input.query, files: {hits: files, mode: 'keyword'}, events: {query: input.query, filters, total: events.total, events: events.events}, notes: []}
  }

  /** As `jarvis recall` ranks (ops/recall-rules.ts): the search's best RECALL_POOL files, then recall's rules. */
  async recall(input: RecallInput): Promise<RecallOutput> {
    const limit = checkRecallLimit(input.limit)
    const texts = new Map<string, string>()
    const hits = await this.searchFiles(input.query, Math.max(limit, RECALL_POOL), texts)
    const ranked = hits.map((hit) => {
      const text = texts.get(hit.path) ?? ''
      const document = toSearchDocument(hit.path, text)
      return {hit, text, path: hit.path, score: hit.score, title: document.title, tags: document.tags, body: document.body, date: document.date}
    })
    const dates = new Map(ranked.map((file) => [file.path, file.date]))
    const ordered = orderForQuery(input.query, ranked, dates).slice(0, limit)
    // Each file by the line(s) that answer the query, else by what it is about (its text's summary).
    const terms = queryTerms(input.query)
    const entries = ordered.map((file) => {
      const answer = answeringLines(file, terms)
      return answer === undefined ? {hit: file.hit, text: file.text} : {hit: file.hit, summary: answer}
    })
    return {...recallBlock(entries), mode: 'keyword'}
  }

  /** The search's hits; `texts` keeps the text of each file it read for them, so that no caller reads them again. */
  private async searchFiles(query: string, limit: number, texts = new Map<string, string>()) {
    await this.state.refresh(this.services)
    return searchTexts(
      this.state.index,
      query,
      async (paths) => {
        for (const [path, file] of await this.services.read(paths)) texts.set(path, file.content)
        return texts
      },
      {limit},
    )
  }

  /** The live Markdown files under `prefix`, by path. */
  private async markdownPaths(prefix: string): Promise<string[]> {
    const {files} = await this.services.changes()
    return files
      .filter((file) => !file.deleted && file.path.endsWith('.md') && (prefix === '' || file.path.startsWith(prefix)))
      .map((file) => file.path)
      .sort()
  }

  async ls(input: LsInput): Promise<LsOutput> {
    const prefix = checkPrefix(input.prefix)
    const all = await this.markdownPaths(prefix)
    const paths = all.slice(0, input.limit ?? DEFAULT_LIST_LIMIT)
    const files: LsOutput['files'] = []
    for (let i = 0; i < paths.length; i += READ_BATCH) {
      const read = await this.services.read(paths.slice(i, i + READ_BATCH))
      for (const path of paths.slice(i, i + READ_BATCH)) {
        const file = read.get(path)
        if (!file) continue
        const entry: LsOutput['files'][number] = {path, tags: [], size: Buffer.byteLength(file.content, 'utf8'), updatedAt: file.updatedAt}
        try {
          const {frontMatter} = parseMemoryFile(path, file.content)
          if (typeof frontMatter.title === 'string') entry.title = frontMatter.title
          entry.tags = tagsOf(frontMatter)
        } catch (error) {
          entry.problem = (error as Error).message
        }
        files.push(entry)
      }
    }
    return {prefix, files, ...(all.length > paths.length ? {truncated: true as const} : {})}
  }

  private async current(path: string): Promise<HostedFile | null> {
    return (await this.services.read([path])).get(path) ?? null
  }

  async read(input: ReadInput): Promise<ReadAnswer> {
    const path = checkMemoryPath(input.path)
    const file = await this.current(path)
    if (!file) throw new MemoryFileNotFoundError(path)
    const frontMatter: FrontMatter = parseMemoryFile(path, file.content).frontMatter
    const hash = hashText(file.content)
    this.state.texts.remember(hash, file.content)
    return {
      path,
      ...(typeof frontMatter.title === 'string' ? {title: frontMatter.title} : {}),
      tags: tagsOf(frontMatter),
      frontMatter,
      text: file.content,
      lastAccessed: this.now().toISOString(),
      hash,
    }
  }

  async write(input: WriteInput): Promise<WriteOutput> {
    const path = checkMemoryPath(input.path)
    const text = composeMemoryText(path, input.content, {title: input.title, tags: input.tags, metadata: input.metadata})
    await assertWritable(path, text)
    const result = await this.commit(path, input.base_hash, async () => text)
    return {path, created: result.created, changed: result.changed, hash: result.hash, ...(input.base_hash === undefined ? {} : {merged: result.merged})}
  }

  async edit(input: EditCall): Promise<EditOutput> {
    const path = checkMemoryPath(input.path)
    const result = await this.commit(path, input.base_hash, async (current, base) => {
      if (current === null) throw new MemoryFileNotFoundError(path)
      const edited = await applyEdit(path, base ?? current, input.edit)
      parseMemoryFile(path, edited) // the edit must leave valid front matter
      await assertWritable(path, edited)
      return edited
    })
    return {path, hash: result.hash, ...(input.base_hash === undefined ? {} : {merged: result.merged})}
  }

  /**
   * Read, compute, merge against the base when the file changed since it was read, then write at the revision
   * read; another write in between means doing it again on the new text (never a blind overwrite of it).
   */
  private async commit(path: string, baseHash: string | undefined, wanted: (current: string | null, base: string | undefined) => Promise<string>) {
    const base = baseHash === undefined ? undefined : {hash: baseHash, text: this.state.texts.get(baseHash)}
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const current = await this.current(path)
      const changedSince = base !== undefined && current !== null && current.hash !== base.hash
      const text = await wanted(current?.content ?? null, changedSince ? base.text : undefined)
      const {text: next, merged} = base ? await mergeSinceBase(path, base, text, current?.content ?? null) : {text, merged: false}
      const hash = hashText(next)
      this.state.texts.remember(hash, next)
      if (current?.content === next) return {created: false, changed: false, merged, hash}
      const written = await this.services.write(path, next, current?.rev ?? null)
      if (written.ok) return {created: current === null, changed: true, merged, hash}
    }
    throw new JarvisError(`.memory/${path} kept changing while it was written; nothing was written: try again`, {code: 'FAILED', exit: ExitCode.failed, data: {path}})
  }

  /** The regular expression comes from a client: it runs in a worker, stopped after a time limit (files/grep.ts). */
  async grep(input: GrepQuery): Promise<GrepOutput> {
    const pattern = compileGrep(input.pattern, input.ignore_case)
    const prefix = checkPrefix(input.prefix)
    const paths = await this.markdownPaths(prefix)
    const files: GrepFile[] = []
    for (let i = 0; i < paths.length; i += READ_BATCH) {
      const read = await this.services.read(paths.slice(i, i + READ_BATCH))
      for (const path of paths.slice(i, i + READ_BATCH)) files.push({path, text: read.get(path)?.content ?? ''})
    }
    return {regex: input.pattern, prefix, hits: await grepGuarded(files, pattern, input.limit ?? DEFAULT_GREP_LIMIT)}
  }

  async completeTask(input: TaskInput): Promise<TaskOutput> {
    const task = readTaskResult({fields: input, fieldsFrom: 'task_complete', now: this.now})
    const workerMemory = await this.services.syncTask({...task, agentId: undefined})
    return {queued: false, agentId: this.agentId, taskId: task.taskId, workerMemory}
  }

  async sync(): Promise<SyncOutput> {
    throw new BadInputError('sync runs on a client: over /mcp the tools already work on the server\'s memory, so there is nothing to sync here; run `jarvis sync` (or the sync tool of `jarvis mcp`) in a tree')
  }

  async instructions(): Promise<string> {
    return (await agentPrompt({agent: this.agentId, server: this.services.url})).text
  }
}
