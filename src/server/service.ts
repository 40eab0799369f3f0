/**
 * What the routes do, without HTTP: status, pull, push, sync-task and the active project, over a
 * MemoryStorage, with every change broadcast on `/ws/memory`. Routes (routes/*.ts) only adapt requests.
 */
import createDebug from 'debug'

import {assertCleanMemoryFiles, type SensitiveFinding} from '../events/index.js'
import {PathRefusedError, SchemaError, SecretRefusedError} from '../errors.js'
import {ACTIVE_PROJECT_FILE, activeProjectSchema, formatIssues, parseJsonText, workerMemorySchema} from '../schemas/index.js'
import type {ActiveProject, TaskResult, WorkerMemory} from '../schemas/index.js'
import {checkRelativePath, isIgnoredMemoryPath} from '../store/paths.js'
import {type AuditService, refusedDetail} from './audit-service.js'
import type {Broadcaster, MemUpdateMessage} from './broadcast.js'
import {HttpError} from './http-error.js'
import {OneAtATime} from './one-at-a-time.js'
import type {BaseRev, CommitResult, FileMeta, FileRecord, MemoryStorage} from './storage/types.js'
import {applyTaskResult, emptyWorkerMemory, hasTask, workerMemoryPath} from './worker-memory.js'
import type {CurrentFile, PullAnswer, PushAnswer, StatusAnswer, StatusFileEntry, WriteAnswer} from './wire.js'

export type {CurrentFile, PullAnswer, PushAnswer, StatusAnswer, StatusFileEntry, WriteAnswer} from './wire.js'

const debug = createDebug('jarvis:server')

export const ACTIVE_PROJECT_PATH = ACTIVE_PROJECT_FILE
/** A status answer carries texts (see MemoryService.status) for at most this many files, of this many characters in all. */
export const STATUS_TEXT_FILES = 64
export const STATUS_TEXT_CHARS = 1024 * 1024
/** Optimistic retries of sync-task when another write to the same worker memory wins the race. */
const SYNC_TASK_ATTEMPTS = 8

export interface PushBody {
  files?: Record<string, string>
  base?: Record<string, number | null>
  deletes?: string[]
  /** Paths of `files` the client merged three-way with a newer server version (recorded in the audit log only). */
  merged?: string[]
}

export interface ServiceOptions {
  storage: MemoryStorage
  broadcaster: Broadcaster
  now: () => Date
  /** Largest content of one file, in UTF-8 bytes. */
  maxFileBytes: number
  /** Where pushes, conflicts, refused edits and project switches are recorded; none: nothing is. */
  audit?: AuditService
}

/** A content string with a lone surrogate cannot be stored as UTF-8 without changing it. */
const LONE_SURROGATE = /\p{Cs}/u

function checkPath(path: string): string {
  try {
    return checkRelativePath(path)
  } catch (error) {
    if (error instanceof PathRefusedError) {
      throw new HttpError(400, 'path_refused', error.message, {path: error.data.path, reason: error.data.reason})
    }
    throw error
  }
}

function own<V>(record: Record<string, V> | undefined): [string, V][] {
  return record === undefined ? [] : Object.entries(record)
}

export class MemoryService {
  readonly storage: MemoryStorage
  private readonly broadcaster: Broadcaster
  private readonly now: () => Date
  private readonly maxFileBytes: number
  private readonly audit?: AuditService
  private readonly workerMemoryWrites = new OneAtATime()

  constructor(options: ServiceOptions) {
    this.storage = options.storage
    this.audit = options.audit
    this.broadcaster = options.broadcaster
    this.now = options.now
    this.maxFileBytes = options.maxFileBytes
  }

  private nowIso(): string {
    return this.now().toISOString()
  }

