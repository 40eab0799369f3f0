/**
 * Reads Gemini CLI transcripts (research §2.3–2.6): `chats/session-*.json` (one ConversationRecord, up to
 * v0.38), `chats/session-*.jsonl` (v0.39+: a metadata line, message upserts by id, `$set`, `$rewindTo`) and
 * `/chat save` checkpoints `checkpoint-<tag>.json` (`{history, authType}`, or the older bare `Content[]`).
 * The messages are what Gemini CLI sends on resume: `info`/`error`/`warning` notices, slash commands and the
 * hidden context turns are left out (kept in `original`), tool results duplicated by v0.44+ are read once.
 */
import {basename, dirname} from 'node:path'

import createDebug from 'debug'

import {BadInputError} from '../errors.js'
import type {UniversalImageRef, UniversalReasoning, UniversalSource} from '../schemas/index.js'
import {isRecord} from '../schemas/plain-fields.js'
import {readTranscriptFile} from './files.js'
import {stripInjected} from './injected.js'
import {geminiProjectRootOf} from './gemini-paths.js'
import {toolFromProvider} from './tools.js'
import {
  type Draft,
  imageRef,
  NO_REPLY_TEXT,
  parseLine,
  type SessionTranscript,
  splitJsonLines,
  TranscriptBuilder,
  validTimestamp,
} from './universal.js'

const debug = createDebug('jarvis:session')

type Rec = Record<string, unknown>

/** True for the hidden first turn(s) Gemini CLI puts in every chat history. */
export function isGeminiContextText(text: string): boolean {
  const t = text.trimStart()
  return t.startsWith('<session_context>') || t.startsWith('<hook_context>') || /^This is the Gemini CLI\. We are setting up the context for our chat\./.test(t)
}

/** A user text Gemini CLI does not send to the model on resume (slash commands, `?` help, context blocks). */
function isSkippedUserText(text: string): boolean {
  return text.startsWith('/') || text.startsWith('?') || isGeminiContextText(text)
}

/** `content` (a PartListUnion: string, Part, or an array of both) as parts, each with its JSON pointer below the record. */
function partsOf(content: unknown, base: string): Array<{part: Rec; at: string}> {
  if (typeof content === 'string') return [{part: {text: content}, at: base}]
  if (Array.isArray(content)) {
    return content.flatMap((item, index) => (typeof item === 'string' ? [{part: {text: item}, at: `${base}/${index}`}] : isRecord(item) ? [{part: item, at: `${base}/${index}`}] : []))
  }
  return isRecord(content) ? [{part: content, at: base}] : []
}

function mediaRef(part: Rec, at: string): UniversalImageRef | undefined {
  if (isRecord(part.inlineData) && typeof part.inlineData.data === 'string') {
    return imageRef(String(part.inlineData.mimeType ?? 'application/octet-stream'), part.inlineData.data, at)
  }
  if (isRecord(part.fileData) && typeof part.fileData.fileUri === 'string') {
    return {mediaType: String(part.fileData.mimeType ?? 'application/octet-stream'), uri: part.fileData.fileUri, at}
  }
  return undefined
}

/** A functionResponse's `response` as the universal output or error. */
function responseBody(response: unknown, failed: boolean): {output?: string; error?: string} {
  let text: string
  if (isRecord(response) && typeof response.error === 'string') return {error: response.error}
  if (isRecord(response) && typeof response.output === 'string') text = response.output
  else if (typeof response === 'string') text = response
  else text = response === undefined ? '' : JSON.stringify(response)
  return failed ? {error: text} : {output: text}
}

interface Seen {
  calls: Set<string>
  results: Set<string>
  /** universal tool name of each call id, for results that arrive in a later record */
  names: Map<string, string>
}

function toolUseDraft(name: string, args: unknown, id: string | undefined, timestamp: string | undefined, base: Draft['metadata'], seen: Seen): Draft {
  const mapped = toolFromProvider('gemini', name, args)
  if (id !== undefined) {
    seen.calls.add(id)
    seen.names.set(id, mapped.name)
  }
  return {
    role: 'assistant',
    type: 'tool_use',
    content: {tool_use: {tool_name: mapped.name, tool_input: mapped.input, ...(id !== undefined ? {tool_use_id: id} : {})}},
    timestamp,
    metadata: {...base, ...(mapped.name !== name ? {toolName: name} : {})},
  }
}

function resultDraft(id: string | undefined, body: {output?: string; error?: string}, timestamp: string | undefined, images: UniversalImageRef[], seen: Seen): Draft {
  if (id !== undefined) seen.results.add(id)
  const name = id !== undefined ? seen.names.get(id) : undefined
  return {
    role: 'user',
    type: 'tool_result',
    content: {tool_result: {...body, ...(id !== undefined ? {tool_use_id: id} : {}), ...(name !== undefined ? {tool_name: name} : {})}},
    timestamp,
    metadata: images.length > 0 ? {images} : {},
  }
}

