/**
 * The universal message of seed 002 as readers produce and writers consume it (docs/session.md).
 *
 * One universal message per content block: a user prompt (text plus image references), an assistant text, a
 * tool call (`tool_use`, role assistant), a tool result (`tool_result`, role user). Everything else a provider
 * records stays in `metadata`, and the source records themselves, verbatim, in `metadata.original` of the first
 * message made from them, so that a writer for the same tool can put them back byte for byte.
 */
import {createHash, randomUUID} from 'node:crypto'

import type {Provider, UniversalImageRef, UniversalMessage, UniversalMetadata, UniversalSource} from '../schemas/index.js'
import {isRecord} from '../schemas/plain-fields.js'

export type {Provider, UniversalImageRef, UniversalMessage, UniversalMetadata, UniversalReasoning, UniversalSource} from '../schemas/index.js'

export interface SessionTranscript {
  provider: Provider
  /** Claude: the session UUID (= file name); Gemini: the sessionId, or the checkpoint tag; Codex: the thread id. */
  sessionId: string
  /** Gemini `/chat save` tag when read from a checkpoint. */
  tag?: string
  path: string
  /** Claude: the `cwd` of the first entry; Gemini: `.project_root` or projects.json; Codex: `session_meta.cwd`; '' when the file does not say. */
  projectRoot: string
  title?: string
  startTime?: string
  lastUpdated?: string
  messages: UniversalMessage[]
  /** Skipped lines and records: `file:line: reason` (or `file: messages[i]: reason`). */
  warnings: string[]
  /** What a cross-tool write had to drop; always empty on a read. */
  notCarried: string[]
}

export interface SessionSummary {
  provider: Provider
  sessionId: string
  tag?: string
  path: string
  messageCount: number
  lastActivity: string
  title?: string
}

/** Injected clock and id generator so that writes are byte-for-byte reproducible in tests. */
export interface WriteClockOptions {
  now?: () => Date
  newId?: () => string
}

export function clockOf(options: WriteClockOptions): {now: () => Date; newId: () => string} {
  return {now: options.now ?? (() => new Date()), newId: options.newId ?? randomUUID}
}

/** A Claude text block that carries another tool's reasoning starts with this line; the Claude reader turns it back into reasoning. */
export const REASONING_PREFIX = '[reasoning carried over by jarvis]\n'
/** The model reply jarvis adds when a Gemini conversation would otherwise end without one; readers drop it. */
export const NO_REPLY_TEXT = '[jarvis] No reply was recorded for this turn.'
/** The result jarvis gives a tool call that has none, the text Claude Code itself uses for an interrupted call. */
export const INTERRUPTED_RESULT = '[Request interrupted by user for tool use]'

export function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback
}

const ISO_ZONED = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/

/** The timestamp when it is an ISO-8601 date-time with a zone (the universal schema's rule), else undefined. */
export function validTimestamp(value: unknown): string | undefined {
  return typeof value === 'string' && ISO_ZONED.test(value) && !Number.isNaN(Date.parse(value)) ? value : undefined
}

/** Strictly increasing millisecond timestamps: each one the wanted time, or 1 ms after the previous one if that is later. */
export class IncreasingClock {
  private last = Number.NEGATIVE_INFINITY

  constructor(after?: string) {
    if (after !== undefined && !Number.isNaN(Date.parse(after))) this.last = Date.parse(after)
  }

  /** True when `iso` is already later than the previous one (so a verbatim record can keep it). */
  accepts(iso: unknown): boolean {
    return typeof iso === 'string' && validTimestamp(iso) !== undefined && Date.parse(iso) > this.last
  }

  next(wanted: string | undefined, fallback: Date): string {
    const parsed = wanted === undefined ? Number.NaN : Date.parse(wanted)
    const ms = Math.max(Number.isNaN(parsed) ? fallback.getTime() : parsed, this.last + 1)
    this.last = ms
    return new Date(ms).toISOString()
  }

  /** Records that `iso` was used verbatim. */
  take(iso: string): string {
    this.last = Date.parse(iso)
    return iso
  }
}

/** sha256 and decoded size of base64 data: an image reference that does not carry the bytes. */
export function imageRef(mediaType: string, base64: string, at: string): UniversalImageRef {
  const bytes = Buffer.from(base64, 'base64')
  return {mediaType, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), at}
}

/** Resolves a JSON pointer (`/0/message/content/1`) inside `root`; undefined when a step is missing. */
export function resolvePointer(root: unknown, pointer: string): unknown {
  if (pointer === '') return root
  let node: unknown = root
  for (const raw of pointer.split('/').slice(1)) {
    const step = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (Array.isArray(node)) node = node[Number(step)]
    else if (isRecord(node)) node = node[step]
    else return undefined
  }
  return node
}

