/**
 * The backend of `jarvis mcp`: each tool is one call of ops/ on the tree the server was started in, as the agent
 * of `--agent` / JARVIS_AGENT / the tree config. It lives for the agent's whole session, so it keeps what is worth
 * keeping warm: the search index (a file watcher tells it what changed, see watch.ts) and the texts the agent has
 * read (the base of a later write's three-way merge).
 */
import {agentPrompt} from '../ops/prompt.js'
import {appendMemory} from '../ops/events/append.js'
import {completeTask} from '../ops/task.js'
import {memoryEdit, memoryGrep, memoryLs, memoryRead, memoryWrite} from '../ops/files.js'
import {openTreeIfAny} from '../ops/context.js'
import {readSnapshot} from '../ops/events/snapshot.js'
import {recallMemory} from '../ops/recall.js'
import {searchMemory} from '../ops/search.js'
import {syncOnce} from '../ops/sync.js'
import {hashText} from '../store/index.js'
import type {CallRunner} from '../warm/protocol.js'
import type {EditCall, GrepQuery} from './arguments.js'
import {type McpBackend, ReadTexts} from './backend.js'
import {eventOf} from './events.js'
import type {AppendInput, EditOutput, ReadAnswer, SearchOutput, SyncInput, TaskInput, WriteInput, WriteOutput} from './schemas.js'
import {watchMemory, type MemoryWatch} from './watch.js'

/** How often a session's snapshot also refreshes the tree's offline snapshot cache. */
export const SNAPSHOT_CACHE_EVERY_MS = 60_000

export interface LocalBackendOptions {
  dir?: string
  agent?: string
  server?: string
  /** Watch `.memory/` so a search re-reads only what changed (default true). */
  watch?: boolean
  /** Given by `jarvis mcp`: the session's watch also runs bin/jarvis's whole calls in the tree (cli/warm-call.ts). */
  runCall?: CallRunner
}

export class LocalBackend implements McpBackend {
  private readonly texts = new ReadTexts()
  private watcher: MemoryWatch | undefined
  private snapshotCachedAt = -Infinity

  private constructor(
    private readonly options: LocalBackendOptions,
    /** The tree's root, when the server was started in one: every call works on it, whatever the cwd becomes. */
    readonly root: string | undefined,
  ) {}

  static async open(options: LocalBackendOptions): Promise<LocalBackend> {
    const tree = await openTreeIfAny(options.dir)
    const backend = new LocalBackend(options, tree?.root)
    if (tree && options.watch !== false) backend.watcher = await watchMemory(tree.root, {runCall: options.runCall, label: `jarvis mcp${options.agent ? ` --agent ${options.agent}` : ''}`})
    return backend
  }

  async close(): Promise<void> {
    await this.watcher?.close()
  }

  private get where() {
    return {dir: this.root ?? this.options.dir}
  }

  private get identity() {
    return {...this.where, agent: this.options.agent, server: this.options.server}
  }

  async snapshot(input: {scopes?: string[]; limit_recent?: number}) {
    // The offline cache (`memory snapshot --offline`, the hooks) is refreshed at most once a minute: its write and
    // the tree lock it takes would triple the latency of every snapshot of a session.
    const cache = Date.now() - this.snapshotCachedAt >= SNAPSHOT_CACHE_EVERY_MS
    const result = await readSnapshot({...this.identity, scopes: input.scopes, limitRecent: input.limit_recent, cache})
    if (cache) this.snapshotCachedAt = Date.now()
    return result
  }

  append(input: AppendInput) {
    return appendMemory({...this.identity, fields: {}, eventsText: {name: 'memory_append', text: JSON.stringify(eventOf(input))}})
  }

  search(input: {query: string; limit?: number; scope?: string; kind?: string}): Promise<SearchOutput> {
    return searchMemory({...this.where, server: this.options.server, as: this.options.agent, query: input.query, limit: input.limit, scope: input.scope, kind: input.kind})
  }

  recall(input: {query: string; limit?: number}) {
    return recallMemory({...this.where, query: input.query, limit: input.limit})
  }

  ls(input: {prefix?: string; limit?: number}) {
    return memoryLs({...this.where, prefix: input.prefix, limit: input.limit})
  }

  async read(input: {path: string}): Promise<ReadAnswer> {
    const {body: _body, ...file} = await memoryRead({...this.where, path: input.path})
    const hash = hashText(file.text)
    this.texts.remember(hash, file.text)
    return {...file, hash}
  }

  async write(input: WriteInput): Promise<WriteOutput> {
    let written: string | undefined
    const result = await memoryWrite({
      ...this.where,
      path: input.path,
      content: input.content,
      title: input.title,
      tags: input.tags,
      metadata: input.metadata,
      base: this.baseOf(input.base_hash),
      onWritten: (text) => (written = text),
    })
    return {...result, ...this.rememberWritten(written)}
  }

  async edit(input: EditCall): Promise<EditOutput> {
    let written: string | undefined
    const result = await memoryEdit({...this.where, path: input.path, ...input.edit, base: this.baseOf(input.base_hash), onWritten: (text) => (written = text)})
    return {...result, ...this.rememberWritten(written)}
  }

  grep(input: GrepQuery) {
    return memoryGrep({...this.where, regex: input.pattern, prefix: input.prefix, limit: input.limit, ignoreCase: input.ignore_case})
  }

  completeTask(input: TaskInput) {
    return completeTask({...this.identity, fields: input, fieldsFrom: 'task_complete'})
  }

  sync(input: SyncInput) {
    return syncOnce({...this.identity, dryRun: input.dry_run})
  }

  async instructions(): Promise<string> {
    return (await agentPrompt(this.identity)).text
  }

  private baseOf(hash: string | undefined) {
    return hash === undefined ? undefined : {hash, text: this.texts.get(hash)}
  }

  /** The text now on disk is the base of the agent's next write: its hash is answered and its text kept. */
  private rememberWritten(text: string | undefined): {hash?: string} {
    if (text === undefined) return {}
    const hash = hashText(text)
    this.texts.remember(hash, text)
    return {hash}
  }
}
