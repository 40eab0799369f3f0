/**
 * What the session-start and prompt hooks read: the server's snapshot (pinned memory, recent events of the
 * agent's scopes) and the tree's memory files. Modules are loaded only when an event uses them.
 */
import {createHash} from 'node:crypto'
import {lstat, readdir} from 'node:fs/promises'
import {basename} from 'node:path'

import {UnreachableError} from '../errors.js'
import type {SearchHit} from '../search/index.js'
import {isIgnoredMemoryPath} from '../store/paths.js'
import {memoryFilePath, readMemoryFile} from '../store/tree.js'
import {fitToBudget, type FittedText} from './budget.js'
import {type ContextFile, contextFileLine, omittedNote, recallBlock, sessionContextSections, type SessionContextInput, sessionEventTexts, unchangedContextLine} from './format.js'
import {answeringLines, ofAnotherProject, queryTerms, relevantFiles} from './relevance.js'
// The module itself, not the session barrel: the prompt hook loads no session reader.
import {recallBlockPaths, stripInjected} from '../session/injected.js'

/** The server gets this long to answer the session-start snapshot; a hung server must not hang the agent. */
export const SNAPSHOT_DEADLINE_MS = 8000
/** Memory files the session-start context lists at most (before the budget). */
export const CONTEXT_FILES_MAX = 8
/** Files matching the project's name the session-start context lists at most. */
export const PROJECT_MATCHES = 4
/** The newest episodes the session-start context lists. */
export const NEWEST_EPISODES = 3
/** Search hits the prompt hook weighs before its threshold. */
export const PROMPT_CANDIDATES = 10

export interface SessionContextOptions {
  root: string
  agentId: string
  project?: string
  cwd?: string
  maxTokens: number
  lockTimeoutMs: number
  now: Date
  /** The conversation already holds earlier contexts (resumed, forked, compacted): the header says this one replaces them. */
  replaces?: boolean
  /** The session the context is for: its own episode is not listed. */
  sessionId?: string
}

export interface SessionContext extends FittedText {
  server?: string
  snapshotId: string
  /** The memory files the context lists (those the budget kept). */
  files: string[]
  /** The texts of the shared events the context shows (those the budget kept). */
  events: string[]
  /** Its memory state (contextState), in its header. */
  state: string
  /** The line to give instead, to a conversation that holds a context of this state (format.ts unchangedContextLine). */
  unchanged: string
}