  /**
   * `texts`: the client asked for the texts of the files listed (`x-jarvis-status-texts: <characters>`). Given with
   * `since` only, when the listing names at most STATUS_TEXT_FILES live files, each while the texts stay within the
   * characters asked for (and STATUS_TEXT_CHARS): the few files a client is about to pull come with the answer it
   * awaits anyway, and it need not ask for them again. Read after the listing: a text whose hash is no longer the
   * listed one (written meanwhile) is left out, so each text given is exactly the version its entry names.
   */
  async status(since?: number, texts?: {chars: number}): Promise<StatusAnswer> {
    // The active project is read with the listing: one query on PostgreSQL, one view of the memory.
    const snapshot = await this.storage.status(since, [ACTIVE_PROJECT_PATH])
    const files: Record<string, StatusFileEntry> = {}
    for (const meta of snapshot.files) {
      files[meta.path] = meta.deleted
        ? {updatedAt: meta.updatedAt, rev: meta.rev, deleted: true, author: meta.author}
        : {updatedAt: meta.updatedAt, rev: meta.rev, hash: meta.hash ?? undefined, author: meta.author}
    }
    const live = texts === undefined || since === undefined || snapshot.full ? [] : snapshot.files.filter((meta) => !meta.deleted && meta.hash)
    if (live.length > 0 && live.length <= STATUS_TEXT_FILES) {
      const records = await this.storage.read(live.map((meta) => meta.path))
      let room = Math.min(texts!.chars, STATUS_TEXT_CHARS)
      for (const meta of live) {
        const record = records.get(meta.path)
        if (record === undefined || record.deleted || record.content === null || record.hash !== meta.hash || record.content.length > room) continue
        room -= record.content.length
        files[meta.path].content = record.content
      }
    }
    const active = activeProjectOf(snapshot.read.get(ACTIVE_PROJECT_PATH))
    return {
      serverTime: this.nowIso(),
      seq: snapshot.seq,
      serverId: snapshot.serverId,
      full: snapshot.full,
      files,
      activeProjectId: active.ok ? active.value.projectId : null,
    }
  }

  async pull(paths: readonly string[]): Promise<PullAnswer> {
    const clean = [...new Set(paths.map(checkPath))]
    const records = await this.storage.read(clean)
    const answer: PullAnswer = {files: {}, deleted: {}}
    for (const path of clean) {
      const record = records.get(path)
      if (record === undefined) continue
      if (record.deleted || record.content === null || record.hash === null) {
        answer.deleted[path] = {rev: record.rev, updatedAt: record.updatedAt}
      } else {
        answer.files[path] = {content: record.content, updatedAt: record.updatedAt, hash: record.hash, rev: record.rev}
      }
    }
    return answer
  }

  /** Checks a push completely (paths, sizes, JSON) before anything is written; throws HttpError. */
  private preparePush(body: PushBody): {writes: Map<string, string>; deletes: string[]; base: Map<string, BaseRev>} {
    const writes = new Map<string, string>()
    for (const [path, content] of own(body.files)) {
      const clean = checkPath(path)
      if (writes.has(clean)) throw new HttpError(400, 'bad_request', `body/files names ${clean} twice`, {field: 'body/files', path: clean})
      // A conflict backup is one machine's copy of its losing side: shared, it would reach every other tree.
      if (isIgnoredMemoryPath(clean)) {
        throw new HttpError(400, 'path_refused', `${clean} is a conflict backup or a temp file, which stays on the machine that made it; push the memory file itself`, {path: clean, reason: 'local only'})
      }
      writes.set(clean, content)
    }
    const deletes = new Set<string>()
    for (const path of body.deletes ?? []) {
      const clean = checkPath(path)
      if (writes.has(clean)) {
        throw new HttpError(400, 'bad_request', `${clean} is both written (body/files) and deleted (body/deletes)`, {
          field: 'body/deletes',
          path: clean,
        })
      }
      deletes.add(clean)
    }
    const base = new Map<string, BaseRev>()
    for (const [path, rev] of own(body.base)) base.set(checkPath(path), rev)

    for (const [path, content] of writes) {
      const bytes = Buffer.byteLength(content, 'utf8')
      if (bytes > this.maxFileBytes) {
        throw new HttpError(413, 'too_large', `${path} is ${bytes} bytes, more than the ${this.maxFileBytes} bytes a file may hold`, {
          path,
          limit: this.maxFileBytes,
        })
      }
      if (LONE_SURROGATE.test(content)) {
        throw new HttpError(400, 'invalid_content', `${path}: the content is not well-formed Unicode (a lone surrogate)`, {path})
      }
      // Not text, and PostgreSQL cannot store it: refused on every backend alike.
      if (content.includes('\u0000')) {
        throw new HttpError(400, 'invalid_content', `${path}: the content holds a NUL character (U+0000), which a text file may not; remove it and push again`, {path})
      }
      if (/\.json$/i.test(path)) {
        try {
          parseJsonText(content, path)
        } catch (error) {
          if (!(error instanceof SchemaError)) throw error
          throw new HttpError(400, 'invalid_content', `${path}: not valid JSON: ${error.problems.join('; ')}`, {
            path,
            problems: error.problems,
          })
        }
      }
    }
    return {writes, deletes: [...deletes], base}
  }