/** The base64 bytes of a `data:` URL (how Codex CLI stores an image), with its media type. */
export function dataUrlParts(url: string): {mediaType: string; base64: string} | undefined {
  const match = /^data:([^;,]+)?(?:;[^,]*)?;base64,(.*)$/s.exec(url)
  return match ? {mediaType: match[1] ?? 'application/octet-stream', base64: match[2]} : undefined
}

/** The base64 bytes an image reference points at, found in the message's own `original` (or the first message of its record). */
export function imageData(ref: UniversalImageRef, original: unknown[] | undefined): string | undefined {
  if (ref.at === undefined || original === undefined) return undefined
  const block = resolvePointer(original, ref.at)
  if (!isRecord(block)) return undefined
  if (isRecord(block.source) && typeof block.source.data === 'string') return block.source.data // Claude image/document
  if (isRecord(block.inlineData) && typeof block.inlineData.data === 'string') return block.inlineData.data // Gemini part
  if (typeof block.image_url === 'string') return dataUrlParts(block.image_url)?.base64 // Codex input_image
  return undefined
}

/** One line of a JSON Lines file: its number (1-based), its text, and whether a newline ended it. */
export interface JsonLine {
  line: number
  text: string
  terminated: boolean
}

export function splitJsonLines(text: string): JsonLine[] {
  const body = text.charCodeAt(0) === 0xfe_ff ? text.slice(1) : text
  const parts = body.split('\n')
  return parts.flatMap((part, index) => {
    const clean = part.endsWith('\r') ? part.slice(0, -1) : part
    return clean.trim() === '' ? [] : [{line: index + 1, text: clean, terminated: index < parts.length - 1}]
  })
}

export type ParsedLine = {ok: true; value: unknown} | {ok: false; reason: string}

export function parseLine(line: JsonLine): ParsedLine {
  try {
    return {ok: true, value: JSON.parse(line.text)}
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return {ok: false, reason: line.terminated ? `not JSON (${reason})` : `truncated last line (${reason})`}
  }
}

/** A message before `id`, `parentId`, `sessionId` and `source` are given to it. */
export interface Draft {
  role: 'user' | 'assistant'
  type: 'message' | 'tool_use' | 'tool_result'
  content: UniversalMessage['content']
  timestamp?: string
  metadata: UniversalMetadata
}

/**
 * Turns source records into universal messages. Each `add` is one source record (or a few that belong
 * together) with the drafts made from it; records that make no message (metadata, notices, system entries)
 * ride along in `original` of the next message, or of the last one at the end, so nothing read is dropped.
 */
export class TranscriptBuilder {
  private readonly messages: UniversalMessage[] = []
  private pending: unknown[] = []
  private lastTimestamp: string | undefined
  private lastUnitFirst = -1

  constructor(
    private readonly provider: Provider,
    private readonly sessionId: string,
    private readonly format: UniversalSource['format'],
    private readonly fallbackTimestamp: string,
  ) {}

  /** A record that produced no message. */
  keep(...records: unknown[]): void {
    this.pending.push(...records)
  }

  add(key: string, records: unknown[], drafts: Draft[]): void {
    if (drafts.length === 0) {
      this.keep(...records)
      return
    }
    const original = [...this.pending, ...records]
    this.pending = []
    this.lastUnitFirst = this.messages.length
    drafts.forEach((draft, index) => {
      const timestamp = validTimestamp(draft.timestamp) ?? this.lastTimestamp ?? this.fallbackTimestamp
      this.lastTimestamp = timestamp
      const source: UniversalSource = {format: this.format, key, index, size: drafts.length}
      const metadata: UniversalMetadata = {provider: this.provider, ...draft.metadata, source}
      if (index === 0) metadata.original = original
      this.messages.push({
        id: index === 0 ? key : `${key}:${index}`,
        parentId: null,
        sessionId: this.sessionId,
        timestamp,
        role: draft.role,
        type: draft.type,
        content: draft.content,
        metadata,
      })
    })
  }

  /** Record offsets inside `original` shift when records were pending; callers use this to point image refs. */
  get pendingCount(): number {
    return this.pending.length
  }

  finish(): UniversalMessage[] {
    if (this.pending.length > 0 && this.lastUnitFirst >= 0) {
      const first = this.messages[this.lastUnitFirst]
      first.metadata.original = [...(first.metadata.original ?? []), ...this.pending]
      this.pending = []
    }
    this.messages.forEach((message, index) => {
      message.parentId = index === 0 ? null : this.messages[index - 1].id
    })
    return this.messages
  }
}

