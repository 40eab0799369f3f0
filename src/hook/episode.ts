/**
 * A session recorded as an episode: `episodes/YYYY-MM-DD/<agent>-<session>.md`, in the episode template of
 * seed 004 §8 (src/files/episode.ts), with a summary in four parts:
 *
 *     ## Asked          the prompts the person typed, one line each
 *     ## Decided        sentences of the session that state a decision (decided, chose, going with, instead of, …)
 *     ## Files touched  `path` (created, edited, written, deleted, read), from the tool calls
 *     ## Last answer    the agent's last answer, shortened
 *
 * One session is one file: the date is the session's first day, and every later hook of the same session
 * (pre-compact, each stop, session end) rewrites the same file with the union of what the file already says and
 * what the transcript says now — so a transcript that was compacted or is missing never makes the episode lose
 * what it held, and nothing is listed twice.
 *
 * Secrets and personal data: every line of the summary is scanned before anything is written (the same scan as
 * every other write); a line that holds one is left out and the hook log says so. If the text as a whole still
 * holds one, nothing is written.
 */
import {relative, isAbsolute, normalize} from 'node:path'

import {describeFindings, findSensitive, type SensitiveFinding} from '../events/index.js'
import {checkSlug, renderEpisode} from '../files/index.js'
import {readMemoryFile, withTreeLock, writeMemoryFile} from '../store/index.js'
import {oneLine} from './format.js'
import type {HookAgent} from './events.js'
import type {DigestItem} from './transcript.js'

export const MAX_ASKS = 20
/** When asks are cut, this many of the first ones are kept (the rest are the newest). */
export const ASKS_HEAD = 5
export const MAX_DECISIONS = 12
export const MAX_FILES = 60
export const ITEM_CHARS = 240
export const ANSWER_CHARS = 600

export interface FileTouch {
  path: string
  verbs: string[]
}

export interface SessionDigest {
  asks: string[]
  decisions: string[]
  files: FileTouch[]
  lastAnswer?: string
}

export const AGENT_NAMES: Record<HookAgent, string> = {claude: 'Claude Code', gemini: 'Gemini CLI', codex: 'Codex CLI', openclaw: 'OpenClaw'}

// ---- extraction (pure) -----------------------------------------------------------------------------------------