/** Drafts of the user side: one text message (with its images) and the function responses not already read. */
function userDrafts(parts: Array<{part: Rec; at: string}>, timestamp: string | undefined, seen: Seen): Draft[] {
  const texts: string[] = []
  const images: UniversalImageRef[] = []
  const results: Draft[] = []
  for (const {part, at} of parts) {
    if (typeof part.text === 'string' && part.thought !== true) texts.push(part.text)
    const media = mediaRef(part, at)
    if (media) images.push(media)
    if (isRecord(part.functionResponse)) {
      const fr = part.functionResponse
      const id = typeof fr.id === 'string' ? fr.id : undefined
      if (id !== undefined && seen.results.has(id)) continue // v0.44+ records each response twice
      results.push(resultDraft(id, responseBody(fr.response, false), timestamp, [], seen))
    }
  }
  // Gemini CLI adds a hook's context to the person's message (`<hook_context>…</hook_context>`, before or after
  // the prompt): what is left without it is what the person typed; a message that was only context is none.
  const text = stripInjected(texts.join(''))
  const drafts: Draft[] = []
  if (!(texts.length > 0 && isSkippedUserText(text)) && (text !== '' || images.length > 0)) {
    drafts.push({role: 'user', type: 'message', content: {text}, timestamp, metadata: {kind: 'prompt', ...(images.length > 0 ? {images} : {})}})
  }
  return [...drafts, ...results]
}

/** Drafts of the model side from parts: texts, thoughts, function calls (checkpoints and modern records). */
function modelDrafts(parts: Array<{part: Rec; at: string}>, timestamp: string | undefined, base: Draft['metadata'], seen: Seen, reasoning: UniversalReasoning[]): Draft[] {
  const drafts: Draft[] = []
  const texts: string[] = []
  let callIndex = 0
  const flushText = () => {
    const text = texts.join('')
    texts.length = 0
    if (text !== '' && text !== NO_REPLY_TEXT) drafts.push({role: 'assistant', type: 'message', content: {text}, timestamp, metadata: {...base}})
  }
  for (const {part} of parts) {
    if (typeof part.text === 'string' && part.thought === true) {
      reasoning.push({text: part.text, ...(typeof part.thoughtSignature === 'string' ? {signed: true} : {})})
    } else if (typeof part.text === 'string') {
      // Gemini CLI merges the streamed text parts of a reply into one, so separate parts are separate texts.
      flushText()
      texts.push(part.text)
    } else if (isRecord(part.functionCall) && typeof part.functionCall.name === 'string') {
      flushText()
      const fc = part.functionCall
      const id = typeof fc.id === 'string' ? fc.id : `${String(base.responseId ?? 'call')}-${callIndex}`
      callIndex++
      if (typeof part.thoughtSignature === 'string') reasoning.push({text: '', signed: true})
      if (!seen.calls.has(id)) drafts.push(toolUseDraft(fc.name as string, fc.args, id, timestamp, base, seen))
    }
  }
  flushText()
  return drafts
}

/** Drafts of one session MessageRecord (`user` or `gemini`); notices make none. */
function recordDrafts(record: Rec, at: number, seen: Seen): Draft[] {
  const timestamp = typeof record.timestamp === 'string' ? record.timestamp : undefined
  if (record.type === 'user') return userDrafts(partsOf(record.content, `/${at}/content`), timestamp, seen)
  if (record.type !== 'gemini') return []
  const base: Draft['metadata'] = {...(typeof record.model === 'string' ? {model: record.model} : {}), responseId: String(record.id)}
  const reasoning: UniversalReasoning[] = []
  if (Array.isArray(record.thoughts)) {
    for (const thought of record.thoughts) {
      if (!isRecord(thought)) continue
      const description = typeof thought.description === 'string' ? thought.description : ''
      const subject = typeof thought.subject === 'string' && thought.subject !== '' ? thought.subject : undefined
      if (description !== '' || subject !== undefined) reasoning.push({text: description, ...(subject !== undefined ? {subject} : {})})
    }
  }
  const drafts = modelDrafts(partsOf(record.content, `/${at}/content`), timestamp, base, seen, reasoning)
  const results: Draft[] = []
  if (Array.isArray(record.toolCalls)) {
    record.toolCalls.forEach((call, ci) => {
      if (!isRecord(call) || typeof call.name !== 'string') return
      const id = typeof call.id === 'string' ? call.id : `${String(record.id)}-call-${ci}`
      const callTime = typeof call.timestamp === 'string' ? call.timestamp : timestamp
      if (!seen.calls.has(id)) drafts.push(toolUseDraft(call.name, call.args, id, timestamp, base, seen))
      if (call.result === undefined || call.result === null || seen.results.has(id)) return
      const failed = call.status === 'error' || call.status === 'cancelled'
      const images: UniversalImageRef[] = []
      let body: {output?: string; error?: string} = {}
      const texts: string[] = []
      for (const {part, at: pointer} of partsOf(call.result, `/${at}/toolCalls/${ci}/result`)) {
        if (isRecord(part.functionResponse)) body = responseBody(part.functionResponse.response, failed)
        else if (typeof part.text === 'string') texts.push(part.text)
        const media = mediaRef(part, pointer)
        if (media) images.push(media)
      }
      if (body.output === undefined && body.error === undefined) body = failed ? {error: texts.join('')} : {output: texts.join('')}
      results.push(resultDraft(id, body, callTime, images, seen))
    })
  }
  const all = [...drafts, ...results]
  if (all.length === 0 && reasoning.some((r) => r.text !== '')) all.push({role: 'assistant', type: 'message', content: {text: ''}, timestamp, metadata: {...base}})
  if (all.length > 0 && reasoning.length > 0) all[0].metadata.reasoning = reasoning
  return all
}

