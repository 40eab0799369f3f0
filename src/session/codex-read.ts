/**
 * Reads a Codex CLI rollout (research §3): one `{timestamp, type, payload}` line per item. The conversation is what
 * Codex sends its model on resume, the `response_item` lines: user and assistant messages, reasoning, tool calls and
 * their outputs. `session_meta`, `turn_context`, `event_msg` (UI copies of the same messages) and the context Codex
 * injects itself (environment, AGENTS.md, developer instructions) make no message and ride along in `original`.
 * A `compacted` line with its replacement history replaces what came before it, and a rollback drops the last turns,
 * as Codex does on resume.
 */
import {basename} from 'node:path'

import createDebug from 'debug'

import {BadInputError} from '../errors.js'
import type {UniversalImageRef, UniversalReasoning} from '../schemas/index.js'
import {isRecord} from '../schemas/plain-fields.js'
import {codexRolloutId} from './codex-paths.js'
import {readTranscriptFile} from './files.js'
import {stripInjected} from './injected.js'
import {toolFromProvider} from './tools.js'
import {
  dataUrlParts,
  type Draft,
  imageRef,
  parseLine,
  REASONING_PREFIX,
  type SessionTranscript,
  splitJsonLines,
  TranscriptBuilder,
  validTimestamp,
} from './universal.js'

const debug = createDebug('jarvis:session')

type Rec = Record<string, unknown>

/** Line types of a rollout; a line of another type is kept but makes no message. */
const ROLLOUT_TYPES = new Set(['session_meta', 'turn_context', 'response_item', 'event_msg', 'compacted', 'world_state', 'token_usage_record', 'inter_agent_communication'])
/** `payload.type` of the items a pre-envelope rollout wrote bare, one a line. */
const BARE_ITEMS = new Set(['message', 'reasoning', 'function_call', 'function_call_output', 'custom_tool_call', 'custom_tool_call_output', 'local_shell_call', 'web_search_call'])

/** A user message Codex CLI writes itself at the start of a thread or turn (never typed by the user). */
export function isCodexContextText(text: string): boolean {
  return (
    /^\s*<(environment_context|user_instructions|skills_instructions|permissions instructions|apps_instructions|collaboration_mode|personality_spec|user_shell_command|turn_aborted|subagent_notification|INSTRUCTIONS)\b/.test(text) ||
    /^\s*# AGENTS\.md instructions\b/.test(text)
  )
}

function imageOf(item: Rec, at: string): UniversalImageRef | undefined {
  if (item.type !== 'input_image' || typeof item.image_url !== 'string') return undefined
  const data = dataUrlParts(item.image_url)
  return data ? imageRef(data.mediaType, data.base64, at) : {mediaType: 'image/*', uri: item.image_url, at}
}

/** Texts and images of a message's `content` (or an output's content items), with pointers below `base`. */
function contentParts(content: unknown, base: string): {texts: string[]; images: UniversalImageRef[]} {
  if (typeof content === 'string') return {texts: [content], images: []}
  const texts: string[] = []
  const images: UniversalImageRef[] = []
  if (!Array.isArray(content)) return {texts, images}
  content.forEach((item, index) => {
    if (!isRecord(item)) return
    if (typeof item.text === 'string' && (item.type === 'input_text' || item.type === 'output_text' || item.type === 'text')) texts.push(item.text)
    const image = imageOf(item, `${base}/${index}`)
    if (image) images.push(image)
  })
  return {texts, images}
}

/** A tool output: a string, content items, or (newer builds) `{content, success}`. */
function outputBody(output: unknown, base: string): {body: {output?: string; error?: string}; images: UniversalImageRef[]} {
  if (isRecord(output) && ('content' in output || 'success' in output)) {
    const {texts, images} = contentParts(output.content, `${base}/content`)
    const text = texts.join('\n')
    return {body: output.success === false ? {error: text} : {output: text}, images}
  }
  if (typeof output === 'string' || Array.isArray(output)) {
    const {texts, images} = contentParts(output, base)
    return {body: {output: texts.join('\n')}, images}
  }
  return {body: {output: output === undefined || output === null ? '' : JSON.stringify(output)}, images: []}
}

