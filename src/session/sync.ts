/**
 * `jarvis session sync` and `jarvis session list` (seed 002, docs/session.md): carry a conversation among Claude
 * Code, Gemini CLI and Codex CLI with the append-only transcript rule of src/merge/transcript.ts — content-keyed with
 * occurrence numbers, order kept, duplicates dropped, linear.
 *
 * Incremental: for every carried pair (source session → target session) the sync state records how many source
 * messages were carried and what the target held then (counts plus a hash of a few keys of each prefix). The next
 * sync checks both prefixes and merges only the two tails — the source's new messages against what the target got
 * since — so the merge is proportional to what is new. A prefix that no longer matches (a rewind, a compaction, a
 * checkpoint saved over) falls back to a full merge, which is still linear and still drops duplicates.
 *
 * When a sync leaves the target holding nothing the source lacks, the opposite pair is recorded too: carrying the
 * target back later starts after what came from the source, so a message never travels back to where it came from,
 * even when the two tools render it slightly differently.
 */
import {randomUUID} from 'node:crypto'
import {readFile, stat} from 'node:fs/promises'
import {join} from 'node:path'

import {BadInputError, ExitCode, JarvisError} from '../errors.js'
import {messageKey, planTranscriptMerge} from '../merge/index.js'
import type {Provider, SessionRegistry, SessionRegistryEntry, SyncSettings, SyncState} from '../schemas/index.js'
import {hashText, readNexusFile, readSyncState, withTreeLock, writeNexusFile, writeSyncState} from '../store/index.js'
import {appendClaudeSession, claudeHome, claudeProjectDir, listClaudeSessions, readClaudeSession, writeClaudeSession} from './claude.js'
import {appendCodexSession, codexHome, codexProjectRollouts, listCodexSessions, readCodexSession, writeCodexSession} from './codex.js'
import {appendGeminiSession, geminiHome, geminiProjectDirs, listGeminiSessions, parseGeminiText, readGeminiSession, writeGeminiCheckpoint, writeGeminiSession} from './gemini.js'
import {
  type CarriedMark,
  type CarriedPair,
  carriedPairs,
  entryOfSession,
  entryOfTag,
  geminiBackupRel,
  pairKey,
  readRegistry,
  recordSync,
  type SessionRef,
  sameSession,
  withCarriedPair,
  withoutPairsOf,
  writeRegistry,
} from './registry.js'
import {addedMessages, noteCarried} from './carried.js'
import type {SessionSummary, SessionTranscript, UniversalMessage} from './universal.js'
import {listDir} from './dir.js'

/** A target session file changed less than this long ago, by anything but jarvis, is taken to be open in its tool. */
export const IN_USE_MS = 10_000

export const PROVIDER_LABEL: Record<Provider, string> = {claude: 'Claude Code', gemini: 'Gemini CLI', codex: 'Codex CLI'}
export const PROVIDERS: readonly Provider[] = ['claude', 'gemini', 'codex']

// ---------------------------------------------------------------------------------------------------------------
// Keys and prefix marks

/** The key two copies of one message share across the tools (readers speak Claude's tool vocabulary). */
export function syncKey(message: UniversalMessage): string {
  return messageKey(message)
}

const PROBES = 8

/** The indices a mark looks at: the first, the last and seven evenly spaced between. */
function probeIndices(count: number): number[] {
  if (count === 0) return []
  const indices = new Set([0, count - 1])
  for (let k = 1; k < PROBES; k++) indices.add(Math.floor((count * k) / PROBES))
  return [...indices].sort((a, b) => a - b)
}

/** The mark of the first `count` messages of a side. Costs a few keys, not `count`. */
export function markOf(count: number, key: (index: number) => string): CarriedMark {
  return count === 0 ? {count} : {count, probe: hashText(probeIndices(count).map(key).join('\n')).slice(0, 32)}
}

function markHolds(mark: CarriedMark, side: KeyedSide): boolean {
  return mark.count <= side.length && markOf(mark.count, side.key).probe === mark.probe
}

/** Keys computed on first use only: an incremental sync touches the tails and a few probes. */
export function keyedSide(messages: readonly UniversalMessage[]): KeyedSide {
  const keys: string[] = []
  return {
    length: messages.length,
    key: (index) => (keys[index] ??= syncKey(messages[index])),
  }
}

export interface KeyedSide {
  length: number
  key(index: number): string
}

// ---------------------------------------------------------------------------------------------------------------
// The plan (pure)

export interface CarryPlan {
  mode: 'full' | 'incremental'
  /** Why the sync could not start from the recorded point. */
  reason?: string
  /** Target messages kept as they are at the front. */
  keep: number
  /** The rest of the merged target, in order, by absolute index. */
  order: Array<{side: 'target' | 'source'; index: number}>
  /** Source indices carried this time, in source order. */
  added: number[]
  /** Source messages looked at: the new tail, or all of them. */
  considered: number
  /** Target messages the source does not hold, as of this sync. */
  targetOwn: number
}