/** What a Gemini file holds once its lines are replayed. */
interface GeminiConversation {
  meta: Rec
  records: Array<{record: Rec; where: string}>
  format: UniversalSource['format']
}

/** The JSONL replay of `loadConversationRecord` (v0.39+): upserts keep their first position, `$set`, `$rewindTo`. */
function replayJsonl(text: string, path: string, warnings: string[]): GeminiConversation | undefined {
  const meta: Rec = {}
  const records = new Map<string, {record: Rec; where: string}>()
  let sawMetadata = false
  let understood = 0
  for (const line of splitJsonLines(text)) {
    const parsed = parseLine(line)
    if (!parsed.ok) {
      warnings.push(`${path}:${line.line}: ${parsed.reason}; skipped`)
      continue
    }
    const value = parsed.value
    const where = `${path}:${line.line}`
    if (!isRecord(value)) {
      warnings.push(`${where}: not a JSON object; skipped`)
      continue
    }
    if ('$rewindTo' in value) {
      understood++
      const target = value.$rewindTo
      if (typeof target === 'string' && records.has(target)) {
        let cut = false
        for (const id of [...records.keys()]) {
          if (id === target) cut = true
          if (cut) records.delete(id)
        }
      } else records.clear()
    } else if (isRecord(value.$set)) {
      understood++
      const {messages, ...rest} = value.$set
      Object.assign(meta, rest)
      if (Array.isArray(messages)) {
        records.clear()
        messages.forEach((m, i) => {
          if (isRecord(m) && typeof m.id === 'string') records.set(m.id, {record: m, where: `${where}: $set.messages[${i}]`})
        })
      }
    } else if (typeof value.id === 'string') {
      understood++
      records.set(value.id, {record: value, where})
    } else if (typeof value.sessionId === 'string' && typeof value.projectHash === 'string') {
      understood++
      sawMetadata = true
      const {messages, ...rest} = value
      Object.assign(meta, rest)
      if (Array.isArray(messages)) {
        messages.forEach((m, i) => {
          if (isRecord(m) && typeof m.id === 'string') records.set(m.id, {record: m, where: `${where}: messages[${i}]`})
        })
      }
    } else warnings.push(`${where}: not a Gemini CLI record (no id, $set, $rewindTo or sessionId); skipped`)
  }
  if (!sawMetadata && understood === 0) return undefined
  return {meta, records: [...records.values()], format: 'gemini-jsonl'}
}

function checkpointTag(path: string): string {
  const raw = basename(path).replace(/^checkpoint-/, '').replace(/\.json$/, '')
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}

/** True when `content` is the hidden context turn (or its "Got it" answer) a checkpoint starts with. */
function preambleLength(history: unknown[]): number {
  const textOfContent = (c: unknown) =>
    isRecord(c) && Array.isArray(c.parts) ? c.parts.map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : '')).join('') : ''
  const first = history[0]
  if (!isRecord(first) || first.role !== 'user' || !isGeminiContextText(textOfContent(first))) return 0
  const second = history[1]
  return isRecord(second) && second.role === 'model' && /^Got it\. Thanks for the context!?\s*$/.test(textOfContent(second)) ? 2 : 1
}

export interface GeminiParse {
  transcript: SessionTranscript
  kind?: string
}