function parseArguments(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw
  try {
    return JSON.parse(raw) as unknown
  } catch {
    return raw
  }
}

/** One rollout line that belongs to the conversation, or to the records around it. */
interface Unit {
  key: string
  records: unknown[]
  drafts: Draft[]
  /** A user prompt starts here (what a rollback counts). */
  turnStart: boolean
}

interface ItemContext {
  names: Map<string, string>
  reasoning: UniversalReasoning[]
}

/** Drafts of one response item; `at` points at the item inside the records of its unit. */
function itemDrafts(item: Rec, at: string, timestamp: string | undefined, ctx: ItemContext): {drafts: Draft[]; turnStart: boolean} {
  const none = {drafts: [], turnStart: false}
  const call = (name: string, input: unknown, id: string | undefined): Draft => {
    const mapped = toolFromProvider('codex', name, input)
    if (id !== undefined) ctx.names.set(id, mapped.name)
    return {
      role: 'assistant',
      type: 'tool_use',
      content: {tool_use: {tool_name: mapped.name, tool_input: mapped.input, ...(id !== undefined ? {tool_use_id: id} : {})}},
      timestamp,
      metadata: mapped.name !== name ? {toolName: name} : {},
    }
  }
  const callId = typeof item.call_id === 'string' && item.call_id !== '' ? item.call_id : typeof item.id === 'string' && item.id !== '' ? item.id : undefined
  switch (item.type) {
    case 'message': {
      const {texts, images} = contentParts(item.content, `${at}/content`)
      const text = texts.join('\n')
      if (item.role === 'user') {
        // Codex CLI puts a hook's context in a `developer` message (left out below); jarvis's own blocks in a user
        // message (pasted, or from an agent that prepends them) are taken out like Codex's own context blocks.
        const typed = stripInjected(text)
        if (isCodexContextText(text) || (typed === '' && images.length === 0)) return none
        return {drafts: [{role: 'user', type: 'message', content: {text: typed}, timestamp, metadata: {kind: 'prompt', ...(images.length > 0 ? {images} : {})}}], turnStart: true}
      }
      if (item.role !== 'assistant') return none
      if (text.startsWith(REASONING_PREFIX)) {
        ctx.reasoning.push({text: text.slice(REASONING_PREFIX.length)})
        return none
      }
      return text === '' ? none : {drafts: [{role: 'assistant', type: 'message', content: {text}, timestamp, metadata: {}}], turnStart: false}
    }
    case 'reasoning': {
      const readable = (list: unknown) => (Array.isArray(list) ? list.filter(isRecord).map((p) => (typeof p.text === 'string' ? p.text : '')).filter((t) => t !== '') : [])
      const content = readable(item.content)
      const text = (content.length > 0 ? content : readable(item.summary)).join('\n\n')
      const encrypted = typeof item.encrypted_content === 'string' && item.encrypted_content !== ''
      if (text !== '') ctx.reasoning.push({text, ...(encrypted ? {signed: true} : {})})
      else if (encrypted) ctx.reasoning.push({text: '', redacted: true})
      return none
    }
    case 'function_call':
      return typeof item.name === 'string' && item.name !== '' ? {drafts: [call(item.name, parseArguments(item.arguments), callId)], turnStart: false} : none
    case 'custom_tool_call':
      return typeof item.name === 'string' && item.name !== '' ? {drafts: [call(item.name, item.input, callId)], turnStart: false} : none
    case 'local_shell_call':
      return {drafts: [call('local_shell', item.action, callId)], turnStart: false}
    case 'function_call_output':
    case 'custom_tool_call_output': {
      const {body, images} = outputBody(item.output, `${at}/output`)
      const name = callId === undefined ? undefined : ctx.names.get(callId)
      return {
        drafts: [
          {
            role: 'user',
            type: 'tool_result',
            content: {tool_result: {...body, ...(callId !== undefined ? {tool_use_id: callId} : {}), ...(name !== undefined ? {tool_name: name} : {})}},
            timestamp,
            metadata: images.length > 0 ? {images} : {},
          },
        ],
        turnStart: false,
      }
    }
    default:
      return none
  }
}