export interface CarryInput {
  source: KeyedSide
  target: KeyedSide
  previous?: Pick<CarriedPair, 'source' | 'target' | 'targetOwn'>
  /** `sync.incrementalSync`: start from the recorded point when it still holds. */
  incremental: boolean
  /** `sync.deduplicateMessages`: drop new source messages the target already got since (full merges always do). */
  deduplicate: boolean
}

/** What to carry from source to target: the append-only merge of the two tails (or of everything). */
export function planCarry(input: CarryInput): CarryPlan {
  const {source, target, previous} = input
  let reason: string | undefined
  if (!input.incremental) reason = 'incremental sync is off (sync.incrementalSync in .nexus/config.json)'
  else if (!previous) reason = 'first sync of this pair'
  else if (!markHolds(previous.source, source)) reason = 'the source changed before the point of the last sync'
  else if (!markHolds(previous.target, target)) reason = 'the target changed before the point of the last sync'
  // A target message of its own may since have travelled to the source and come back in its tail: only a full
  // merge sees that it is already there.
  else if (previous.targetOwn !== 0) reason = 'the target held messages the source lacked at the last sync'
  const incremental = reason === undefined
  const sFrom = incremental ? previous!.source.count : 0
  const tFrom = incremental ? previous!.target.count : 0
  const targetTail = range(tFrom, target.length)
  const sourceTail = range(sFrom, source.length)
  let order: CarryPlan['order']
  let added: number[]
  if (incremental && !input.deduplicate) {
    order = [...targetTail.map((index) => ({side: 'target' as const, index})), ...sourceTail.map((index) => ({side: 'source' as const, index}))]
    added = sourceTail
  } else {
    const plan = planTranscriptMerge(targetTail.map(target.key), sourceTail.map(source.key))
    order = plan.map(({side, index}) => (side === 'local' ? {side: 'target', index: tFrom + index} : {side: 'source', index: sFrom + index}))
    added = order.filter((ref) => ref.side === 'source').map((ref) => ref.index)
  }
  // Each source message that matched took exactly one target message (keys carry occurrence numbers).
  const matched = sourceTail.length - added.length
  return {
    mode: incremental ? 'incremental' : 'full',
    ...(reason === undefined ? {} : {reason}),
    keep: tFrom,
    order,
    added,
    considered: sourceTail.length,
    targetOwn: targetTail.length - matched,
  }
}

function range(from: number, to: number): number[] {
  return Array.from({length: Math.max(0, to - from)}, (_, i) => from + i)
}

// ---------------------------------------------------------------------------------------------------------------
// File access with retries (sync.maxRetries, sync.retryDelay)

const TRANSIENT = new Set(['EBUSY', 'EAGAIN', 'EMFILE', 'ENFILE', 'ETIMEDOUT', 'EINTR', 'ESTALE', 'ETXTBSY', ...(process.platform === 'win32' ? ['EPERM', 'EACCES'] : [])])

function errnoOf(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as {cause?: unknown}).cause, depth++) {
    const code = (e as {code?: unknown}).code
    if (typeof code === 'string' && TRANSIENT.has(code)) return code
  }
  return undefined
}