/** Sentences that state a decision. */
const DECISION =
  /\b(?:decided|decide to|decision|we(?:'ll| will) (?:use|go with|keep|switch|stick)|let'?s (?:use|go with|keep|switch|stick)|going with|go with|chose|chosen|choose to|settled on|agreed|switch(?:ed|ing)? to|instead of|from now on|the fix (?:is|was)|root cause)\b/i

function sentences(text: string): string[] {
  return text
    .replace(/```[\s\S]*?```/g, ' ')
    .split(/\n+|(?<=[.!?])\s+(?=[A-Z`*"'(])/)
    .map((s) => s.replace(/^[\s>*#-]+/, '').trim())
    .filter((s) => s.length >= 12)
}

const WRITE_VERBS: Record<string, string> = {
  Write: 'written',
  write_file: 'written',
  Edit: 'edited',
  MultiEdit: 'edited',
  replace: 'edited',
  NotebookEdit: 'edited',
  Read: 'read',
  read_file: 'read',
}

function stringField(input: unknown, ...keys: string[]): string | undefined {
  if (typeof input !== 'object' || input === null) return undefined
  for (const key of keys) {
    const value = (input as Record<string, unknown>)[key]
    if (typeof value === 'string' && value.trim() !== '') return value
  }
  return undefined
}

/** The files an apply_patch touched: `*** Add File: p`, `*** Update File: p`, `*** Delete File: p`, `*** Move to: p`. */
export function patchTouches(patch: string): Array<[string, string]> {
  const verbs: Record<string, string> = {Add: 'created', Update: 'edited', Delete: 'deleted', 'Move to': 'created'}
  return [...patch.matchAll(/^\*\*\* (Add File|Update File|Delete File|Move to): (.+)$/gm)].map((m) => [m[2].trim(), verbs[m[1].replace(' File', '')]])
}

/** The files one tool call touched, with what it did to them. */
export function touchesOf(name: string, input: unknown): Array<[string, string]> {
  const verb = WRITE_VERBS[name]
  if (verb) {
    const path = stringField(input, 'file_path', 'notebook_path', 'absolute_path', 'path')
    return path ? [[path, verb]] : []
  }
  if (name === 'read_many_files' && typeof input === 'object' && input !== null && Array.isArray((input as {paths?: unknown}).paths)) {
    return ((input as {paths: unknown[]}).paths.filter((p) => typeof p === 'string') as string[]).map((p) => [p, 'read'])
  }
  if (name === 'apply_patch') {
    const patch = typeof input === 'string' ? input : stringField(input, 'input', 'patch')
    return patch ? patchTouches(patch) : []
  }
  return []
}

/** A path as the episode shows it: relative to the session's directory when inside it. */
export function displayPath(path: string, cwd?: string): string {
  if (cwd && isAbsolute(path)) {
    const rel = relative(cwd, path)
    if (rel && !rel.startsWith('..') && !isAbsolute(rel)) return rel.split('\\').join('/')
  }
  return normalize(path).split('\\').join('/')
}

/** What a session's items say, bounded. */
export function digestOf(items: readonly DigestItem[], cwd?: string): SessionDigest {
  const asks: string[] = []
  const decisions: string[] = []
  const files = new Map<string, Set<string>>()
  let lastAnswer: string | undefined
  for (const item of items) {
    if (item.kind === 'ask') {
      pushUnique(asks, oneLine(item.text, ITEM_CHARS))
      for (const s of sentences(item.text)) if (DECISION.test(s)) pushUnique(decisions, oneLine(s, ITEM_CHARS))
    } else if (item.kind === 'answer') {
      lastAnswer = item.text
      for (const s of sentences(item.text)) if (DECISION.test(s)) pushUnique(decisions, oneLine(s, ITEM_CHARS))
    } else {
      for (const [path, verb] of touchesOf(item.name, item.input)) {
        const shown = displayPath(path, cwd)
        if (!files.has(shown)) files.set(shown, new Set())
        files.get(shown)!.add(verb)
      }
    }
  }
  return bound({
    asks,
    decisions,
    files: [...files].map(([path, verbs]) => ({path, verbs: [...verbs]})),
    lastAnswer: lastAnswer === undefined ? undefined : oneLine(lastAnswer, ANSWER_CHARS).replace(/^#+\s*/, '') || undefined,
  })
}

function pushUnique(list: string[], value: string): void {
  if (value && !list.includes(value)) list.push(value)
}

const VERB_ORDER = ['created', 'written', 'edited', 'deleted', 'read']

function bound(digest: SessionDigest): SessionDigest {
  const asks = digest.asks.length > MAX_ASKS ? [...digest.asks.slice(0, ASKS_HEAD), ...digest.asks.slice(-(MAX_ASKS - ASKS_HEAD))] : digest.asks
  const files = digest.files
    .map((f) => ({path: f.path, verbs: [...new Set(f.verbs)].sort((a, b) => VERB_ORDER.indexOf(a) - VERB_ORDER.indexOf(b))}))
    // files changed first, then files only read; each group in first-seen order
    .sort((a, b) => Number(a.verbs.every((v) => v === 'read')) - Number(b.verbs.every((v) => v === 'read')))
    .slice(0, MAX_FILES)
  return {asks, decisions: digest.decisions.slice(-MAX_DECISIONS), files, lastAnswer: digest.lastAnswer}
}

/** `a` then what `b` adds: the union of two digests of one session (the newer last answer wins). */
export function mergeDigests(a: SessionDigest, b: SessionDigest): SessionDigest {
  const union = (x: string[], y: string[]) => [...x, ...y.filter((v) => !x.includes(v))]
  const files = new Map<string, string[]>()
  for (const f of [...a.files, ...b.files]) files.set(f.path, [...(files.get(f.path) ?? []), ...f.verbs])
  return bound({
    asks: union(a.asks, b.asks),
    decisions: union(a.decisions, b.decisions),
    files: [...files].map(([path, verbs]) => ({path, verbs})),
    lastAnswer: b.lastAnswer ?? a.lastAnswer,
  })
}

export function isEmptyDigest(d: SessionDigest): boolean {
  return d.asks.length === 0 && d.decisions.length === 0 && d.files.length === 0 && !d.lastAnswer
}

// ---- the file (pure) -------------------------------------------------------------------------------------------

const SECTIONS = {asks: '## Asked', decisions: '## Decided', files: '## Files touched', lastAnswer: '## Last answer'} as const

/** The summary part of the episode. */
export function renderDigest(d: SessionDigest): string {
  const out: string[] = []
  if (d.asks.length > 0) out.push(SECTIONS.asks, ...d.asks.map((a) => `- ${a}`), '')
  if (d.decisions.length > 0) out.push(SECTIONS.decisions, ...d.decisions.map((s) => `- ${s}`), '')
  if (d.files.length > 0) out.push(SECTIONS.files, ...d.files.map((f) => `- \`${f.path}\` (${f.verbs.join(', ')})`), '')
  if (d.lastAnswer) out.push(SECTIONS.lastAnswer, d.lastAnswer, '')
  return out.join('\n').trimEnd()
}

/** Reads back the digest an episode file of ours holds (the union of later hooks starts from it). */
export function parseDigest(text: string): SessionDigest {
  const digest: SessionDigest = {asks: [], decisions: [], files: []}
  let section: keyof typeof SECTIONS | undefined
  const answer: string[] = []
  for (const raw of text.replace(/\r\n/g, '\n').split('\n')) {
    const line = raw.trimEnd()
    const heading = (Object.keys(SECTIONS) as Array<keyof typeof SECTIONS>).find((k) => SECTIONS[k] === line)
    if (heading) {
      section = heading
      continue
    }
    if (line.startsWith('## ')) {
      section = undefined
      continue
    }
    if (section === 'lastAnswer') {
      if (line.trim()) answer.push(line.trim())
      continue
    }
    if (!section || !line.startsWith('- ')) continue
    const item = line.slice(2)
    if (section === 'files') {
      const match = /^`(.+)` \(([^)]*)\)$/.exec(item)
      if (match) digest.files.push({path: match[1], verbs: match[2].split(',').map((v) => v.trim()).filter(Boolean)})
    } else digest[section].push(item)
  }
  if (answer.length > 0) digest.lastAnswer = answer.join(' ')
  return digest
}

export interface EpisodeMeta {
  agent: HookAgent
  sessionId: string
  /** YYYY-MM-DD: the session's first day. */
  date: string
  project?: string
}

/** `<agent>-<session>`: lowercase letters, digits and `-`, at most 80 characters. */
export function episodeSlug(agentId: string, sessionId: string): string {
  const session = sessionId
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
  return `${agentId}-${session || 'session'}`
}

export function episodePath(date: string, agentId: string, sessionId: string): string {
  return `episodes/${date}/${episodeSlug(agentId, sessionId)}.md`
}

/** The whole episode file. */
export function renderSessionEpisode(meta: EpisodeMeta, digest: SessionDigest): string {
  const short = meta.sessionId.slice(0, 8)
  const first = digest.asks[0]
  const title = `${AGENT_NAMES[meta.agent]} session ${short}${first ? `: ${oneLine(first, 70)}` : ''}`
  let project: string | undefined
  try {
    project = meta.project === undefined ? undefined : checkSlug(meta.project)
  } catch {
    project = undefined
  }
  return renderEpisode({
    title,
    tags: ['session', meta.agent],
    body: renderDigest(digest),
    now: new Date(`${meta.date}T12:00:00.000Z`),
    project,
    topic: first ? oneLine(first, 160) : undefined,
    outcome: digest.lastAnswer ? oneLine(digest.lastAnswer, 160) : undefined,
    refs: `${meta.agent} session ${meta.sessionId}`,
  })
}

// ---- secrets ---------------------------------------------------------------------------------------------------

export interface CleanDigest {
  digest: SessionDigest
  /** What was left out, described for the hook log ('' when nothing). */
  leftOut: string
  findings: SensitiveFinding[]
}

/** The digest without the lines that hold a secret or personal data (one scan over every line). */
export async function withoutSensitive(digest: SessionDigest): Promise<CleanDigest> {
  const fields: Record<string, string> = {}
  digest.asks.forEach((v, i) => (fields[`asked ${i + 1}`] = v))
  digest.decisions.forEach((v, i) => (fields[`decided ${i + 1}`] = v))
  digest.files.forEach((f, i) => (fields[`file ${i + 1}`] = f.path))
  if (digest.lastAnswer) fields['last answer'] = digest.lastAnswer
  const findings = await findSensitive(fields)
  if (findings.length === 0) return {digest, leftOut: '', findings}
  const bad = new Set(findings.map((f) => f.field))
  const clean: SessionDigest = {
    asks: digest.asks.filter((_, i) => !bad.has(`asked ${i + 1}`)),
    decisions: digest.decisions.filter((_, i) => !bad.has(`decided ${i + 1}`)),
    files: digest.files.filter((_, i) => !bad.has(`file ${i + 1}`)),
    lastAnswer: bad.has('last answer') ? undefined : digest.lastAnswer,
  }
  return {digest: clean, leftOut: `left out ${bad.size} line${bad.size === 1 ? '' : 's'} of the episode holding ${describeFindings(findings)}`, findings}
}

// ---- writing ---------------------------------------------------------------------------------------------------

export interface RecordResult {
  path: string
  /** False when the file already said exactly this. */
  changed: boolean
  /** Set when lines were left out (secrets, personal data); for the hook log. */
  leftOut?: string
  /** Set when nothing was written because the text still held a secret; for the hook log. */
  refused?: string
}

export interface RecordInput extends Omit<EpisodeMeta, 'date'> {
  agentId: string
  digest: SessionDigest
  /** The session's first day when known (YYYY-MM-DD). */
  startDate?: string
  now: Date
  lockTimeoutMs: number
}

/** The dates where this session's episode may already be: its first day, today, yesterday (a session over midnight). */
function candidateDates(startDate: string | undefined, now: Date): string[] {
  const today = now.toISOString().slice(0, 10)
  const yesterday = new Date(now.getTime() - 86_400_000).toISOString().slice(0, 10)
  return [...new Set([startDate, today, yesterday].filter((d): d is string => Boolean(d)))]
}

/**
 * Writes (or updates) the session's episode under the tree lock: the union of the file and the new digest,
 * secrets left out. Waits at most `lockTimeoutMs` for the lock (LockedError, exit 6, after that).
 */
export async function recordEpisode(root: string, input: RecordInput): Promise<RecordResult> {
  const scanned = await withoutSensitive(input.digest)
  return withTreeLock(root, {timeoutMs: input.lockTimeoutMs, command: 'jarvis hook'}, async () => {
    let path = episodePath(input.startDate ?? input.now.toISOString().slice(0, 10), input.agentId, input.sessionId)
    let existing: string | null = null
    for (const date of candidateDates(input.startDate, input.now)) {
      const candidate = episodePath(date, input.agentId, input.sessionId)
      const text = await readMemoryFile(root, candidate)
      if (text !== null) {
        path = candidate
        existing = text
        break
      }
    }
    const date = /^episodes\/(\d{4}-\d{2}-\d{2})\//.exec(path)![1]
    const merged = existing === null ? scanned.digest : mergeDigests(parseDigest(existing), scanned.digest)
    const text = renderSessionEpisode({agent: input.agent, sessionId: input.sessionId, date, project: input.project}, merged)
    const left = scanned.leftOut || undefined
    if (existing === text) return {path, changed: false, leftOut: left}
    const remaining = await findSensitive({[`.memory/${path}`]: text})
    if (remaining.length > 0) {
      return {path, changed: false, leftOut: left, refused: `episode ${path} not written: it holds ${describeFindings(remaining)}`}
    }
    await writeMemoryFile(root, path, text)
    return {path, changed: true, leftOut: left}
  })
}
