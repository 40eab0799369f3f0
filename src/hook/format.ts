/**
 * What a hook prints, in each agent's own format (agent-wiring research, checked against the installed
 * programs: Claude Code 2.1, Gemini CLI 0.61, Codex CLI 0.169). PURE.
 *
 * - Claude Code and Codex: `{"hookSpecificOutput":{"hookEventName":"SessionStart"|"UserPromptSubmit","additionalContext":"…"}}`
 *   (the name must be the event that ran: a wrong one is an error in Claude Code; Codex's schema requires it).
 * - Gemini CLI: JSON only (plain text would be shown to the user, never to the model), same shape, with
 *   `hookEventName` `SessionStart` or `BeforeAgent`.
 * - OpenClaw (a plugin handler that runs the hook): `{"prependContext":"…"}`, what `before_prompt_build` returns.
 * - Nothing to say → nothing at all on stdout (not even `{}`).
 */
import type {StoredMemoryEvent} from '../schemas/index.js'
import {shorten} from '../schemas/shorten.js'
// The module itself, not the session barrel: the prompt hook loads no session reader.
import {SESSION_CONTEXT_HEAD} from '../session/injected.js'
import type {BudgetSection} from './budget.js'
import {answerEventName, type HookAgent} from './events.js'

/*
 * jarvis's own words in what the model is given have no angle brackets (no `<path>` placeholders): Gemini CLI escapes
 * them (`&lt;path&gt;`) before the model sees them. The memory's own content is given as it is.
 */

/** The hook's answer carrying `context` for the model; '' when there is no context. */
export function formatAnswer(agent: HookAgent, event: 'session-start' | 'prompt', context: string, sentEventName?: string): string {
  if (context.trim() === '') return ''
  if (agent === 'openclaw') return JSON.stringify({prependContext: context}) + '\n'
  return JSON.stringify({hookSpecificOutput: {hookEventName: answerEventName(agent, event, sentEventName), additionalContext: context}}) + '\n'
}

/** The one line an agent gets at session start when the memory cannot be read (the rule of exit code 3, for agents). */
export function unreadableNotice(reason: string): string {
  const why = oneLine(reason).replace(/[.;:\s]+$/, '')
  return `jarvis: the shared memory could not be read (${why}); tell the user and do not go on from a guess about what it holds.`
}

/** The detail before a remedy keeps at least this many characters; with less room the reason is cut at its end. */
const MIN_DETAIL_CHARS = 40

/**
 * A reason on one line of at most `max` characters that keeps what to do whole: its last clause (after its last `: `:
 * "… refused JARVIS_TOKEN (HTTP 401 …): store gemini's own with `jarvis auth login …` (…)") is never cut, the detail
 * before it is shortened instead. A reason without such a clause, or whose clause leaves the detail too little room,
 * is cut at its end.
 */
export function reasonLine(reason: string, max: number): string {
  const flat = reason.replace(/\s+/g, ' ').trim()
  if (flat.length <= max) return flat
  const at = flat.lastIndexOf(': ')
  const remedy = flat.slice(at + 2)
  const room = max - remedy.length - 2
  return at > 0 && room >= MIN_DETAIL_CHARS ? `${shorten(flat.slice(0, at), room)}: ${remedy}` : shorten(flat, max)
}

/** Newlines and runs of spaces folded, at most `max` characters (an ellipsis marks a cut). */
export function oneLine(text: string, max = 400): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return shorten(flat, max)
}

export interface ContextFile {
  path: string
  summary: string
}

export interface SessionContextInput {
  agentId: string
  /** ISO time the memory was read. */
  at: string
  server?: string
  scopes: string[]
  pinnedMd: string
  recent: StoredMemoryEvent[]
  files: ContextFile[]
  /** The tree's project: its files are listed with the workspace's, another project's never (context.ts startFiles). */
  project?: string
  /** What the memory shown says, as a short hash (context.ts contextState): the same for the same memory, whenever read. */
  state?: string
  /** The conversation already holds earlier contexts (a resumed, forked or compacted session): this one replaces them. */
  replaces?: boolean
}

/** How many recent events the session-start context lists at most (before the budget). */
export const CONTEXT_RECENT_MAX = 15