  /**
   * Every write of a file, whoever sends it: checked whole (paths, sizes, JSON, then secrets and personal data)
   * before anything is stored, so a refused push stores nothing.
   */
  async push(body: PushBody, agentId: string): Promise<PushAnswer> {
    const request = this.preparePush(body)
    await this.refuseSensitive(request.writes, agentId, 'push')
    return this.commitPush(request, body, agentId)
  }

  /**
   * 422 `sensitive` naming each file, rule, line and column (never the text) when a file to write holds a secret or
   * personal data, with the message every other door gives (the commands, the MCP tools, the hooks); the refusal is
   * recorded in the audit log.
   */
  private async refuseSensitive(writes: ReadonlyMap<string, string>, agentId: string, door: 'push' | 'edit' | 'task'): Promise<void> {
    try {
      await assertCleanMemoryFiles(writes)
    } catch (error) {
      if (!(error instanceof SecretRefusedError)) throw error
      const {findings, paths} = error.data as {findings: SensitiveFinding[]; paths: string[]}
      const what = door === 'edit' ? `an edit of ${paths[0]}` : door === 'task' ? `a task result for ${paths[0]}` : `a push of ${paths.join(', ')}`
      await this.audit?.record({at: this.nowIso(), agent: agentId, kind: 'refused', paths, event_ids: [], count: findings.length, detail: refusedDetail(what, findings)})
      throw new HttpError(422, 'sensitive', error.message, {field: door === 'edit' ? 'body/content' : door === 'task' ? 'body' : 'body/files', path: paths[0], paths, findings})
    }
  }

  private async commitPush(request: ReturnType<MemoryService['preparePush']>, body: PushBody, agentId: string): Promise<PushAnswer> {
    const now = this.nowIso()
    const outcome = await this.storage.commit({...request, audit: {kind: 'push', merged: body.merged}}, agentId, now)
    this.audit?.announce(outcome.audit)
    if (!outcome.ok) {
      throw new HttpError(409, 'stale', `the server has newer revisions of ${outcome.stale.join(', ')}; pull, merge and push again`, {
        stale: outcome.stale,
      })
    }
    const answer: PushAnswer = {files: {}, deleted: {}, seq: outcome.seq}
    for (const meta of [...outcome.written, ...outcome.unchanged]) {
      if (meta.deleted) answer.deleted[meta.path] = {rev: meta.rev, updatedAt: meta.updatedAt}
      else answer.files[meta.path] = {rev: meta.rev, hash: meta.hash as string, updatedAt: meta.updatedAt}
    }
    for (const meta of outcome.deleted) answer.deleted[meta.path] = {rev: meta.rev, updatedAt: meta.updatedAt}
    this.announce(outcome, request.writes)
    return answer
  }

