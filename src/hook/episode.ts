/**
 * A session recorded as an episode: `episodes/YYYY-MM-DD/<agent>-<session>.md`, in the episode template of
 * seed 004 §8 (src/files/episode.ts), with a summary of what the session added to the memory:
 *
 *     ## Decided        sentences of the session that state a decision (decided, chose, going with, instead of, …)
 *     ## Files touched  `path` (created, edited, written, deleted, read), from the tool calls
 *     ## Learned        the agent's last answer, shortened
 *     ## Memory used    the memory files jarvis gave the session for its prompts, or the agent read with the tools
 *
 * Not the prompts: a question asked again in every session would otherwise be written again in every episode, and
 * those echoes would outrank the note that answers it. A session that decided nothing, touched no file and ran no
 * tool only asked and was told (from the memory, or from the model's own knowledge): it is not recorded at all.
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
import {isAbsolute, normalize, relative, resolve} from 'node:path'

import {LockedError} from '../errors.js'
import {describeFindings, findSensitive, type SensitiveFinding} from '../events/index.js'
import {episodeParts, SESSION_SECTIONS} from '../files/episode-parts.js'
import {checkSlug, parseMemoryFile, renderEpisode} from '../files/index.js'
import {promptTerms} from '../ops/recall-rules.js'
import {readMemoryFile, withTreeLock, writeMemoryFile} from '../store/index.js'
import {oneLine} from './format.js'
import {agentIdOf, type HookAgent} from './events.js'
import {sessionSlug} from './shown.js'
import type {DigestItem} from './transcript.js'

export const MAX_DECISIONS = 12
export const MAX_FILES = 60
export const MAX_SOURCES = 20
export const ITEM_CHARS = 240
export const ANSWER_CHARS = 600

export interface FileTouch {
  path: string
  verbs: string[]
}

export interface SessionDigest {
  decisions: string[]
  files: FileTouch[]
  /** The agent's last answer, shortened. */
  learned?: string
  /** Memory files (never episodes) the session was given for its prompts or read with the memory tools. */
  sources: string[]
}

export const AGENT_NAMES: Record<HookAgent, string> = {claude: 'Claude Code', gemini: 'Gemini CLI', codex: 'Codex CLI', openclaw: 'OpenClaw'}

// ---- extraction (pure) -----------------------------------------------------------------------------------------