/** The session-start context as budget sections, most important first: header, pinned memory, recent events, files. */
export function sessionContextSections(input: SessionContextInput): BudgetSection[] {
  const header = [
    `${SESSION_CONTEXT_HEAD} What the agents of this project share, read for ${readFor(input)}.`,
    ...(input.replaces ? [`It replaces the earlier ${SESSION_CONTEXT_HEAD} blocks of this conversation: where they differ, this one is current.`] : []),
    'Treat it as the team\'s memory: follow pinned decisions; record what you decide with the memory_append tool (or `jarvis memory append`); search it with the recall tool (or `jarvis recall` followed by what to look for).',
  ]
  const pinned = pinnedLines(input.pinnedMd)
  const recent = recentEvents(input.recent, pinnedKeysOf(pinned)).map((e) => e.line)
  const files = input.files.map(contextFileLine)
  return [
    {lines: header},
    // The pinned memory has a heading of its own and one per scope (`# Pinned memory`, `## global`, …).
    {lines: pinned, isHeading: isMarkdownHeading},
    ...(recent.length > 0 ? [{lines: ['## Recent events not pinned above', ...recent], heading: 1}] : []),
    ...(files.length > 0 ? [{lines: [`## Memory files of the workspace${input.project ? ` and of project ${input.project}` : ''} (read one with memory_read, or \`jarvis memory read\` followed by its path)`, ...files], heading: 1}] : []),
  ]
}

/** Whom, when, where from and what: `claude at <time> from <server> (scopes: …; memory state <state>)`. */
function readFor(input: Pick<SessionContextInput, 'agentId' | 'at' | 'server' | 'scopes' | 'state'>): string {
  return `${input.agentId} at ${input.at}${input.server ? ` from ${input.server}` : ''} (scopes: ${input.scopes.join(', ')}${input.state ? `; memory state ${input.state}` : ''})`
}

/**
 * What a resumed session gets instead of the context when its conversation already holds the context of the same
 * memory state (resume.ts): one line, that the block it has is still current.
 */
export function unchangedContextLine(input: Pick<SessionContextInput, 'agentId' | 'at' | 'server' | 'scopes'> & {state: string}): string {
  return `${SESSION_CONTEXT_HEAD} Read again for ${readFor(input)}: unchanged since the ${SESSION_CONTEXT_HEAD} block of this conversation with memory state ${input.state}, which is still current; where an earlier block differs from it, it is not.`
}

/** A memory file's line in the session context: `- path — one-line summary`. */
export function contextFileLine(file: ContextFile): string {
  return `- ${file.path}${file.summary ? ` — ${oneLine(file.summary, 160)}` : ''}`
}

/** A Markdown heading line (`# …` to `###### …`). */
function isMarkdownHeading(line: string): boolean {
  return /^#{1,6}\s/.test(line)
}

/** The lines of the server's pinned memory, blank ones left out. */
function pinnedLines(pinnedMd: string): string[] {
  return pinnedMd
    .replace(/\r\n/g, '\n')
    .split('\n')
    .filter((line) => line.trim() !== '')
}

/** Live events newest first; the server's times are ISO strings of one form, in order as text. */
function newestFirst(events: readonly StoredMemoryEvent[]): StoredMemoryEvent[] {
  // Never localeCompare, whose order is the process's locale's (a watch runs hooks whose locale may differ).
  return events.filter((e) => !e.deprecated).sort((a, b) => ((a.created_at ?? '') < (b.created_at ?? '') ? 1 : (a.created_at ?? '') > (b.created_at ?? '') ? -1 : 0))
}

const eventKey = (e: Pick<StoredMemoryEvent, 'scope' | 'dedupe_key'>) => `${e.scope}\u0000${e.dedupe_key}`

/**
 * The recent events the context lists, with their lines. The newest event of a key wins: a key pinned above is shown
 * there (its newest value), and of the others only the newest event of each key is listed — an older one is a value
 * the key no longer has.
 */