  /**
   * One file written by a person (the dashboard): refused when it holds a secret or personal data, with the
   * message every other door gives (`jarvis memory write`, the MCP tools); written only when `base` is still the
   * file's revision (null: a new file). A stale base writes nothing and answers 409 with the file as it is now,
   * so the writer can merge: an edit never overwrites a change it did not see.
   */
  async write(path: string, content: string, base: number | null, agentId: string): Promise<WriteAnswer> {
    const clean = checkPath(path)
    const body: PushBody = {files: {[clean]: content}, base: {[clean]: base}}
    const request = this.preparePush(body)
    await this.refuseSensitive(request.writes, agentId, 'edit')
    try {
      const answer = await this.commitPush(request, body, agentId)
      return {path: clean, ...answer.files[clean], seq: answer.seq}
    } catch (error) {
      if (!(error instanceof HttpError) || error.status !== 409) throw error
      const record = (await this.storage.read([clean])).get(clean)
      const current: CurrentFile | null = record === undefined ? null : {content: record.deleted ? null : record.content, rev: record.rev, updatedAt: record.updatedAt, author: record.author, deleted: record.deleted}
      const change = current === null ? 'was removed' : current.deleted ? `was deleted by ${current.author}` : `is at revision ${current.rev} (by ${current.author})`
      throw new HttpError(409, 'stale', `${clean} changed since you opened it (revision ${base ?? 'none'}): it ${change}. Nothing was overwritten; merge and save again.`, {path: clean, current})
    }
  }

  /** MEM_UPDATE for every changed path; STATE_CHANGED when active_project.json got a valid new value. */
  private announce(outcome: CommitResult, writes: ReadonlyMap<string, string>): void {
    for (const meta of [...outcome.written, ...outcome.deleted]) this.broadcaster.broadcast(memUpdate(meta))
    const active = outcome.written.find((meta) => meta.path === ACTIVE_PROJECT_PATH)
    if (active) {
      const parsed = parseActiveProject(writes.get(ACTIVE_PROJECT_PATH) ?? '')
      if (parsed.ok) {
        const {projectId, switchedAt, switchedBy} = parsed.value
        this.broadcaster.broadcast({type: 'STATE_CHANGED', projectId, switchedAt, switchedBy})
      }
    }
    if (outcome.written.length + outcome.deleted.length > 0) {
      debug('seq %d: %d written, %d deleted', outcome.seq, outcome.written.length, outcome.deleted.length)
    }
  }

  /**
   * Folds a task into `jarvis/<agentId>.json` and answers the worker memory. At most once per (agent, taskId):
   * a task already recorded (by this endpoint, or already in `recentTasks`) changes nothing.
   * Read-merge-write with the file's rev as base, retried when another write got in between.
   */
  async syncTask(task: TaskResult, agentId: string): Promise<{memory: WorkerMemory; rev: number; seq: number; changed: boolean}> {
    const path = workerMemoryPath(agentId)
    // One task of an agent at a time in this process: concurrent ones would only make each other retry (the
    // optimistic retries below are for writes from other processes or clients).
    return this.workerMemoryWrites.run(path, () => this.recordTask(task, agentId, path))
  }

  private async recordTask(task: TaskResult, agentId: string, path: string): Promise<{memory: WorkerMemory; rev: number; seq: number; changed: boolean}> {
    const key = `sync-task:${agentId}:${task.taskId}`
    for (let attempt = 0; attempt < SYNC_TASK_ATTEMPTS; attempt++) {
      const {memory, rev, seq} = await this.readWorkerMemory(path)
      if (hasTask(memory, task.taskId) || (await this.storage.hasCommitted(key))) {
        return {memory: memory ?? emptyWorkerMemory(agentId), rev, seq, changed: false}
      }
      const now = this.nowIso()
      const next = applyTaskResult(memory, task, agentId, now)
      const content = JSON.stringify(next, null, 2) + '\n'
      // The task's text becomes a memory file every machine syncs: scanned as a push of that file is.
      await this.refuseSensitive(new Map([[path, content]]), agentId, 'task')
      const outcome = await this.storage.commit(
        {writes: new Map([[path, content]]), deletes: [], base: new Map([[path, rev === 0 ? null : rev]]), idempotencyKey: key},
        agentId,
        now,
      )
      if (!outcome.ok) {
        debug('sync-task %s: %s changed meanwhile, attempt %d', task.taskId, path, attempt + 1)
        continue
      }
      if (outcome.duplicate) {
        const current = await this.readWorkerMemory(path)
        return {...current, memory: current.memory ?? emptyWorkerMemory(agentId), changed: false}
      }
      this.announce(outcome, new Map([[path, content]]))
      const written = outcome.written[0] ?? outcome.unchanged[0]
      return {memory: next, rev: written?.rev ?? rev, seq: outcome.seq, changed: outcome.written.length > 0}
    }
    throw new HttpError(503, 'unavailable', `${path} kept changing while the task was recorded; try again`, {path})
  }