/** Sentences that state a decision. */
const DECISION =
  /\b(?:decided|decide to|decision|we(?:'ll| will) (?:use|go with|keep|switch|stick)|let'?s (?:use|go with|keep|switch|stick)|going with|go with|chose|chosen|choose to|settled on|agreed|switch(?:ed|ing)? to|instead of|from now on|the fix (?:is|was)|root cause)\b/i

/**
 * A question a person typed without its question mark: after an opener ("Quick question: "), a question word, or a
 * verb that asks of someone ("can we", "should I", "is the").
 */
const ASKED =
  /^(?:[^:—–]{0,40}[:—–]\s*)?(?:what|which|how|why|when|where|who|whom|whose|(?:can|could|should|would|will|do|does|did|is|are|was|were|has|have)\s+(?:i|we|you|it|they|he|she|this|that|these|those|the|there|our|my|a|an)\b)/i

/**
 * The sentences of a text that state a decision; a question ("Should we switch to Postgres?") states none, nor does
 * a person's prompt asking one without its question mark ("what was decided about retries").
 */
function decisionsIn(text: string, asked: boolean): string[] {
  return sentences(text)
    .filter((s) => DECISION.test(s) && !/\?["')\]]*$/.test(s) && !(asked && ASKED.test(s)))
    .map((s) => oneLine(s, ITEM_CHARS))
}

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

/** A tool of jarvis's own MCP server (`memory_read`, `mcp__jarvis__recall`, …): reading the memory, not the world. */
export function isMemoryTool(name: string): boolean {
  return /(?:^|[_.:-])(?:memory_[a-z_]+|recall)$/.test(name)
}

/** The memory file a memory tool call read (`memory_read {path}`), if any. */
function memoryRead(name: string, input: unknown): string | undefined {
  return /(?:^|[_.:-])memory_read$/.test(name) ? stringField(input, 'path') : undefined
}

/**
 * The memory files (their paths in the memory) a tool call only read: `memory_read`, or the agent's own read tools on
 * a file under the tree's `.memory/` (the hook showed it the path). Reading the memory learns nothing new.
 */
export function memoryFilesRead(name: string, input: unknown, cwd: string | undefined, memoryDir: string | undefined): string[] | undefined {
  const viaTool = memoryRead(name, input)
  if (viaTool !== undefined) return [viaTool]
  if (memoryDir === undefined) return undefined
  const command = name === 'Bash' ? stringField(input, 'command') : undefined
  const touches: Array<[string, string]> = command === undefined ? touchesOf(name, input) : (shellReads(command) ?? []).map((path) => [path, 'read'])
  if (touches.length === 0 || touches.some(([, verb]) => verb !== 'read')) return undefined
  const inMemory = touches.map(([path]) => {
    const rel = relative(memoryDir, isAbsolute(path) || cwd === undefined ? path : resolve(cwd, path))
    return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel.split('\\').join('/') : undefined
  })
  return inMemory.every((path) => path !== undefined) ? (inMemory as string[]) : undefined
}

/** Commands that print files and change nothing; `sed` only with `-n` and a print script. */
const PRINT_COMMANDS = new Set(['cat', 'head', 'tail', 'nl', 'less', 'more', 'sed'])

/**
 * The files a shell command only prints (`cat a.md b.md`, `head -n 50 a.md`, `sed -n '1,120p' a.md`), or undefined
 * for any other command: one that pipes, chains, redirects, substitutes or runs anything else.
 */
export function shellReads(command: string): string[] | undefined {
  if (/[|;&<>`$(){}\n]/.test(command)) return undefined
  const [program, ...args] = command.trim().split(/\s+/).map((word) => word.replace(/^(['"])(.*)\1$/, '$2'))
  if (!PRINT_COMMANDS.has(program)) return undefined
  const paths: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    if ((program === 'head' || program === 'tail') && /^-[nc]$/.test(arg)) i++
    else if (program === 'sed' && i === args.indexOf('-n') + 1 && /^\d*(,\d*)?p$/.test(arg)) continue
    else if (!arg.startsWith('-')) paths.push(arg)
  }
  if (program === 'sed' && !args.includes('-n')) return undefined
  return paths.length > 0 ? paths : undefined
}

/** A path as the episode shows it: relative to the session's directory when inside it. */
export function displayPath(path: string, cwd?: string): string {
  if (cwd && isAbsolute(path)) {
    const rel = relative(cwd, path)
    if (rel && !rel.startsWith('..') && !isAbsolute(rel)) return rel.split('\\').join('/')
  }
  return normalize(path).split('\\').join('/')
}

/** A memory file that can be a source: a note, never another episode. */
const isSource = (path: string) => path.trim() !== '' && !path.startsWith('episodes/')

/** Every memory file the session was shown or read, episodes included: what its answers may only repeat. */
export function memoryFilesUsed(items: readonly DigestItem[], cwd?: string, shown: readonly string[] = [], memoryDir?: string): string[] {
  const used = new Set(shown.filter((path) => path.trim() !== ''))
  for (const item of items) {
    if (item.kind !== 'tool') continue
    for (const path of memoryFilesRead(item.name, item.input, cwd, memoryDir) ?? []) if (path) used.add(path)
  }
  return [...used]
}

/**
 * What a session's items say, bounded; `shown` are the memory files jarvis gave its prompts. Files read in
 * `memoryDir` (the tree's `.memory/`) are memory used, not files touched.
 */
export function digestOf(items: readonly DigestItem[], cwd?: string, shown: readonly string[] = [], memoryDir?: string): SessionDigest {
  // Sets, in first-seen order: a transcript of many thousand decisions was quadratic as lists searched at each one.
  const decisions = new Set<string>()
  const files = new Map<string, Set<string>>()
  const sources = new Set(shown.filter(isSource))
  let learned: string | undefined
  for (const item of items) {
    if (item.kind === 'ask' || item.kind === 'answer') {
      if (item.kind === 'answer') learned = item.text
      for (const decision of decisionsIn(item.text, item.kind === 'ask')) if (decision) decisions.add(decision)
    } else {
      const read = memoryFilesRead(item.name, item.input, cwd, memoryDir)
      if (read) {
        for (const path of read.filter(isSource)) sources.add(path)
        continue
      }
      for (const [path, verb] of touchesOf(item.name, item.input)) {
        const shownPath = displayPath(path, cwd)
        if (!files.has(shownPath)) files.set(shownPath, new Set())
        files.get(shownPath)!.add(verb)
      }
    }
  }
  return bound({
    decisions: [...decisions],
    files: [...files].map(([path, verbs]) => ({path, verbs: [...verbs]})),
    learned: learned === undefined ? undefined : oneLine(learned, ANSWER_CHARS).replace(/^#+\s*/, '') || undefined,
    sources: [...sources],
  })
}

/**
 * True when a session added something to record: a decision, a file touched, or a tool run (not one that only read
 * the memory) — what it learned then comes from the world, not only from what it was told. A session that only asked
 * and read the memory is not.
 */
export function addsToMemory(digest: SessionDigest, items: readonly DigestItem[], cwd?: string, memoryDir?: string): boolean {
  const world = (item: DigestItem) => item.kind === 'tool' && !isMemoryTool(item.name) && memoryFilesRead(item.name, item.input, cwd, memoryDir) === undefined
  return digest.decisions.length > 0 || digest.files.length > 0 || items.some(world)
}

/** A decision or an answer is an echo of a memory file when at least this share of its topic words is in that file… */
export const ECHO_SHARE = 0.7
/** …and it has at least this many words: a short decision ("We chose Redis.") shares most of its few words by chance… */
export const ECHO_MIN_WORDS = 5
/** …of which at least this many say what it is about (not FRAMING words). */
export const ECHO_MIN_TOPIC_WORDS = 2

/**
 * Words that frame a decision or point at the memory, and say nothing of what was decided: "We decided to use
 * PostgreSQL 16, as pinned in the memory" says what the pinned event "We use PostgreSQL 16" says. Not counted in the
 * share of an echo's words (a decision has one by definition, the memory's text seldom).
 */
const FRAMING = new Set(['decided', 'decide', 'decision', 'decisions', 'chose', 'chosen', 'choose', 'agreed', 'settled', 'pinned', 'memory', 'noted', 'recorded', 'according', 'confirmed', 'already', 'stated', 'said', 'says'])

/**
 * The digest without what only repeats what the session was told (`sourceTexts`: the memory files it was given or
 * read, the shared events its start showed): a decision, or the last answer, most of whose topic words are in one of
 * those texts. The episode keeps what the session added; the note or event it repeated stays the one place that says
 * it.
 */
export function withoutEchoes(digest: SessionDigest, sourceTexts: readonly string[]): SessionDigest {
  if (sourceTexts.length === 0) return digest
  const sources = sourceTexts.map((text) => ({
    words: new Set(promptTerms(text)),
    numbers: new Set(numbersOf(text)),
    sentences: text.split(SENTENCE_END).map((sentence) => ({words: new Set(promptTerms(sentence)), negated: negated(sentence)})),
  }))
  // A decision repeats a file only said the same way round; the last answer by its words alone ("I found nothing
  // about X" is not a decision against the file it read, only a question echoed back).
  const echoes = (text: string, wayRound: boolean) => {
    const all = promptTerms(text)
    const words = all.filter((word) => !FRAMING.has(word))
    if (all.length < ECHO_MIN_WORDS || words.length < ECHO_MIN_TOPIC_WORDS) return false
    const shared = (set: ReadonlySet<string>) => words.filter((word) => set.has(word)).length
    return sources.some((source) => {
      if (shared(source.words) < ECHO_SHARE * words.length) return false
      if (!wayRound) return true
      // Said the same way round: no number the file does not hold ("retry 5 times" after "retry 3 times"), and, of
      // the file's sentences on the same thing, one as negated as it ("we decided not to log" after "we decided to
      // log" has none).
      if (!numbersOf(text).every((number) => source.numbers.has(number))) return false
      const onTheSame = source.sentences.filter((sentence) => shared(sentence.words) >= words.length / 2)
      return onTheSame.length === 0 || onTheSame.some((sentence) => sentence.negated === negated(text))
    })
  }
  return {...digest, decisions: digest.decisions.filter((d) => !echoes(d, true)), learned: digest.learned !== undefined && echoes(digest.learned, false) ? undefined : digest.learned}
}

const SENTENCE_END = /(?<=[.!?。！？])\s+|\n+/u
/** The words that turn a statement around; `promptTerms` drops them as saying nothing about a topic. */
const NEGATIONS = new Set(['not', 'no', 'never', 'nor', 'none', 'neither', 'cannot', 'without', 'instead', 'anymore'])

function negated(text: string): boolean {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}']+/u)
    .some((word) => NEGATIONS.has(word) || word.endsWith("n't"))
}

/** The numbers standing alone: not a date's, a path's or a name's digits (`notes/db-2024.md`, `2026-02-12`, `v2`). */
function numbersOf(text: string): string[] {
  return text.match(/(?<![\p{L}\p{N}/_.:-])\d+(?:\.\d+)?(?![\p{L}\p{N}/_:-]|\.\p{N})/gu) ?? []
}

/** The texts of these memory files, those that can still be read. */
export async function memoryTexts(root: string, paths: readonly string[]): Promise<string[]> {
  const texts = await Promise.all(paths.map((path) => readMemoryFile(root, path).catch(() => null)))
  return texts.filter((text): text is string => text !== null)
}

const VERB_ORDER = ['created', 'written', 'edited', 'deleted', 'read']

function bound(digest: SessionDigest): SessionDigest {
  const files = digest.files
    .map((f) => ({path: f.path, verbs: [...new Set(f.verbs)].sort((a, b) => VERB_ORDER.indexOf(a) - VERB_ORDER.indexOf(b))}))
    // files changed first, then files only read; each group in first-seen order
    .sort((a, b) => Number(a.verbs.every((v) => v === 'read')) - Number(b.verbs.every((v) => v === 'read')))
    .slice(0, MAX_FILES)
  return {decisions: digest.decisions.slice(-MAX_DECISIONS), files, learned: digest.learned, sources: digest.sources.slice(0, MAX_SOURCES)}
}

/** `a` then what `b` adds: the union of two digests of one session (the newer answer wins). */
export function mergeDigests(a: SessionDigest, b: SessionDigest): SessionDigest {
  const union = (x: string[], y: string[]) => [...x, ...y.filter((v) => !x.includes(v))]
  const files = new Map<string, string[]>()
  for (const f of [...a.files, ...b.files]) files.set(f.path, [...(files.get(f.path) ?? []), ...f.verbs])
  return bound({
    decisions: union(a.decisions, b.decisions),
    files: [...files].map(([path, verbs]) => ({path, verbs})),
    learned: b.learned ?? a.learned,
    sources: union(a.sources, b.sources),
  })
}

export function isEmptyDigest(d: SessionDigest): boolean {
  return d.decisions.length === 0 && d.files.length === 0 && !d.learned && d.sources.length === 0
}

// ---- the file (pure) -------------------------------------------------------------------------------------------

/** The summary part of the episode. */
export function renderDigest(d: SessionDigest): string {
  const out: string[] = []
  if (d.decisions.length > 0) out.push(SESSION_SECTIONS.decisions, ...d.decisions.map((s) => `- ${s}`), '')
  if (d.files.length > 0) out.push(SESSION_SECTIONS.files, ...d.files.map((f) => `- \`${f.path}\` (${f.verbs.join(', ')})`), '')
  if (d.learned) out.push(SESSION_SECTIONS.learned, d.learned, '')
  if (d.sources.length > 0) out.push(SESSION_SECTIONS.sources, ...d.sources.map((p) => `- ${p}`), '')
  return out.join('\n').trimEnd()
}

/**
 * Reads back the digest an episode file of ours holds (the union of later hooks starts from it). An episode of an
 * earlier version keeps what it decided, touched and answered; its `## Asked` is left behind.
 */
export function parseDigest(text: string): SessionDigest {
  const parts = episodeParts(text.slice(text.indexOf('\nSummary:') + 1))
  const files = parts.files.flatMap((item) => {
    const match = /^`(.+)` \(([^)]*)\)$/.exec(item)
    return match ? [{path: match[1], verbs: match[2].split(',').map((v) => v.trim()).filter(Boolean)}] : []
  })
  return {decisions: parts.decided, files, learned: parts.learned.length > 0 ? parts.learned.join(' ') : undefined, sources: parts.sources.filter(isSource)}
}

export interface EpisodeMeta {
  agent: HookAgent
  sessionId: string
  /** YYYY-MM-DD: the session's first day. */
  date: string
  project?: string
  /** ISO time the episode's content last changed (front matter `updated`): what orders the newest episodes. */
  updated?: string
}

/** `<agent>-<session>`: lowercase letters, digits and `-`, at most 80 characters. */
export const episodeSlug = sessionSlug

export function episodePath(date: string, agentId: string, sessionId: string): string {
  return `episodes/${date}/${episodeSlug(agentId, sessionId)}.md`
}

/** What the session was about, from what it did: its first decision, else the files it changed, else those it read. */
export function topicOf(digest: SessionDigest): string | undefined {
  if (digest.decisions.length > 0) return digest.decisions[0]
  const changed = digest.files.filter((f) => f.verbs.some((v) => v !== 'read'))
  const list = (files: FileTouch[]) => `${files.slice(0, 3).map((f) => f.path).join(', ')}${files.length > 3 ? ` and ${files.length - 3} more` : ''}`
  if (changed.length > 0) return `changed ${list(changed)}`
  if (digest.files.length > 0) return `read ${list(digest.files)}`
  return undefined
}

/** The whole episode file. */
export function renderSessionEpisode(meta: EpisodeMeta, digest: SessionDigest): string {
  const short = meta.sessionId.slice(0, 8)
  // Tagged and referred to by the jarvis id (`chatgpt` for Codex), as the file is named: one name for one agent.
  const agentId = agentIdOf(meta.agent)
  const topic = topicOf(digest)
  const title = `${AGENT_NAMES[meta.agent]} session ${short}${topic ? `: ${oneLine(topic, 70)}` : ''}`
  let project: string | undefined
  try {
    project = meta.project === undefined ? undefined : checkSlug(meta.project)
  } catch {
    project = undefined
  }
  return renderEpisode({
    title,
    tags: ['session', agentId],
    body: renderDigest(digest),
    now: new Date(`${meta.date}T12:00:00.000Z`),
    project,
    topic: topic ? oneLine(topic, 160) : undefined,
    outcome: digest.learned ? oneLine(digest.learned, 160) : undefined,
    refs: `${agentId} session ${meta.sessionId}`,
    updated: meta.updated,
  })
}

/**
 * When an episode last changed: its front matter `updated` (the hooks write it), else the start of its date (front
 * matter `date`, else the date in its path), as an ISO time; undefined when it says neither. Not the file's time,
 * which a sync pull sets to the time of the pull.
 */
export function episodeTime(path: string, text: string): string | undefined {
  let frontMatter: Record<string, unknown> = {}
  try {
    frontMatter = parseMemoryFile(path, text).frontMatter
  } catch {
    // A front matter that does not parse says no time; the path may still say the date.
  }
  const updated = isoTime(frontMatter.updated)
  if (updated !== undefined && /T/.test(updated)) return updated
  const date = isoTime(frontMatter.date) ?? /(?:^|\/)(\d{4}-\d{2}-\d{2})\//.exec(path)?.[1]
  return date === undefined ? undefined : `${date.slice(0, 10)}T00:00:00.000Z`
}

/** A front matter time as ISO text: a YAML date, or a string that parses as one; undefined otherwise. */
function isoTime(value: unknown): string | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString()
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(value)) return undefined
  const time = Date.parse(value)
  return Number.isNaN(time) ? undefined : value.length <= 10 ? value : new Date(time).toISOString()
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
  digest.decisions.forEach((v, i) => (fields[`decided ${i + 1}`] = v))
  digest.files.forEach((f, i) => (fields[`file ${i + 1}`] = f.path))
  digest.sources.forEach((p, i) => (fields[`memory used ${i + 1}`] = p))
  if (digest.learned) fields['learned'] = digest.learned
  const findings = await findSensitive(fields)
  if (findings.length === 0) return {digest, leftOut: '', findings}
  const bad = new Set(findings.map((f) => f.field))
  const clean: SessionDigest = {
    decisions: digest.decisions.filter((_, i) => !bad.has(`decided ${i + 1}`)),
    files: digest.files.filter((_, i) => !bad.has(`file ${i + 1}`)),
    learned: bad.has('learned') ? undefined : digest.learned,
    sources: digest.sources.filter((_, i) => !bad.has(`memory used ${i + 1}`)),
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
  /** True when nothing was written because the session added nothing to record (addsToMemory) and had no episode yet. */
  skipped?: boolean
  /**
   * Set when the tree stayed locked past the wait: nothing was written, the digest waits in `.nexus/pending-episodes/`
   * for the next hook or background sync that gets the lock (pending.ts); says so for the hook log.
   */
  kept?: string
  /** The episodes of earlier hooks that had found the tree locked, written first (writePendingEpisodes). */
  earlier?: EpisodeWritten[]
}

/** One episode a record waiting in `.nexus/pending-episodes/` went into. */
export interface EpisodeWritten {
  path: string
  changed: boolean
  /** Set when it was not written: it held a secret, or the record could not be read; for the hook log. */
  refused?: string
}

export interface RecordInput extends Omit<EpisodeMeta, 'date'> {
  agentId: string
  digest: SessionDigest
  /** addsToMemory of the session: false writes no new episode (one already written is still brought up to date). */
  adds: boolean
  /** The session's first day when known (YYYY-MM-DD). */
  startDate?: string
  now: Date
  lockTimeoutMs: number
}

/** The `updated` time an episode file says, as written (undefined for an episode of an earlier version). */
function writtenTime(path: string, text: string): string | undefined {
  try {
    const updated = parseMemoryFile(path, text).frontMatter.updated
    return typeof updated === 'string' ? updated : updated instanceof Date ? updated.toISOString() : undefined
  } catch {
    return undefined
  }
}

/** The dates where this session's episode may already be: its first day, today, yesterday (a session over midnight). */
function candidateDates(startDate: string | undefined, now: Date): string[] {
  const today = now.toISOString().slice(0, 10)
  const yesterday = new Date(now.getTime() - 86_400_000).toISOString().slice(0, 10)
  return [...new Set([startDate, today, yesterday].filter((d): d is string => Boolean(d)))]
}

/**
 * Writes (or updates) the session's episode under the tree lock: the union of the file and the new digest,
 * secrets left out. Records of earlier hooks that found the tree locked are written first. Waits at most
 * `lockTimeoutMs` for the lock; a tree still locked then writes nothing into `.memory/`: the digest is kept in
 * `.nexus/pending-episodes/` (`kept` says where) for the next hook or background sync that gets the lock.
 */
export async function recordEpisode(root: string, input: RecordInput): Promise<RecordResult> {
  const scanned = await withoutSensitive(input.digest)
  const clean = {...input, digest: scanned.digest}
  const leftOut = scanned.leftOut || undefined
  try {
    return await withTreeLock(root, {timeoutMs: input.lockTimeoutMs, command: 'jarvis hook'}, async () => {
      const earlier = await writePendingEpisodes(root)
      const written = await writeEpisode(root, clean)
      return {...written, leftOut, ...(earlier.length > 0 ? {earlier} : {})}
    })
  } catch (error) {
    if (!(error instanceof LockedError)) throw error
    const {keepPendingEpisode} = await import('./pending.js')
    const rel = await keepPendingEpisode(root, {
      agent: input.agent,
      sessionId: input.sessionId,
      digest: clean.digest,
      adds: input.adds,
      ...(input.startDate ? {startDate: input.startDate} : {}),
      at: input.now.toISOString(),
      ...(input.project === undefined ? {} : {project: input.project}),
    })
    const locked = error.message.replace(/; try again when it has finished$/, '')
    return {
      path: episodePath(input.startDate ?? input.now.toISOString().slice(0, 10), input.agentId, input.sessionId),
      changed: false,
      leftOut,
      kept: `${locked}: the episode waits in .nexus/${rel}, written by the next hook, background sync or jarvis sync that gets the lock`,
    }
  }
}

/**
 * Writes the records earlier hooks kept because the tree was locked (pending.ts) into their sessions' episodes, oldest
 * first, and removes them. The caller holds the tree lock. A record that cannot be read is removed too, and said.
 */
export async function writePendingEpisodes(root: string): Promise<EpisodeWritten[]> {
  const {forgetPendingEpisode, readPendingEpisodes} = await import('./pending.js')
  const written: EpisodeWritten[] = []
  for (const file of await readPendingEpisodes(root)) {
    if ('problem' in file) {
      written.push({path: `.nexus/${file.rel}`, changed: false, refused: `a kept episode could not be read and was dropped: ${oneLine(file.problem, 400)}`})
    } else {
      const {record} = file
      const episode = await writeEpisode(root, {...record, agentId: agentIdOf(record.agent), now: new Date(record.at)})
      if (!episode.skipped) written.push({path: episode.path, changed: episode.changed, ...(episode.refused ? {refused: episode.refused} : {})})
    }
    await forgetPendingEpisode(root, file.rel)
  }
  return written
}

/** The session's episode brought up to date with a digest already cleaned of secrets; the caller holds the tree lock. */
async function writeEpisode(root: string, input: Omit<RecordInput, 'lockTimeoutMs' | 'updated'>): Promise<Omit<RecordResult, 'leftOut'>> {
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
  if (existing === null && !input.adds) return {path, changed: false, skipped: true}
  const date = /^episodes\/(\d{4}-\d{2}-\d{2})\//.exec(path)![1]
  const merged = existing === null ? input.digest : mergeDigests(parseDigest(existing), input.digest)
  const meta = {agent: input.agent, sessionId: input.sessionId, date, project: input.project}
  // The same content again writes nothing, its time included: `updated` moves only when what it says changes.
  if (existing !== null && renderSessionEpisode({...meta, updated: writtenTime(path, existing)}, merged) === existing) return {path, changed: false}
  const text = renderSessionEpisode({...meta, updated: input.now.toISOString()}, merged)
  const remaining = await findSensitive({[`.memory/${path}`]: text})
  if (remaining.length > 0) return {path, changed: false, refused: `episode ${path} not written: it holds ${describeFindings(remaining)}`}
  await writeMemoryFile(root, path, text)
  return {path, changed: true}
}