/** Parses the text of a Gemini session file or checkpoint; `path` names it in messages and gives a checkpoint its tag. */
export function parseGeminiText(text: string, path: string, fallbackTimestamp = new Date(0).toISOString()): GeminiParse {
  const warnings: string[] = []
  let whole: unknown
  let wholeError: string | undefined
  try {
    whole = JSON.parse(text.charCodeAt(0) === 0xfe_ff ? text.slice(1) : text)
  } catch (error) {
    wholeError = error instanceof Error ? error.message : String(error)
  }
  const seen: Seen = {calls: new Set(), results: new Set(), names: new Map()}

  // A `/chat save` checkpoint: `{history, authType?}` (v0.16+) or a bare Content[] (before).
  if (Array.isArray(whole) || (isRecord(whole) && Array.isArray(whole.history))) {
    const history = (Array.isArray(whole) ? whole : (whole as Rec).history) as unknown[]
    const tag = checkpointTag(path)
    const builder = new TranscriptBuilder('gemini', tag, 'gemini-checkpoint', fallbackTimestamp)
    const skip = preambleLength(history)
    history.forEach((content, index) => {
      if (index < skip) return builder.keep(content)
      if (!isRecord(content) || !Array.isArray(content.parts)) {
        warnings.push(`${path}: history[${index}]: not a Content ({role, parts}); skipped`)
        return
      }
      const at = builder.pendingCount
      const parts = partsOf(content.parts, `/${at}/parts`)
      const key = `${tag}#${index}`
      let drafts: Draft[]
      if (content.role === 'model') {
        const reasoning: UniversalReasoning[] = []
        drafts = modelDrafts(parts, undefined, {responseId: key}, seen, reasoning)
        if (drafts.length === 0 && reasoning.some((r) => r.text !== '')) drafts.push({role: 'assistant', type: 'message', content: {text: ''}, metadata: {responseId: key}})
        if (drafts.length > 0 && reasoning.length > 0) drafts[0].metadata.reasoning = reasoning
      } else drafts = userDrafts(parts, undefined, seen)
      builder.add(key, [content], drafts)
    })
    const messages = builder.finish()
    return {transcript: {provider: 'gemini', sessionId: tag, tag, path, projectRoot: '', messages, warnings, notCarried: []}}
  }

  let conversation: GeminiConversation | undefined
  if (isRecord(whole) && Array.isArray(whole.messages)) {
    const {messages, ...meta} = whole
    conversation = {
      meta,
      records: messages.flatMap((m, i) => (isRecord(m) ? [{record: m, where: `${path}: messages[${i}]`}] : [])),
      format: 'gemini-json',
    }
    messages.forEach((m, i) => {
      if (!isRecord(m)) warnings.push(`${path}: messages[${i}]: not a JSON object; skipped`)
    })
  } else if (whole === undefined || (isRecord(whole) && typeof whole.sessionId === 'string')) {
    conversation = replayJsonl(text, path, warnings)
  }
  if (!conversation) {
    const why = wholeError !== undefined ? `not JSON (${wholeError}) and no line is a Gemini CLI record` : 'no "messages", "history" or session metadata'
    throw new BadInputError(`${path} is not a Gemini CLI session or checkpoint: ${why}`, {path, warnings})
  }
  const {meta, records, format} = conversation
  const sessionId = typeof meta.sessionId === 'string' && meta.sessionId !== '' ? meta.sessionId : basename(path).replace(/\.jsonl?$/, '')
  const builder = new TranscriptBuilder('gemini', sessionId, format, validTimestamp(meta.startTime) ?? fallbackTimestamp)
  for (const {record, where} of records) {
    if (typeof record.id !== 'string' || typeof record.type !== 'string') {
      warnings.push(`${where}: a message without a string "id" and "type"; skipped`)
      continue
    }
    builder.add(record.id, [record], recordDrafts(record, builder.pendingCount, seen))
  }
  const messages = builder.finish()
  const transcript: SessionTranscript = {
    provider: 'gemini',
    sessionId,
    path,
    projectRoot: '',
    ...(typeof meta.summary === 'string' ? {title: meta.summary} : {}),
    ...(validTimestamp(meta.startTime) ? {startTime: meta.startTime as string} : {}),
    ...(validTimestamp(meta.lastUpdated) ? {lastUpdated: meta.lastUpdated as string} : {}),
    messages,
    warnings,
    notCarried: [],
  }
  debug('%s: %d records, %d messages, %d warnings', path, records.length, messages.length, warnings.length)
  return {transcript, ...(typeof meta.kind === 'string' ? {kind: meta.kind} : {})}
}

/** Reads a file and the `tmp/<project>` directory facts around it. */
export async function readGeminiFile(path: string): Promise<GeminiParse> {
  const {text, mtime} = await readTranscriptFile(path)
  const parsed = parseGeminiText(text, path, mtime)
  const projectDir = basename(dirname(path)) === 'chats' ? dirname(dirname(path)) : dirname(path)
  parsed.transcript.projectRoot = await geminiProjectRootOf(projectDir)
  return parsed
}

export async function readGeminiSession(path: string): Promise<SessionTranscript> {
  return (await readGeminiFile(path)).transcript
}