  private async readWorkerMemory(path: string): Promise<{memory: WorkerMemory | null; rev: number; seq: number}> {
    const record = (await this.storage.read([path])).get(path)
    if (record === undefined || record.deleted || record.content === null) {
      // A tombstone's rev is a valid base for re-creating the file.
      return {memory: null, rev: record?.rev ?? 0, seq: record?.seq ?? 0}
    }
    let value: unknown
    try {
      value = JSON.parse(record.content)
    } catch (error) {
      throw new HttpError(422, 'invalid_content', `${path} on the server is not valid JSON: ${(error as Error).message}`, {path})
    }
    const parsed = workerMemorySchema.safeParse(value)
    if (!parsed.success) {
      const problems = formatIssues(parsed.error.issues)
      throw new HttpError(422, 'invalid_content', `${path} on the server is not a worker memory: ${problems.join('; ')}`, {
        path,
        problems,
      })
    }
    return {memory: parsed.data, rev: record.rev, seq: record.seq}
  }

  private async readActiveProject(): Promise<ActiveProjectRead> {
    return activeProjectOf((await this.storage.read([ACTIVE_PROJECT_PATH])).get(ACTIVE_PROJECT_PATH))
  }

  async activeProject(): Promise<ActiveProject> {
    const active = await this.readActiveProject()
    if (active.ok) return active.value
    if (active.reason === 'missing') throw new HttpError(404, 'not_found', active.message)
    throw new HttpError(422, 'invalid_content', active.message, {path: ACTIVE_PROJECT_PATH})
  }

  /** Writes active_project.json (switchedAt = server time), broadcasts MEM_UPDATE and STATE_CHANGED. */
  async switchProject(projectId: string, switchedBy: ActiveProject['switchedBy'], agentId: string): Promise<ActiveProject> {
    const now = this.nowIso()
    const value: ActiveProject = {projectId, switchedAt: now, switchedBy}
    const content = JSON.stringify(value, null, 2) + '\n'
    const writes = new Map([[ACTIVE_PROJECT_PATH, content]])
    const outcome = await this.storage.commit({writes, deletes: [], base: new Map(), audit: {kind: 'switch-project', detail: `switched to ${projectId} (by ${switchedBy})`}}, agentId, now)
    if (!outcome.ok) throw new Error('unconditional write reported stale')
    this.audit?.announce(outcome.audit)
    this.announce(outcome, writes)
    return value
  }

  async seq(): Promise<number> {
    return this.storage.seq()
  }
}

function memUpdate(meta: FileMeta): MemUpdateMessage {
  return meta.deleted
    ? {type: 'MEM_UPDATE', path: meta.path, rev: meta.rev, author: meta.author, seq: meta.seq, updatedAt: meta.updatedAt, deleted: true}
    : {type: 'MEM_UPDATE', path: meta.path, rev: meta.rev, author: meta.author, seq: meta.seq, updatedAt: meta.updatedAt, hash: meta.hash ?? undefined}
}

type ActiveProjectRead = {ok: true; value: ActiveProject} | {ok: false; reason: 'missing' | 'invalid'; message: string}

/** The active project from the record of active_project.json (absent or deleted: none set). */
function activeProjectOf(record: FileRecord | undefined): ActiveProjectRead {
  if (record === undefined || record.deleted || record.content === null) return {ok: false, reason: 'missing', message: 'no active project has been set'}
  return parseActiveProject(record.content)
}

function parseActiveProject(text: string): {ok: true; value: ActiveProject} | {ok: false; reason: 'invalid'; message: string} {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return {ok: false, reason: 'invalid', message: `${ACTIVE_PROJECT_PATH} on the server is not valid JSON: ${(error as Error).message}`}
  }
  const parsed = activeProjectSchema.safeParse(value)
  if (!parsed.success) {
    const problems = formatIssues(parsed.error.issues)
    return {ok: false, reason: 'invalid', message: `${ACTIVE_PROJECT_PATH} on the server is not an active project: ${problems.join('; ')}`}
  }
  return {ok: true, value: parsed.data}
}