export interface CodexRollout {
  transcript: SessionTranscript
  /** `session_meta.cwd` (or the latest `turn_context.cwd`). */
  cwd?: string
  /** `session_meta.source`: `cli`, `exec`, `vscode`, … */
  source?: unknown
  cliVersion?: string
  /** The latest timestamp of any line. */
  lastTimestamp?: string
}

/** Parses the text of a rollout; `path` names it in warnings and gives the thread id when the file does not. */
export function parseCodexRollout(text: string, path: string, fallbackTimestamp = new Date(0).toISOString()): CodexRollout {
  const warnings: string[] = []
  const lines: Array<{line: number; record: Rec; type: string; payload: Rec | undefined}> = []
  let unreadable = 0
  for (const line of splitJsonLines(text)) {
    const parsed = parseLine(line)
    if (!parsed.ok) {
      warnings.push(`${path}:${line.line}: ${parsed.reason}; skipped`)
      if (line.terminated) unreadable++
      continue
    }
    const value = parsed.value
    if (!isRecord(value)) {
      warnings.push(`${path}:${line.line}: not a JSON object; skipped`)
      unreadable++
      continue
    }
    if (typeof value.type === 'string' && isRecord(value.payload)) lines.push({line: line.line, record: value, type: value.type, payload: value.payload})
    else if (typeof value.type === 'string' && BARE_ITEMS.has(value.type)) lines.push({line: line.line, record: value, type: 'response_item', payload: value})
    else if (lines.length === 0 && typeof value.id === 'string' && typeof value.timestamp === 'string') lines.push({line: line.line, record: value, type: 'session_meta', payload: value})
    else if (typeof value.type === 'string' || value.record_type !== undefined) lines.push({line: line.line, record: value, type: String(value.type ?? 'state'), payload: undefined})
    else {
      warnings.push(`${path}:${line.line}: not a Codex rollout line (no "type"); skipped`)
      unreadable++
    }
  }
  const known = lines.filter((l) => ROLLOUT_TYPES.has(l.type)).length
  if (known === 0 && unreadable > 0) throw new BadInputError(`${path} is not a Codex CLI rollout (no line is a Codex rollout item)`, {path, warnings})

  const meta = lines.find((l) => l.type === 'session_meta')?.payload ?? {}
  const sessionId =
    typeof meta.id === 'string' && meta.id !== ''
      ? meta.id
      : typeof meta.session_id === 'string' && meta.session_id !== ''
        ? meta.session_id
        : (codexRolloutId(basename(path)) ?? basename(path).replace(/\.jsonl$/, ''))

  const units: Array<Unit | {keep: unknown[]}> = []
  const ctx: ItemContext = {names: new Map(), reasoning: []}
  let pendingReasoningAt: {key: string; timestamp?: string} | undefined
  const flushReasoning = () => {
    const items = ctx.reasoning.splice(0)
    const at = pendingReasoningAt
    pendingReasoningAt = undefined
    if (!at || !items.some((r) => r.text !== '')) return
    units.push({key: `${at.key}:reasoning`, records: [], drafts: [{role: 'assistant', type: 'message', content: {text: ''}, timestamp: at.timestamp, metadata: {reasoning: items}}], turnStart: false})
  }
  const addItem = (key: string, record: unknown, item: Rec, at: string, timestamp: string | undefined) => {
    const {drafts, turnStart} = itemDrafts(item, at, timestamp, ctx)
    if (item.type === 'reasoning' || (item.type === 'message' && item.role === 'assistant' && drafts.length === 0 && ctx.reasoning.length > 0)) pendingReasoningAt ??= {key, timestamp}
    if (drafts.length === 0) {
      units.push({keep: [record]})
      return
    }
    if (drafts[0].role === 'user') flushReasoning()
    else if (ctx.reasoning.length > 0) {
      drafts[0].metadata.reasoning = ctx.reasoning.splice(0)
      pendingReasoningAt = undefined
    }
    units.push({key, records: [record], drafts, turnStart})
  }

  for (const {line, record, type, payload} of lines) {
    const timestamp = typeof record.timestamp === 'string' ? record.timestamp : undefined
    const key = `${sessionId}:${line}`
    if (type === 'response_item' && payload) {
      addItem(key, record, payload, payload === record ? '/0' : '/0/payload', timestamp)
    } else if (type === 'compacted' && payload && Array.isArray(payload.replacement_history)) {
      // What Codex resumes from: the replacement history, then what follows.
      flushReasoning()
      const before = units.splice(0).flatMap((u) => ('keep' in u ? u.keep : u.records))
      units.push({keep: before})
      ctx.names.clear()
      payload.replacement_history.forEach((item, index) => {
        if (isRecord(item)) addItem(`${key}:${index}`, index === 0 ? record : {replacementOf: key, index}, item, `/0/payload/replacement_history/${index}`, timestamp)
      })
    } else if (type === 'event_msg' && payload?.type === 'thread_rolled_back' && typeof payload.num_turns === 'number' && payload.num_turns > 0) {
      flushReasoning()
      let dropped = 0
      let cut = units.length
      for (let i = units.length - 1; i >= 0 && dropped < payload.num_turns; i--) {
        const unit = units[i]
        if (!('keep' in unit) && unit.turnStart) {
          dropped++
          cut = i
        }
      }
      const removed = units.splice(cut).flatMap((u) => ('keep' in u ? u.keep : u.records))
      units.push({keep: [...removed, record]})
    } else units.push({keep: [record]})
  }
  flushReasoning()

  const builder = new TranscriptBuilder('codex', sessionId, 'codex-jsonl', validTimestamp(meta.timestamp) ?? fallbackTimestamp)
  for (const unit of units) {
    if ('keep' in unit) builder.keep(...unit.keep)
    else {
      // Image pointers were written for the unit's own first record; records waiting before it shift them.
      const shift = builder.pendingCount
      if (shift > 0) for (const draft of unit.drafts) for (const image of draft.metadata.images ?? []) if (image.at) image.at = image.at.replace(/^\/0/, `/${shift}`)
      builder.add(unit.key, unit.records, unit.drafts)
    }
  }
  const messages = builder.finish()

  let lastTimestamp: string | undefined
  let cwd = typeof meta.cwd === 'string' ? meta.cwd : undefined
  let title: string | undefined
  for (const {record, type, payload} of lines) {
    const ts = validTimestamp(record.timestamp)
    if (ts !== undefined && (lastTimestamp === undefined || Date.parse(ts) > Date.parse(lastTimestamp))) lastTimestamp = ts
    if (type === 'turn_context' && typeof payload?.cwd === 'string' && cwd === undefined) cwd = payload.cwd
    if (type === 'event_msg' && payload?.type === 'thread_name_updated' && typeof payload.thread_name === 'string') title = payload.thread_name
  }
  const transcript: SessionTranscript = {
    provider: 'codex',
    sessionId,
    path,
    projectRoot: cwd ?? '',
    ...(title !== undefined ? {title} : {}),
    ...(validTimestamp(meta.timestamp) ? {startTime: meta.timestamp as string} : messages.length > 0 ? {startTime: messages[0].timestamp} : {}),
    ...(lastTimestamp !== undefined ? {lastUpdated: lastTimestamp} : {}),
    messages,
    warnings,
    notCarried: [],
  }
  debug('%s: %d lines, %d messages, %d warnings', path, lines.length, messages.length, warnings.length)
  return {
    transcript,
    ...(cwd !== undefined ? {cwd} : {}),
    ...(meta.source !== undefined ? {source: meta.source} : {}),
    ...(typeof meta.cli_version === 'string' ? {cliVersion: meta.cli_version} : {}),
    ...(lastTimestamp !== undefined ? {lastTimestamp} : {}),
  }
}

/** Reads a rollout file and what an append needs (its text). */
export async function readCodexRollout(path: string): Promise<CodexRollout & {text: string}> {
  const {text, mtime} = await readTranscriptFile(path)
  return {...parseCodexRollout(text, path, mtime), text}
}

export async function readCodexSession(path: string): Promise<SessionTranscript> {
  return (await readCodexRollout(path)).transcript
}