export interface RetryOptions {
  maxRetries: number
  /** Milliseconds before the first retry; doubled for each next one. */
  retryDelay: number
  sleep?: (ms: number) => Promise<void>
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Runs a file access, retrying a transient failure (busy, too many open files, …) up to `maxRetries` times with
 * exponential backoff. Anything else — a missing file, a malformed transcript — fails at once.
 */
export async function retryFileAccess<T>(what: string, fn: () => Promise<T>, options: RetryOptions): Promise<T> {
  const sleep = options.sleep ?? delay
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn()
    } catch (error) {
      const errno = errnoOf(error)
      if (errno === undefined) throw error
      if (attempt >= options.maxRetries) {
        const message = error instanceof Error ? error.message : String(error)
        throw new JarvisError(`${what}: ${message} (gave up after ${attempt + 1} attempts)`, {
          code: 'FILE_ACCESS',
          exit: ExitCode.failed,
          data: {what, errno, attempts: attempt + 1},
          cause: error,
        })
      }
      await sleep(options.retryDelay * 2 ** attempt)
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Which sessions a sync works on

/** A session as the registry names it: a Gemini checkpoint by its tag. */
export function refOf(summary: Pick<SessionSummary, 'provider' | 'sessionId' | 'tag'>): SessionRef {
  return {provider: summary.provider, sessionId: summary.provider === 'gemini' && summary.tag ? summary.tag : summary.sessionId}
}

export class SessionNotFoundError extends JarvisError {
  constructor(ref: string) {
    super(
      `no session ${JSON.stringify(ref)} in this project: not a tag of .nexus/sessions.json, a Claude Code session id, a Codex CLI session id, or a Gemini CLI checkpoint tag or session id (see \`jarvis session list\`)`,
      {code: 'SESSION_NOT_FOUND', exit: ExitCode.badInput, data: {ref}},
    )
  }
}

const TAG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$/

/**
 * The tag a new conversation gets: `<provider>-<first 8 characters of the session id>`, or more of the id (up to the
 * next "-") while another conversation has that tag. Codex ids are UUIDv7, whose first 8 characters are a timestamp
 * that threads started within about a minute share; joined under one tag, two conversations would be mixed. Pure.
 */
export function defaultTag(registry: SessionRegistry, source: Pick<SessionSummary, 'provider' | 'sessionId'>): string {
  const id = source.sessionId
  const cuts = [8, ...[...id.matchAll(/-/g)].map((m) => m.index).filter((at) => at > 8), id.length]
  for (const cut of cuts) {
    const tag = `${source.provider}-${id.slice(0, cut)}`
    if (!entryOfTag(registry, tag)) return tag
  }
  // Only a --tag can have taken the whole id: number the next ones.
  for (let n = 2; ; n++) {
    const tag = `${source.provider}-${id}-${n}`
    if (!entryOfTag(registry, tag)) return tag
  }
}

export interface ResolvedSync {
  source: SessionSummary
  /** The existing target session, if there is one (for Gemini CLI: its chat session, not the checkpoint). */
  target?: SessionSummary
  /** For Gemini CLI: the existing `/chat save` checkpoint of the tag, written beside the chat session. */
  checkpoint?: SessionSummary
  tag: string
  entry?: SessionRegistryEntry
  /** A registered target session whose file is gone: replaced by the one this sync creates. */
  replaces?: SessionRef
}

function newest(sessions: SessionSummary[]): SessionSummary | undefined {
  return sessions.reduce<SessionSummary | undefined>((best, s) => (!best || Date.parse(s.lastActivity) > Date.parse(best.lastActivity) ? s : best), undefined)
}

function findLive(ref: string, lists: SessionLists): SessionSummary | undefined {
  const {claude, gemini, codex} = lists
  const exact = [...gemini.filter((s) => s.tag === ref), ...claude.filter((s) => s.sessionId === ref), ...codex.filter((s) => s.sessionId === ref), ...gemini.filter((s) => !s.tag && s.sessionId === ref)]
  if (exact.length > 0) return exact[0]
  const prefixed = [...claude, ...codex, ...gemini.filter((s) => !s.tag)].filter((s) => s.sessionId.startsWith(ref))
  if (prefixed.length > 1) {
    throw new BadInputError(`${JSON.stringify(ref)} is ambiguous: it starts ${prefixed.length} session ids (${prefixed.map((s) => s.sessionId).join(', ')}); give more of the id`, {
      ref,
      candidates: prefixed.map((s) => s.sessionId),
    })
  }
  return prefixed[0]
}

/**
 * The source named by `ref` (a registry tag, a Claude or Codex session id or unique prefix, a Gemini checkpoint tag or
 * session id), the target in the tool `to`, and the tag of the conversation. Pure. A tag names the conversation: its
 * newest session in a tool other than `to` is the source.
 */
export function resolveSync(input: {ref: string; to: Provider; tag?: string; registry: SessionRegistry; claude: SessionSummary[]; gemini: SessionSummary[]; codex?: SessionSummary[]}): ResolvedSync {
  const {ref, to, registry} = input
  const lists: SessionLists = {claude: input.claude, gemini: input.gemini, codex: input.codex ?? []}
  const others = PROVIDERS.filter((p) => p !== to)
  const live = (provider: Provider, entry: SessionRegistryEntry | undefined) => lists[provider].filter((s) => entry?.providers.some((info) => sameSession(info, refOf(s))))
  let entry = entryOfTag(registry, ref)
  let named: SessionSummary | undefined
  if (!entry) {
    named = findLive(ref, lists)
    entry = named ? entryOfSession(registry, refOf(named)) : registry.sessions.find((e) => e.providers.some((info) => info.sessionId === ref))
    if (!named && !entry) throw new SessionNotFoundError(ref)
  }
  if (input.tag !== undefined) {
    if (!TAG.test(input.tag)) throw new BadInputError(`--tag ${JSON.stringify(input.tag)}: use letters, digits, ".", "_" and "-" (at most 80, starting with a letter or digit)`, {tag: input.tag})
    if (entry?.sessionTag && entry.sessionTag !== input.tag) {
      throw new BadInputError(`this conversation is already tagged ${JSON.stringify(entry.sessionTag)} in .nexus/sessions.json; leave out --tag or use that one`, {tag: input.tag, registered: entry.sessionTag})
    }
    const tagged = entryOfTag(registry, input.tag)
    // Joined to it, this session's messages would be appended to that conversation's sessions in every tool.
    if (tagged && tagged !== entry) {
      throw new BadInputError(`--tag ${JSON.stringify(input.tag)} already names another conversation in .nexus/sessions.json; choose another tag (\`jarvis session list\` shows them)`, {tag: input.tag})
    }
  }
  const source = named && named.provider !== to ? named : newest(others.flatMap((p) => live(p, entry)))
  if (!source) {
    if (named) {
      throw new BadInputError(
        `${JSON.stringify(ref)} is a ${PROVIDER_LABEL[to]} session already and is not linked to a session of another tool; to carry it, use --to ${others.join(' or --to ')}`,
        {ref, provider: to},
      )
    }
    throw new BadInputError(`the conversation ${JSON.stringify(entry!.sessionTag ?? ref)} has no session outside ${PROVIDER_LABEL[to]} in this project any more`, {ref})
  }
  const tag = entry?.sessionTag ?? input.tag ?? (source.provider === 'gemini' && source.tag ? source.tag : defaultTag(registry, source))
  const chats = (list: SessionSummary[]) => (to === 'gemini' ? list.filter((s) => !s.tag) : list)
  const target = newest(chats(live(to, entry)))
  const gone = entry?.providers.find((info) => info.provider === to && !(to === 'gemini' && info.sessionId === tag) && !lists[to].some((s) => sameSession(refOf(s), info)))
  const checkpoint = to === 'gemini' ? lists.gemini.find((s) => s.tag === tag) : undefined
  return {
    source,
    tag,
    entry,
    target,
    ...(checkpoint ? {checkpoint} : {}),
    ...(target === undefined && gone ? {replaces: {provider: to, sessionId: gone.sessionId}} : {}),
  }
}

export type SessionLists = Record<Provider, SessionSummary[]>

async function lightSummary(provider: Provider, path: string, sessionId: string, tag?: string): Promise<SessionSummary | undefined> {
  try {
    const info = await stat(path)
    return {provider, sessionId, ...(tag === undefined ? {} : {tag}), path, messageCount: 0, lastActivity: info.mtime.toISOString()}
  } catch {
    return undefined
  }
}

/**
 * The sessions a name can point at, found without parsing a transcript (so a sync does not read every session of the
 * project): Claude Code `<sessionId>.jsonl` files, Codex rollouts by their first line, and Gemini
 * `checkpoint-<tag>.json` files. `messageCount` is not known here (0); `lastActivity` is the file time.
 */
export async function locateByName(root: string, env: NodeJS.ProcessEnv): Promise<SessionLists> {
  const claudeDir = claudeProjectDir(root, env)
  const claude = (await listDir(claudeDir))
    .filter((name) => name.endsWith('.jsonl') && !name.startsWith('agent-'))
    .map((name) => lightSummary('claude', join(claudeDir, name), name.slice(0, -'.jsonl'.length)))
  const codex = (await codexProjectRollouts(root, env)).map(({path, id}) => lightSummary('codex', path, id))
  const gemini: Array<Promise<SessionSummary | undefined>> = []
  for (const dir of await geminiProjectDirs(root, env)) {
    for (const name of await listDir(dir)) {
      if (!name.startsWith('checkpoint-') || !name.endsWith('.json')) continue
      const raw = name.slice('checkpoint-'.length, -'.json'.length)
      let tag = raw
      try {
        tag = decodeURIComponent(raw)
      } catch {
        // an older raw name: the tag is the name itself
      }
      gemini.push(lightSummary('gemini', join(dir, name), tag, tag))
    }
  }
  const present = (list: Array<SessionSummary | undefined>) => list.filter((s): s is SessionSummary => s !== undefined)
  return {claude: present(await Promise.all(claude)), gemini: present(await Promise.all(gemini)), codex: present(await Promise.all(codex))}
}

/**
 * Resolves the names of a sync from file names first; the full listings (every transcript parsed) only when that
 * does not settle it: a Gemini session id, or a registered session the quick look did not find (a Gemini chat session).
 */
async function resolveWithLists(
  input: {ref: string; to: Provider; tag?: string; registry: SessionRegistry},
  quick: () => Promise<SessionLists>,
  full: () => Promise<SessionLists>,
): Promise<ResolvedSync> {
  const lists = await quick()
  let resolved: ResolvedSync | undefined
  try {
    resolved = resolveSync({...input, ...lists})
  } catch (error) {
    if (!(error instanceof JarvisError) || error.exit !== ExitCode.badInput) throw error
  }
  const unseen = resolved?.entry?.providers.some((info) => info.provider === 'gemini' && !lists.gemini.some((s) => sameSession(refOf(s), info)))
  if (resolved && !unseen) return resolved
  return resolveSync({...input, ...(await full())})
}

// ---------------------------------------------------------------------------------------------------------------
// `jarvis session sync`

export interface SessionSyncOptions {
  root: string
  settings: SyncSettings
  /** A registry tag, a Claude Code or Codex CLI session id (or a unique prefix), a Gemini checkpoint tag or session id. */
  ref: string
  to: Provider
  /** Append to a target session even though its file changed in the last seconds. */
  force?: boolean
  /** The tag of a conversation that has none yet (default: see `defaultTag`). */
  tag?: string
  env?: NodeJS.ProcessEnv
  now?: () => Date
  inUseMs?: number
  sleep?: (ms: number) => Promise<void>
}

export interface SessionSide {
  provider: Provider
  sessionId: string
  tag?: string
  path: string
  messageCount: number
}

export interface SessionSyncResult {
  tag: string
  from: SessionSide
  /** The session the conversation was carried into (for Gemini CLI, its chat session). */
  to: SessionSide & {created: boolean}
  /** For Gemini CLI: the `/chat save` checkpoint of the tag, written beside the chat session. */
  checkpoint?: SessionSide & {created: boolean; added: number}
  /** `incremental`: only the new tails were merged; `full`: everything (first sync, or the recorded point no longer held). */
  mode: 'full' | 'incremental'
  /** Why the sync was a full merge. */
  reason?: string
  /** Messages carried this time. */
  added: number
  /** New source messages the target already held (dropped). */
  duplicates: number
  /** Whether a target file was written. */
  written: boolean
  /** `.nexus/gemini-backup/<tag>.json` when the target is Gemini. */
  backup?: string
  /** What the target format could not hold (signatures, encrypted reasoning), as the writers report it. */
  notCarried: string[]
  /** Lines of the transcripts that were skipped while reading. */
  warnings: string[]
  /** How to open the conversation in the target tool: the shell command first, then (Gemini) the in-app alternative. */
  resume: string[]
}

/** A file holding its own session's messages, read with the reader of its tool. */
function readSession(summary: Pick<SessionSummary, 'provider' | 'path'>): Promise<SessionTranscript> {
  if (summary.provider === 'claude') return readClaudeSession(summary.path)
  if (summary.provider === 'codex') return readCodexSession(summary.path)
  return readGeminiSession(summary.path)
}

function shellQuote(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`
}

/** The commands that continue the conversation in the target tool. */
export function resumeSteps(root: string, target: {provider: Provider; sessionId: string; tag?: string}): string[] {
  const cd = `cd ${shellQuote(root)} && `
  if (target.provider === 'codex') return [`${cd}codex resume ${target.sessionId}`]
  if (target.provider === 'claude') return [`${cd}claude --resume ${target.sessionId}`]
  return [`${cd}gemini --resume ${target.sessionId}`, ...(target.tag ? [`/chat resume ${target.tag}`] : [])]
}

/** Refuses to append to a session that something other than jarvis changed in the last seconds (it may be open). */
async function assertNotInUse(target: SessionSummary, pairs: Map<string, CarriedPair>, now: number, inUseMs: number, retry: Retry): Promise<void> {
  const info = await retry(`stat ${target.path}`, () => stat(target.path))
  const age = now - info.mtimeMs
  if (Math.abs(age) >= inUseMs) return
  const ours = [...pairs.values()].some(
    (pair) => sameSession(pair.to, refOf(target)) && pair.targetFile?.mtimeMs === info.mtimeMs && pair.targetFile.size === info.size,
  )
  if (ours) return
  const seconds = Math.max(0, Math.round(age / 1000))
  const label = PROVIDER_LABEL[target.provider]
  throw new JarvisError(
    `the ${label} session ${target.sessionId} changed ${seconds} s ago and may be open in ${label}; appending now could fork it or lose its next lines (${target.path}). ` +
      `Close that ${label} session and run again, or pass --force`,
    {code: 'SESSION_IN_USE', exit: ExitCode.conflictLeft, data: {sessionId: target.sessionId, path: target.path, changedMsAgo: Math.round(age)}},
  )
}

function sameMark(a: CarriedMark, b: CarriedMark): boolean {
  return a.count === b.count && a.probe === b.probe
}

/** Whether a sync recorded nothing new for this pair (the time aside). */
function samePair(a: CarriedPair, b: CarriedPair): boolean {
  return (
    a.tag === b.tag &&
    sameMark(a.source, b.source) &&
    sameMark(a.target, b.target) &&
    a.targetOwn === b.targetOwn &&
    a.targetFile?.mtimeMs === b.targetFile?.mtimeMs &&
    a.targetFile?.size === b.targetFile?.size
  )
}

type Retry = <T>(what: string, fn: () => Promise<T>) => Promise<T>

function countedNotes(notes: string[]): string[] {
  const counts = new Map<string, number>()
  for (const note of notes) counts.set(note, (counts.get(note) ?? 0) + 1)
  return [...counts].map(([note, n]) => (n > 1 ? `${note} (×${n})` : note))
}

/** One file a sync carries the conversation into: a session of the target tool, or the Gemini checkpoint of the tag. */
type TargetKind = Provider | 'gemini-checkpoint'

/** What carrying into one target did. */
interface Carried {
  kind: TargetKind
  ref: SessionRef
  path: string
  existed: boolean
  plan: CarryPlan
  previous?: CarriedPair
  /** The target's messages before this sync (none for a new one). */
  before: readonly UniversalMessage[]
  after: SessionTranscript
  written: boolean
  /** The checkpoint's bytes as written (also the backup). */
  bytes?: Buffer
  pair: CarriedPair
  notCarried: string[]
  warnings: string[]
}

interface CarryContext {
  root: string
  env: NodeJS.ProcessEnv
  tag: string
  source: SessionTranscript
  sourceRef: SessionRef
  pairs: Map<string, CarriedPair>
  settings: SyncSettings
  force: boolean
  now: () => Date
  inUseMs: number
  retry: Retry
  assertLock: () => void
}

/** Merges the source's new messages into one target (creating it the first time); the sync state is the caller's. */
async function carryInto(kind: TargetKind, existing: SessionSummary | undefined, c: CarryContext): Promise<Carried> {
  const {root, env, tag, source, retry} = c
  const target = existing ? await retry(`read ${existing.path}`, () => readSession(existing)) : undefined
  const targetMessages = target?.messages ?? []
  const previous = existing ? c.pairs.get(pairKey(c.sourceRef, refOf(existing))) : undefined
  const plan = planCarry({
    source: keyedSide(source.messages),
    target: keyedSide(targetMessages),
    previous,
    incremental: c.settings.incrementalSync,
    deduplicate: c.settings.deduplicateMessages,
  })
  // Only an append can fork a session that is open in its tool; reading it is harmless. A checkpoint is a snapshot.
  if (existing && kind !== 'gemini-checkpoint' && plan.added.length > 0 && !c.force) await assertNotInUse(existing, c.pairs, c.now().getTime(), c.inUseMs, retry)
  const added = plan.added.map((index) => source.messages[index])
  const title = source.title ?? `${tag} (from ${PROVIDER_LABEL[source.provider]})`
  const notCarried: string[] = []
  let path = existing?.path
  let sessionId = existing ? refOf(existing).sessionId : undefined
  let written = false
  let bytes: Buffer | undefined
  c.assertLock()
  if (kind === 'gemini-checkpoint') {
    if (!existing || added.length > 0) {
      const merged = [...targetMessages.slice(0, plan.keep), ...plan.order.map((ref) => (ref.side === 'target' ? targetMessages[ref.index] : source.messages[ref.index]))]
      const out = await retry(`write the Gemini CLI checkpoint ${tag}`, () => writeGeminiCheckpoint(root, tag, merged, {env}))
      notCarried.push(...out.notCarried)
      path = out.path
      sessionId = tag
      written = true
      bytes = await retry(`read ${path}`, () => readFile(out.path))
    }
  } else if (!existing) {
    const label = `write a new ${PROVIDER_LABEL[kind]} session`
    const out =
      kind === 'claude'
        ? await retry(label, () => writeClaudeSession(root, added, {title, env}))
        : kind === 'codex'
          ? await retry(label, () => writeCodexSession(root, added, {env}))
          : await retry(label, () => writeGeminiSession(root, added, {title, env, format: 'jsonl'}))
    notCarried.push(...out.notCarried)
    path = out.path
    sessionId = out.sessionId
    written = true
  } else if (added.length > 0) {
    const append = kind === 'claude' ? appendClaudeSession : kind === 'codex' ? appendCodexSession : appendGeminiSession
    const out = await retry(`append to ${existing.path}`, () => append(existing.path, added))
    notCarried.push(...out.notCarried)
    written = true
  }
  if (!path || !sessionId) throw new JarvisError('session sync: the writer named no target file', {code: 'FAILED', exit: ExitCode.failed})
  const provider: Provider = kind === 'gemini-checkpoint' ? 'gemini' : kind
  const finalPath = path
  // What the target holds now, as its reader sees it: the next sync checks its prefix against this.
  const after = !written
    ? target!
    : bytes
      ? parseGeminiText(bytes.toString('utf8'), finalPath).transcript
      : await retry(`read ${finalPath}`, () => readSession({provider, path: finalPath}))
  const ref: SessionRef = {provider, sessionId}
  const targetFile = written && kind !== 'gemini-checkpoint' ? await retry(`stat ${finalPath}`, () => stat(finalPath)) : undefined
  const pair: CarriedPair = {
    tag,
    from: c.sourceRef,
    to: ref,
    source: markOf(source.messages.length, keyedSide(source.messages).key),
    target: markOf(after.messages.length, keyedSide(after.messages).key),
    targetOwn: plan.targetOwn,
    syncedAt: c.now().toISOString(),
    ...(targetFile ? {targetFile: {mtimeMs: targetFile.mtimeMs, size: targetFile.size}} : previous?.targetFile && !written ? {targetFile: previous.targetFile} : {}),
  }
  return {kind, ref, path: finalPath, existed: existing !== undefined, plan, previous, before: targetMessages, after, written, bytes, pair, notCarried, warnings: target?.warnings ?? []}
}

/**
 * One `jarvis session sync`: under the tree lock, reads the source and the target, merges the new messages into
 * the target (creating it the first time), and for Gemini CLI into the checkpoint of the tag too; writes the Gemini
 * backup, the registry and the sync state.
 */
export async function syncSession(options: SessionSyncOptions): Promise<SessionSyncResult> {
  const {root, settings, to} = options
  const env = options.env ?? process.env
  const now = options.now ?? (() => new Date())
  const retry: Retry = (what, fn) => retryFileAccess(what, fn, {maxRetries: settings.maxRetries, retryDelay: settings.retryDelay, sleep: options.sleep})
  return withTreeLock(root, {timeoutMs: settings.lockTimeout, command: 'jarvis session sync'}, async (lock) => {
    const [registry, state] = await Promise.all([readRegistry(root), readSyncState(root)])
    const resolved = await resolveWithLists(
      {ref: options.ref, to, tag: options.tag, registry},
      () => retry('look for the sessions of this project', () => locateByName(root, env)),
      async () => {
        const [claude, gemini, codex] = await Promise.all([
          retry('list the Claude Code sessions', () => listClaudeSessions(root, env)),
          retry('list the Gemini CLI sessions', () => listGeminiSessions(root, env)),
          retry('list the Codex CLI sessions', () => listCodexSessions(root, env)),
        ])
        return {claude, gemini, codex}
      },
    )
    const {tag} = resolved
    const pairs = carriedPairs(state)
    const source = await retry(`read ${resolved.source.path}`, () => readSession(resolved.source))
    if (!resolved.target && source.messages.length === 0) {
      throw new BadInputError(`${resolved.source.path} holds no message to carry (only metadata, or nothing readable)`, {path: resolved.source.path})
    }
    const sourceRef = refOf(resolved.source)
    const context: CarryContext = {
      root,
      env,
      tag,
      source,
      sourceRef,
      pairs,
      settings,
      force: options.force ?? false,
      now,
      inUseMs: options.inUseMs ?? IN_USE_MS,
      retry,
      assertLock: () => lock.assertHeld(),
    }
    const main = await carryInto(to, resolved.target, context)
    const checkpoint = to === 'gemini' ? await carryInto('gemini-checkpoint', resolved.checkpoint, context) : undefined
    const carried = [main, ...(checkpoint ? [checkpoint] : [])]
    // Noted for the target session's own hooks: what came from another tool is not what that session did, and its
    // episode must not record it again (carried.ts). A checkpoint is no session a hook runs in.
    for (const one of carried.filter((c) => c.written && c.kind !== 'gemini-checkpoint')) {
      lock.assertHeld()
      const added = addedMessages(one.before, one.after.messages)
      await retry(`note what was carried into ${one.path}`, () => noteCarried(root, one.ref.provider, one.ref.sessionId, added))
    }

    let nextState: SyncState = resolved.replaces ? withoutPairsOf(state, resolved.replaces) : state
    for (const one of carried) {
      nextState = withCarriedPair(nextState, one.pair)
      if (one.plan.targetOwn === 0) {
        // The target now holds only what came from the source: carrying it back starts after all of it.
        const reverse = pairs.get(pairKey(one.ref, sourceRef))
        nextState = withCarriedPair(nextState, {
          tag,
          from: one.ref,
          to: sourceRef,
          source: one.pair.target,
          target: one.pair.source,
          targetOwn: 0,
          syncedAt: one.pair.syncedAt,
          ...(reverse?.targetFile ? {targetFile: reverse.targetFile} : {}),
        })
      }
    }

    let backup: string | undefined
    if (checkpoint) {
      backup = `.nexus/${geminiBackupRel(tag)}`
      if (checkpoint.written || (await readNexusFile(root, geminiBackupRel(tag))) === null) {
        const bytes = checkpoint.bytes ?? (await retry(`read ${checkpoint.path}`, () => readFile(checkpoint.path)))
        await retry(`write ${backup}`, () => writeNexusFile(root, geminiBackupRel(tag), bytes))
      }
    }

    const registered = resolved.entry?.providers ?? []
    const unchanged =
      resolved.entry?.sessionTag === tag &&
      registered.some((info) => sameSession(info, sourceRef) && info.messageCount === source.messages.length) &&
      carried.every(
        (one) =>
          !one.written &&
          one.previous !== undefined &&
          samePair(one.previous, one.pair) &&
          registered.some((info) => sameSession(info, one.ref) && info.messageCount === one.after.messages.length),
      )
    if (!unchanged) {
      lock.assertHeld()
      const side = (one: Carried) => ({
        ...one.ref,
        messageCount: one.after.messages.length,
        lastActivity: one.written ? one.pair.syncedAt : one.after.lastUpdated,
        path: one.path,
      })
      // The registry first: it is what links a target session to its tag. Without the sync state the next sync
      // merges everything again (no duplicates); without the registry it would create a second target session.
      await writeRegistry(
        root,
        recordSync(registry, {
          entryId: randomUUID(),
          tag,
          projectPath: root,
          now: main.pair.syncedAt,
          source: {...sourceRef, messageCount: source.messages.length, lastActivity: source.lastUpdated ?? resolved.source.lastActivity, path: resolved.source.path},
          target: side(main),
          ...(checkpoint ? {also: [side(checkpoint)]} : {}),
          replaces: resolved.replaces,
        }),
      )
      await writeSyncState(root, nextState)
    }

    const toSide = {provider: to, sessionId: main.ref.sessionId, path: main.path, messageCount: main.after.messages.length}
    return {
      tag,
      from: {provider: source.provider, sessionId: sourceRef.sessionId, ...(resolved.source.tag ? {tag: resolved.source.tag} : {}), path: resolved.source.path, messageCount: source.messages.length},
      to: {...toSide, created: !main.existed},
      ...(checkpoint
        ? {checkpoint: {provider: 'gemini' as const, sessionId: tag, tag, path: checkpoint.path, messageCount: checkpoint.after.messages.length, created: !checkpoint.existed, added: checkpoint.plan.added.length}}
        : {}),
      mode: main.plan.mode,
      ...(main.plan.reason && main.previous ? {reason: main.plan.reason} : {}),
      added: main.plan.added.length,
      duplicates: main.plan.considered - main.plan.added.length,
      written: carried.some((one) => one.written),
      ...(backup ? {backup} : {}),
      notCarried: countedNotes([...source.notCarried, ...main.notCarried]),
      warnings: [...source.warnings, ...carried.flatMap((one) => one.warnings)],
      resume: resumeSteps(root, {...toSide, ...(checkpoint ? {tag} : {})}),
    }
  })
}

// ---------------------------------------------------------------------------------------------------------------
// `jarvis session list`

export interface SessionListEntry {
  provider: Provider
  sessionId: string
  /** The Gemini checkpoint tag, else the tag of the registry entry holding this session. */
  tag?: string
  title?: string
  path: string
  messageCount: number
  lastActivity: string
  sync: {
    /** `not-synced`: in no registry entry; `in-sync`: nothing new since the last sync; `new-messages`: some. */
    status: 'not-synced' | 'in-sync' | 'new-messages'
    /** Messages added since the last sync that involved this session. */
    newMessages?: number
    lastSync?: string
    /** The other sessions of the same conversation. */
    linked?: SessionRef[]
  }
}

export interface SessionListResult {
  projectRoot: string
  claudeHome: string
  geminiHome: string
  codexHome: string
  sessions: SessionListEntry[]
}

/** The three tools' sessions of this project, newest first, with their sync status from `.nexus/`. Reads only. */
export async function listSessions(options: {root: string; settings: SyncSettings; env?: NodeJS.ProcessEnv; sleep?: (ms: number) => Promise<void>}): Promise<SessionListResult> {
  const {root, settings} = options
  const env = options.env ?? process.env
  const retry: Retry = (what, fn) => retryFileAccess(what, fn, {maxRetries: settings.maxRetries, retryDelay: settings.retryDelay, sleep: options.sleep})
  const [registry, state, claude, gemini, codex] = await Promise.all([
    readRegistry(root),
    readSyncState(root),
    retry('list the Claude Code sessions', () => listClaudeSessions(root, env)),
    retry('list the Gemini CLI sessions', () => listGeminiSessions(root, env)),
    retry('list the Codex CLI sessions', () => listCodexSessions(root, env)),
  ])
  const pairs = [...carriedPairs(state).values()]
  const sessions = [...claude, ...gemini, ...codex].map((summary): SessionListEntry => {
    const ref = refOf(summary)
    const entry = entryOfSession(registry, ref)
    // The count this session had at its latest sync, as source or as target.
    let latest: {at: string; count: number} | undefined
    for (const pair of pairs) {
      const count = sameSession(pair.from, ref) ? pair.source.count : sameSession(pair.to, ref) ? pair.target.count : undefined
      if (count !== undefined && (!latest || Date.parse(pair.syncedAt) > Date.parse(latest.at))) latest = {at: pair.syncedAt, count}
    }
    const tag = summary.tag ?? entry?.sessionTag
    const base = {
      provider: summary.provider,
      sessionId: summary.sessionId,
      ...(tag ? {tag} : {}),
      ...(summary.title ? {title: summary.title} : {}),
      path: summary.path,
      messageCount: summary.messageCount,
      lastActivity: summary.lastActivity,
    }
    if (!entry && !latest) return {...base, sync: {status: 'not-synced'}}
    const newMessages = latest ? Math.max(0, summary.messageCount - latest.count) : summary.messageCount
    const info = entry?.providers.find((p) => sameSession(p, ref))
    const lastSync = latest?.at ?? info?.lastSync
    return {
      ...base,
      sync: {
        status: newMessages > 0 ? 'new-messages' : 'in-sync',
        ...(newMessages > 0 ? {newMessages} : {}),
        ...(lastSync ? {lastSync} : {}),
        linked: (entry?.providers ?? []).filter((p) => !sameSession(p, ref)).map((p) => ({provider: p.provider, sessionId: p.sessionId})),
      },
    }
  })
  // Ties broken down to the file, so one list reads the same every time (a Gemini chat session and its /chat checkpoint share a time).
  sessions.sort((a, b) => Date.parse(b.lastActivity) - Date.parse(a.lastActivity) || a.provider.localeCompare(b.provider) || a.sessionId.localeCompare(b.sessionId) || a.path.localeCompare(b.path))
  return {projectRoot: root, claudeHome: claudeHome(env), geminiHome: geminiHome(env), codexHome: codexHome(env), sessions}
}