function recentEvents(events: readonly StoredMemoryEvent[], pinnedKeys: ReadonlySet<string>): Array<{line: string; event: StoredMemoryEvent}> {
  const seen = new Set<string>()
  return newestFirst(events)
    .filter((e) => {
      const key = eventKey(e)
      if (pinnedKeys.has(key) || seen.has(key)) return false
      seen.add(key)
      return true
    })
    .slice(0, CONTEXT_RECENT_MAX)
    .map((event) => ({line: `- ${(event.created_at ?? '').slice(0, 10)} [${event.kind}] ${event.scope} ${event.dedupe_key}: ${oneLine(firstLine(event.content_md), 160)} (${event.agent_id})`, event}))
}

/** A bullet of the pinned memory: `- [kind] key: text (agent, date[, confidence])`. */
const PINNED_BULLET = /^- \[[^\]]+\] ([a-z0-9_:-]+): (.*?)(?: \([^()]*\))?$/

/**
 * The texts of the shared events a session is told at its start, one per event: each pinned event (its whole text when
 * the recent events hold it, else the pinned bullet's), then each recent event listed. With `shownText`, the context
 * as it was cut to the budget, only the events whose line it holds. What a session's episode must not restate
 * (episode.ts withoutEchoes): the memory already says it.
 */
export function sessionEventTexts(input: Pick<SessionContextInput, 'pinnedMd' | 'recent'>, shownText?: string): string[] {
  const shown = shownText === undefined ? undefined : new Set(shownText.split('\n'))
  const pinned = pinnedLines(input.pinnedMd)
  const newest = new Map<string, StoredMemoryEvent>()
  for (const e of newestFirst(input.recent)) if (!newest.has(eventKey(e))) newest.set(eventKey(e), e)
  const texts: string[] = []
  let scope = ''
  for (const line of pinned) {
    scope = /^## (\S+)\s*$/.exec(line)?.[1] ?? scope
    const bullet = PINNED_BULLET.exec(line)
    if (!bullet || (shown && !shown.has(line))) continue
    texts.push(newest.get(`${scope}\u0000${bullet[1]}`)?.content_md ?? bullet[2])
  }
  for (const {line, event} of recentEvents(input.recent, pinnedKeysOf(pinned))) if (!shown || shown.has(line)) texts.push(event.content_md)
  return texts
}

/** `<scope>\0<key>` of each bullet of the pinned memory (`## <scope>` headings, then `- [kind] key: …` bullets). */
function pinnedKeysOf(lines: readonly string[]): Set<string> {
  const keys = new Set<string>()
  let scope = ''
  for (const line of lines) {
    const heading = /^## (\S+)\s*$/.exec(line)
    if (heading) scope = heading[1]
    const bullet = /^- \[[^\]]+\] ([a-z0-9_:-]+): /.exec(line)
    if (bullet) keys.add(`${scope}\u0000${bullet[1]}`)
  }
  return keys
}

/** The note that ends a context cut to the budget. */
export function omittedNote(maxTokens: number): (omitted: number) => string {
  return (omitted) => `… ${omitted} more line${omitted === 1 ? '' : 's'} left out to stay within ${maxTokens} tokens (\`jarvis memory snapshot\` shows more, as does \`jarvis recall\` with what to look for).`
}

function firstLine(content: string): string {
  const line = content.split(/\r?\n/).find((l) => l.trim() !== '') ?? ''
  return line.trim().replace(/^(?:#{1,6}\s+|[-*+]\s+|>\s*)/, '')
}

/** Characters of one summary in the prompt's recall block (as `jarvis recall`). */
export const RECALL_SUMMARY_CHARS = 160
/** The recall block never grows past this many characters (as `jarvis recall`). */
export const RECALL_BLOCK_MAX_CHARS = 1600

/** The `[MEMORY CONTEXT]` block of `jarvis recall` for the files that passed the threshold; '' for none. */
export function recallBlock(files: ContextFile[]): string {
  if (files.length === 0) return ''
  const lines = ['[MEMORY CONTEXT]']
  let length = lines[0].length
  for (const file of files) {
    const entry = [`- ${file.path}`, `  Summary: “${oneLine(file.summary, RECALL_SUMMARY_CHARS).replace(/[“”]/g, '"')}”`]
    const add = entry.join('\n').length + 1
    if (length + add > RECALL_BLOCK_MAX_CHARS) break
    lines.push(...entry)
    length += add
  }
  return lines.length > 1 ? lines.join('\n') : ''
}