async function withDeadline<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new UnreachableError(message())), ms)
    timer.unref()
  })
  try {
    return await Promise.race([promise, deadline])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Pinned memory and recent events from the server, the tree's most relevant memory files, cut to the budget.
 * Throws when the memory cannot be read: the server (UnreachableError, exit 3), the tree lock (LockedError, exit 6).
 */
export async function readSessionContext(options: SessionContextOptions): Promise<SessionContext> {
  const [{readSnapshot}, {withTreeLockToRead}] = await Promise.all([import('../ops/events/snapshot.js'), import('../store/lock.js')])
  const snapshot = withDeadline(readSnapshot({dir: options.root, agent: options.agentId, limitRecent: 20}), SNAPSHOT_DEADLINE_MS, () => `the server did not answer within ${SNAPSHOT_DEADLINE_MS / 1000} s`)
  // The local files are read under the tree lock: a sync that is merging them right now is waited for.
  const files = withTreeLockToRead(options.root, {timeoutMs: options.lockTimeoutMs, command: 'jarvis hook session-start'}, () => startFiles(options))
  const [answer, chosen] = await Promise.all([snapshot, files])
  const input = {
    agentId: options.agentId,
    at: options.now.toISOString(),
    server: answer.server,
    scopes: answer.scopes,
    pinnedMd: answer.pinned_md,
    recent: answer.recent_events,
    files: chosen,
    project: options.project,
  }
  const state = contextState(input, options.maxTokens)
  const fitted = fitToBudget(sessionContextSections({...input, state, replaces: options.replaces}), options.maxTokens, omittedNote(options.maxTokens))
  const lines = new Set(fitted.text.split('\n'))
  const listed = chosen.filter((f) => lines.has(contextFileLine(f))).map((f) => f.path)
  return {
    ...fitted,
    server: answer.server,
    snapshotId: answer.snapshot_id,
    files: listed,
    events: sessionEventTexts(input, fitted.text),
    state,
    unchanged: unchangedContextLine({...input, state}),
  }
}

/**
 * The memory state of a session context: a hash of what it says — who reads, from where, its scopes and budget, and
 * every line but the header's (which holds the time it was read). Two contexts of one state say the same.
 */
export function contextState(input: SessionContextInput, maxTokens: number): string {
  const body = sessionContextSections(input)
    .slice(1)
    .map((section) => section.lines)
  return createHash('sha256').update(JSON.stringify({agent: input.agentId, server: input.server, scopes: input.scopes, maxTokens, body})).digest('hex').slice(0, 12)
}

/**
 * The memory files a session starts with: the project memory (`PROJECT_MEMORY.md`, `projects/<project>/summary.md`),
 * the files that best match the project's name and directory, and the newest episodes — none whose front matter
 * names another project of the workspace (ofAnotherProject), nor the session's own episode (a resumed session holds
 * what it says, and its context stays the same while only that episode changed).
 */
async function startFiles(options: Pick<SessionContextOptions, 'root' | 'project' | 'cwd' | 'now' | 'agentId' | 'sessionId'>): Promise<ContextFile[]> {
  const {root, project, cwd, now} = options
  const [{searchMemory}, {summaryOf, toSearchDocument}, {sessionSlug}] = await Promise.all([import('../search/index.js'), import('../search/document.js'), import('./shown.js')])
  const own = options.sessionId === undefined ? undefined : `${sessionSlug(options.agentId, options.sessionId)}.md`
  const isOwnEpisode = (path: string) => own !== undefined && path.startsWith('episodes/') && path.endsWith(`/${own}`)
  const chosen: ContextFile[] = []
  /** Lists the file unless it is listed, the session's own episode, another project's, or one too many; true when it was added. */
  const add = async (path: string) => {
    if (chosen.length >= CONTEXT_FILES_MAX || chosen.some((f) => f.path === path) || isOwnEpisode(path)) return false
    const text = await readMemoryFile(root, path)
    if (text === null) return false
    const doc = toSearchDocument(path, text)
    if (ofAnotherProject(doc.project, project)) return false
    chosen.push({path, summary: summaryOf(doc)})
    return true
  }
  await add('PROJECT_MEMORY.md')
  if (project) await add(`projects/${project}/summary.md`)
  const words = [project, cwd ? basename(cwd) : undefined, basename(root)].filter((w): w is string => Boolean(w && w.trim()))
  const query = [...new Set(words.flatMap((w) => w.split(/[^\p{L}\p{N}]+/u)).filter((w) => w.length >= 3))].join(' ')
  let hits: SearchHit[] = []
  if (query) hits = (await searchMemory(root, query, {limit: CONTEXT_FILES_MAX, embeddings: false})).hits
  let matches = 0
  for (const hit of hits) if (matches < PROJECT_MATCHES && (await add(hit.path))) matches++
  // The newest episodes (of the last two weeks) say what happened lately: this project's, and those of no project.
  const ours = (path: string, text: string) => !isOwnEpisode(path) && !ofAnotherProject(toSearchDocument(path, text).project, project)
  for (const path of await newestEpisodes(root, now, NEWEST_EPISODES, ours)) await add(path)
  return chosen
}

/** Days back the session-start context looks for episodes. */
export const EPISODE_DAYS = 14
/**
 * How much later than its file's time an episode may say it changed: another machine's clock ahead of this one's.
 * A file's time is never earlier than what it says otherwise (written then, or pulled later).
 */
const CLOCK_SKEW_MS = 10 * 60_000

/**
 * The `count` newest episodes under `episodes/<date>/` of the last {@link EPISODE_DAYS} days, newest first: by the
 * time each says it last changed (episodeTime: its front matter `updated`), never by its name — the date is the only
 * time in a path, and one day's sessions are named by their ids. The files are read newest file time first, and no
 * further once a file's time is before the `count`-th newest episode found: a file is never written before the time
 * it says (a sync pull writes it later), so none further can be newer. `accept` leaves out an episode by its text.
 */
export async function newestEpisodes(root: string, now: Date, count: number, accept: (path: string, text: string) => boolean = () => true): Promise<string[]> {
  const {episodeTime} = await import('./episode.js')
  const since = new Date(now.getTime() - EPISODE_DAYS * 86_400_000).toISOString().slice(0, 10)
  const days = (await readdir(memoryFilePath(root, 'episodes')).catch(() => [] as string[])).filter((name) => /^\d{4}-\d{2}-\d{2}$/.test(name) && name >= since)
  const files: Array<{path: string; mtimeMs: number}> = []
  for (const day of days) {
    for (const name of await readdir(memoryFilePath(root, `episodes/${day}`)).catch(() => [] as string[])) {
      const path = `episodes/${day}/${name}`
      if (!name.endsWith('.md') || isIgnoredMemoryPath(path)) continue
      const info = await lstat(memoryFilePath(root, path)).catch(() => undefined)
      if (info?.isFile()) files.push({path, mtimeMs: info.mtimeMs})
    }
  }
  files.sort((a, b) => b.mtimeMs - a.mtimeMs)
  const newest: Array<{path: string; time: string}> = []
  for (const file of files) {
    if (newest.length >= count && file.mtimeMs + CLOCK_SKEW_MS < Date.parse(newest[count - 1].time)) break
    const text = await readMemoryFile(root, file.path)
    if (text === null || !accept(file.path, text)) continue
    newest.push({path: file.path, time: episodeTime(file.path, text) ?? ''})
    // Newest first; of two at the same time, the later path (as the date in it was the order before).
    newest.sort((a, b) => (a.time !== b.time ? (a.time < b.time ? 1 : -1) : a.path < b.path ? 1 : a.path > b.path ? -1 : 0))
    newest.splice(count)
  }
  return newest.map((e) => e.path)
}

export interface PromptRecall {
  /** The `[MEMORY CONTEXT]` block; '' when nothing passed the threshold. */
  block: string
  /** The files the block shows, in its order. */
  files: string[]
}

/**
 * The recall for a prompt: the search's hits that pass the relevance threshold (relevance.ts), in recall's order
 * (src/ops/recall-rules.ts: the note before the episodes that repeat it, the newer of two on the same thing first),
 * as many as the recall block holds; never a file of another project than `project` (the tree's). Without the tree
 * lock, like `jarvis recall`: files are replaced atomically and the search index is a SQLite database that several
 * processes update safely, so a sync in progress (an initial one can take seconds) never keeps an agent's prompt
 * waiting or without its memory.
 */
export async function readPromptRecall(options: {root: string; prompt: string; project?: string}): Promise<PromptRecall> {
  const prompt = stripInjected(options.prompt)
  if (prompt.trim() === '') return {block: '', files: []}
  const {orderDocuments, searchPastEchoes} = await import('../ops/recall.js')
  // The search gets the prompt's topic words only: "can you look into" would rank files by "look" and "into".
  // The rules weigh the same words: a pasted log's thousands of words would cost seconds (MAX_QUERY_TERMS).
  const terms = queryTerms(prompt)
  const query = terms.join(' ')
  if (!query) return {block: '', files: []}
  // Each hit's title, tags, body and summary as the index made them from its text: no front matter parsed again.
  const leaveOut = (d: {project?: string}) => ofAnotherProject(d.project, options.project)
  const {documents} = await searchPastEchoes(options.root, query, {pool: PROMPT_CANDIDATES, want: PROMPT_CANDIDATES, leaveOut})
  const passed = new Set(relevantFiles(query, documents.map((d) => ({path: d.hit.path, score: d.hit.score, title: d.title, tags: d.tags, body: d.body}))).map((c) => c.path))
  const ordered = await orderDocuments(options.root, query, documents.filter((d) => passed.has(d.hit.path)))
  // Each file by the line(s) that answer the prompt, else by what it is about.
  const block = recallBlock(ordered.map((d) => ({path: d.path, summary: answeringLines({path: d.path, body: d.body}, terms) ?? (d.summary || d.title || '')})))
  return {block, files: recallBlockPaths(block)}
}