/** True when the messages from `start` are every message of one source record, in order, the first with its originals. */
export function wholeRecordAt(messages: readonly UniversalMessage[], start: number, formats: ReadonlyArray<UniversalSource['format']>): number {
  const first = messages[start]
  const source = first.metadata.source
  if (!source || !formats.includes(source.format) || source.index !== 0 || !Array.isArray(first.metadata.original)) return 0
  for (let i = 1; i < source.size; i++) {
    const next = messages[start + i]?.metadata.source
    if (!next || next.key !== source.key || next.index !== i || next.format !== source.format) return 0
  }
  return source.size
}

// ---- Pairing tool calls with their results, shared by every writer ---------------------------------------------

export interface PlannedCall {
  id: string
  use: UniversalMessage
  result?: UniversalMessage
}

export type Turn =
  | {role: 'user'; message: UniversalMessage}
  | {
      role: 'assistant'
      /** Texts and tool calls, in order. */
      messages: UniversalMessage[]
      calls: PlannedCall[]
      /** The results of `calls`, in the order they arrived; a call missing here has no result. */
      results: UniversalMessage[]
      responseId?: string
    }

export function textOf(message: UniversalMessage): string {
  return typeof message.content.text === 'string' ? message.content.text : ''
}

/**
 * Groups messages into user turns and assistant turns, and gives every tool call its result: a result moves to
 * the call it answers (by `tool_use_id`, else the oldest open call); a result that answers no call becomes a
 * plain user text (noted). A call still without a result is left for the writer to answer.
 */
export function planTurns(messages: readonly UniversalMessage[], newId: () => string, notes: string[]): Turn[] {
  const turns: Turn[] = []
  const open: Array<{call: PlannedCall; turn: Extract<Turn, {role: 'assistant'}>}> = []
  let current: Extract<Turn, {role: 'assistant'}> | undefined
  for (const message of messages) {
    if (message.type === 'tool_result') {
      const wanted = message.content.tool_result?.tool_use_id
      const index = wanted === undefined ? (open.length > 0 ? 0 : -1) : open.findIndex(({call}) => call.id === wanted)
      if (index >= 0) {
        const {call, turn} = open[index]
        call.result = message
        turn.results.push(message)
        open.splice(index, 1)
        continue
      }
      const result = message.content.tool_result ?? {}
      const body = result.error === undefined ? stringOr(result.output, '') : `error: ${result.error}`
      notes.push(`a tool result without its call (${wanted ?? 'no id'}) was carried as user text`)
      const {provider, model} = message.metadata
      turns.push({
        role: 'user',
        message: {...message, type: 'message', content: {text: `[tool result${wanted ? ` ${wanted}` : ''}] ${body}`}, metadata: {provider, model, kind: 'meta'}},
      })
      current = undefined
      continue
    }
    if (message.role === 'user') {
      turns.push({role: 'user', message})
      current = undefined
      continue
    }
    const responseId = message.metadata.responseId
    if (!current || current.results.length > 0 || (responseId !== undefined && current.responseId !== undefined && responseId !== current.responseId)) {
      current = {role: 'assistant', messages: [], calls: [], results: [], responseId}
      turns.push(current)
    }
    current.responseId ??= responseId
    current.messages.push(message)
    if (message.type === 'tool_use') {
      const id = message.content.tool_use?.tool_use_id ?? `call_${newId()}`
      const call: PlannedCall = {id, use: message}
      current.calls.push(call)
      open.push({call, turn: current})
    }
  }
  return turns
}

/**
 * The source records of `segment` when it is made of whole records of `format`, each complete and in order
 * (so a writer for that format can put them back verbatim); undefined otherwise.
 */
export function wholeRecords(segment: readonly UniversalMessage[], ...formats: Array<UniversalSource['format']>): unknown[][] | undefined {
  const records: unknown[][] = []
  let i = 0
  while (i < segment.length) {
    const size = wholeRecordAt(segment, i, formats)
    if (size === 0) return undefined
    records.push(segment[i].metadata.original ?? [])
    i += size
  }
  return records
}

/** Every record's originals by source key, so a later block of a record can find the bytes of its images. */
export function originalsByKey(messages: readonly UniversalMessage[]): Map<string, unknown[]> {
  const map = new Map<string, unknown[]>()
  for (const m of messages) if (m.metadata.source && Array.isArray(m.metadata.original)) map.set(m.metadata.source.key, m.metadata.original)
  return map
}

/** Counts what a cross-tool write drops, as `notCarried` lines. */
export class NotCarried {
  private readonly counts = new Map<string, number>()

  add(what: string, n = 1): void {
    if (n > 0) this.counts.set(what, (this.counts.get(what) ?? 0) + n)
  }

  lines(extra: readonly string[] = []): string[] {
    return [...[...this.counts].map(([what, n]) => `${n} ${what}`), ...extra]
  }
}
