/**
 * Writes universal messages for Gemini CLI (research §5.3 "To Gemini"):
 * - a `/chat save` checkpoint `tmp/<project>/checkpoint-<tag>.json` that `/chat resume <tag>` opens: the API
 *   history `{history: Content[]}`, a model turn's function calls followed by one user turn holding their
 *   function responses (the only shape the API takes), ending on a model text reply. The same text is the
 *   `.nexus/gemini-backup/<tag>.json` of seed 002.
 * - a session file `tmp/<project>/chats/session-…json(l)` that `gemini --resume <id>` opens: tool calls and
 *   their results on one `gemini` message, no separate result messages, ending on a `gemini` text.
 * Records that came from the same format and are whole are written back verbatim. Thought signatures are never
 * invented: reasoning from elsewhere becomes thought text.
 */
import {readFile, stat} from 'node:fs/promises'
import {join} from 'node:path'

import {BadInputError} from '../errors.js'
import {writeFileAtomic} from '../store/index.js'
import {isRecord} from '../schemas/plain-fields.js'
import {assertUnchangedSince} from './files.js'
import {geminiProjectDirs, geminiProjectHash} from './gemini-paths.js'
import {isGeminiContextText, parseGeminiText} from './gemini-read.js'
import {toolToProvider} from './tools.js'
import {
  clockOf,
  imageData,
  INTERRUPTED_RESULT,
  NO_REPLY_TEXT,
  NotCarried,
  originalsByKey,
  type PlannedCall,
  planTurns,
  textOf,
  type Turn,
  type UniversalMessage,
  validTimestamp,
  wholeRecords,
  type WriteClockOptions,
} from './universal.js'

type Part = Record<string, unknown>
type Content = {role: 'user' | 'model'; parts: Part[]}

export interface GeminiWriteOptions extends WriteClockOptions {
  env?: NodeJS.ProcessEnv
  /** `authType` of the checkpoint; omitted by default, and Gemini CLI then resumes it under any auth type. */
  authType?: string
}

export interface GeminiSessionWriteOptions extends WriteClockOptions {
  env?: NodeJS.ProcessEnv
  sessionId?: string
  /** Written as `summary`: the name the session browser shows. */
  title?: string
  /** `json` (default: every version from v0.15 reads it; v0.39+ migrates it) or `jsonl` (v0.39+ only). */
  format?: 'json' | 'jsonl'
}

/** The hidden first two turns of a Gemini chat: Gemini CLI's `/chat resume` hides both from the screen. */
export function geminiPreamble(now: Date, projectRoot?: string): Content[] {
  const lines = [
    '<session_context>',
    'This is the Gemini CLI. We are setting up the context for our chat.',
    `Today's date is ${now.toISOString().slice(0, 10)}.`,
    ...(projectRoot ? [`I'm currently working in the directory: ${projectRoot}`] : []),
    'The conversation below was carried over from another tool by jarvis.',
    '</session_context>',
  ]
  return [
    {role: 'user', parts: [{text: lines.join('\n')}]},
    {role: 'model', parts: [{text: 'Got it. Thanks for the context!'}]},
  ]
}

interface Writer {
  notes: NotCarried
  extra: string[]
  originals: Map<string, unknown[]>
}

function mediaParts(message: UniversalMessage, w: Writer): Part[] {
  return (message.metadata.images ?? []).map((ref) => {
    const data = imageData(ref, message.metadata.source ? w.originals.get(message.metadata.source.key) : message.metadata.original)
    if (data !== undefined) return {inlineData: {mimeType: ref.mediaType, data}}
    if (ref.uri !== undefined) return {fileData: {mimeType: ref.mediaType, fileUri: ref.uri}}
    w.notes.add('image(s) without their bytes carried as a text reference')
    return {text: `[image ${ref.mediaType}${ref.sha256 ? ` sha256:${ref.sha256}` : ''} not carried]`}
  })
}

function reasoningNotes(messages: readonly UniversalMessage[], w: Writer): void {
  for (const m of messages) {
    for (const r of m.metadata.reasoning ?? []) {
      if (r.redacted) w.notes.add('redacted thinking block(s) dropped')
      else if (r.signed) w.notes.add('thinking signature(s) dropped (the reasoning is carried as text)')
      else if (m.metadata.provider === 'claude' && r.text !== '') w.notes.add('reasoning block(s) carried as thoughts')
    }
  }
}

function geminiCall(call: PlannedCall): {id: string; name: string; args: unknown} {
  const use = call.use.content.tool_use!
  const mapped = toolToProvider('gemini', use.tool_name, use.tool_input)
  return {id: call.id, name: mapped.name, args: isRecord(mapped.input) ? mapped.input : mapped.input === undefined ? {} : {input: mapped.input}}
}

function responseOf(result: UniversalMessage | undefined): {response: Record<string, string>; failed: boolean} {
  const body = result?.content.tool_result ?? {error: INTERRUPTED_RESULT}
  if (body.error !== undefined) return {response: {error: [body.output, body.error].filter((t) => typeof t === 'string' && t !== '').join('\n')}, failed: true}
  return {response: {output: String(body.output ?? '')}, failed: false}
}

function isNoReply(record: unknown): boolean {
  if (!isRecord(record)) return false
  if (record.type === 'gemini') return record.content === NO_REPLY_TEXT
  return record.role === 'model' && Array.isArray(record.parts) && record.parts.length === 1 && isRecord(record.parts[0]) && record.parts[0].text === NO_REPLY_TEXT
}

// ---- Checkpoints ---------------------------------------------------------------------------------------------

function checkpointContents(turns: readonly Turn[], w: Writer): Content[] {
  const history: Content[] = []
  for (const turn of turns) {
    const segment = turn.role === 'user' ? [turn.message] : [...turn.messages, ...turn.results]
    const records = wholeRecords(segment, 'gemini-checkpoint')
    if (records) {
      for (const record of records.flat()) {
        if (!isRecord(record) || (record.role !== 'user' && record.role !== 'model') || !Array.isArray(record.parts) || isNoReply(record)) continue
        const text = record.parts.map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : '')).join('')
        const preamble = (record.role === 'user' && isGeminiContextText(text)) || (record.role === 'model' && /^Got it\. Thanks for the context!?\s*$/.test(text))
        if (preamble && history.length > 1) continue
        history.push(record as Content)
      }
      if (turn.role === 'assistant' && turn.calls.some((c) => !c.result)) {
        w.notes.add('tool call(s) without a result answered as interrupted')
        history.push({role: 'user', parts: turn.calls.filter((c) => !c.result).map((c) => ({functionResponse: {id: c.id, name: geminiCall(c).name, response: responseOf(undefined).response}}))})
      }
      continue
    }
    if (turn.role === 'user') {
      const text = textOf(turn.message)
      const parts: Part[] = [...(text === '' ? [] : [{text}]), ...mediaParts(turn.message, w)]
      if (parts.length > 0) history.push({role: 'user', parts})
      continue
    }
    reasoningNotes(turn.messages, w)
    const callOf = new Map(turn.calls.map((c) => [c.use, c]))
    const parts: Part[] = []
    for (const message of turn.messages) {
      for (const r of message.metadata.reasoning ?? []) {
        if (!r.redacted && r.text !== '') parts.push({text: r.subject ? `**${r.subject}** ${r.text}` : r.text, thought: true})
      }
      if (message.type === 'tool_use') {
        const call = geminiCall(callOf.get(message)!)
        parts.push({functionCall: call})
      } else if (textOf(message) !== '') parts.push({text: textOf(message)})
    }
    if (parts.length > 0) history.push({role: 'model', parts})
    if (turn.calls.length > 0) {
      // In the order of the calls, as Gemini CLI records them (a session file cannot hold another order).
      const ordered = turn.calls
      if (ordered.some((c) => !c.result)) w.notes.add('tool call(s) without a result answered as interrupted')
      const responses: Part[] = []
      for (const call of ordered) {
        const {id, name} = geminiCall(call)
        responses.push({functionResponse: {id, name, response: responseOf(call.result).response}})
        if (call.result) responses.push(...mediaParts(call.result, w))
      }
      history.push({role: 'user', parts: responses})
    }
  }
  return history
}

/**
 * The text of a `/chat save` checkpoint holding `messages`: `{"history": […]}` (plus `authType` when given),
 * indented by two spaces as Gemini CLI writes it. Also the content of `.nexus/gemini-backup/<tag>.json`.
 */
export function toGeminiCheckpointJson(
  messages: readonly UniversalMessage[],
  options: Omit<GeminiWriteOptions, 'env'> & {projectRoot?: string} = {},
): {text: string; notCarried: string[]} {
  const {now, newId} = clockOf(options)
  const w: Writer = {notes: new NotCarried(), extra: [], originals: originalsByKey(messages)}
  const turns = planTurns(messages, newId, w.extra)
  const body = checkpointContents(turns, w)
  const history = body.length > 0 && body[0].role === 'user' && isGeminiContextText(String(body[0].parts[0]?.text ?? '')) ? body : [...geminiPreamble(now(), options.projectRoot), ...body]
  const last = history.at(-1)!
  if (last.role !== 'model' || !last.parts.some((p) => typeof p.text === 'string' && p.text !== '' && p.thought !== true)) {
    history.push({role: 'model', parts: [{text: NO_REPLY_TEXT}]})
    if (body.length > 0) w.extra.push('a closing model reply was added (Gemini needs the history to end on one)')
  }
  const checkpoint = {history, ...(options.authType !== undefined ? {authType: options.authType} : {})}
  return {text: JSON.stringify(checkpoint, null, 2), notCarried: w.notes.lines(w.extra)}
}

/** Writes `tmp/<project>/checkpoint-<encodeURIComponent(tag)>.json` atomically; `/chat resume <tag>` opens it. */
export async function writeGeminiCheckpoint(
  projectRoot: string,
  tag: string,
  messages: UniversalMessage[],
  options: GeminiWriteOptions = {},
): Promise<{path: string; notCarried: string[]}> {
  if (tag.trim() === '') throw new BadInputError('a Gemini checkpoint needs a non-empty tag', {tag})
  const [dir] = await geminiProjectDirs(projectRoot, options.env)
  const path = join(dir, `checkpoint-${encodeURIComponent(tag)}.json`)
  const {text, notCarried} = toGeminiCheckpointJson(messages, {...options, projectRoot})
  await writeFileAtomic(path, text)
  return {path, notCarried}
}

// ---- Session files ---------------------------------------------------------------------------------------------

function sessionRecords(turns: readonly Turn[], w: Writer, newId: () => string, now: () => Date, taken: ReadonlySet<string> = new Set()): Array<Record<string, unknown>> {
  const records: Array<Record<string, unknown>> = []
  // A record id already in the file would replace that message (Gemini upserts by id): never reuse one.
  const ids = new Set<string>(taken)
  const timestampOf = (m: UniversalMessage | undefined) => validTimestamp(m?.timestamp) ?? now().toISOString()
  for (const turn of turns) {
    const segment = turn.role === 'user' ? [turn.message] : [...turn.messages, ...turn.results]
    const whole = wholeRecords(segment, 'gemini-json', 'gemini-jsonl')
    const kept = whole?.flat().filter((r): r is Record<string, unknown> => isRecord(r) && typeof r.id === 'string' && typeof r.type === 'string' && !isNoReply(r))
    if (kept && kept.length > 0 && kept.every((r) => !ids.has(r.id as string)) && (turn.role === 'user' || turn.calls.every((c) => c.result))) {
      for (const r of kept) {
        ids.add(r.id as string)
        records.push(r)
      }
      continue
    }
    if (turn.role === 'user') {
      const text = textOf(turn.message)
      const content: Part[] = [...(text === '' ? [] : [{text}]), ...mediaParts(turn.message, w)]
      if (content.length === 0) continue
      const id = newId()
      ids.add(id)
      records.push({id, timestamp: timestampOf(turn.message), type: 'user', content})
      continue
    }
    reasoningNotes(turn.messages, w)
    if (turn.calls.some((c) => !c.result)) w.notes.add('tool call(s) without a result answered as interrupted')
    // One gemini record per text, its calls (and their results) on the record of the text before them.
    const groups: UniversalMessage[][] = []
    for (const message of turn.messages) {
      if (message.type === 'message' || groups.length === 0) groups.push([])
      groups.at(-1)!.push(message)
    }
    const callOf = new Map(turn.calls.map((c) => [c.use, c]))
    for (const group of groups) {
      const thoughts = group.flatMap((m) =>
        (m.metadata.reasoning ?? []).filter((r) => !r.redacted && r.text !== '').map((r) => ({subject: r.subject ?? '', description: r.text, timestamp: timestampOf(m)})),
      )
      const text = group.filter((m) => m.type === 'message').map(textOf).join('\n\n')
      const model = group.find((m) => typeof m.metadata.model === 'string')?.metadata.model
      const toolCalls = group.flatMap((m) => {
        const call = callOf.get(m)
        if (!call) return []
        const {id, name, args} = geminiCall(call)
        const {response, failed} = responseOf(call.result)
        const media = call.result ? mediaParts(call.result, w) : []
        return [{id, name, args, result: [{functionResponse: {id, name, response}}, ...media], status: failed ? 'error' : 'success', timestamp: timestampOf(call.result ?? call.use)}]
      })
      if (text === '' && thoughts.length === 0 && toolCalls.length === 0) continue
      const id = newId()
      ids.add(id)
      records.push({
        id,
        timestamp: timestampOf(group[0]),
        type: 'gemini',
        content: text,
        thoughts,
        tokens: null,
        ...(model !== undefined ? {model} : {}),
        ...(toolCalls.length > 0 ? {toolCalls} : {}),
      })
    }
  }
  return records
}

/** The file name Gemini CLI gives a session: `session-<UTC YYYY-MM-DDTHH-mm>-<sessionId[0:8]>.<ext>`. */
export function geminiSessionFileName(sessionId: string, startTime: Date, format: 'json' | 'jsonl'): string {
  const stamp = startTime.toISOString().slice(0, 16).replace(/:/g, '-')
  return `session-${stamp}-${sessionId.slice(0, 8).replace(/[^a-zA-Z0-9_-]/g, '_')}.${format}`
}

/** The message records of `messages`, ending on a `gemini` text (a closing reply is added when they do not). */
function geminiSessionRecords(
  messages: readonly UniversalMessage[],
  options: WriteClockOptions,
  taken: ReadonlySet<string> = new Set(),
): {records: Array<Record<string, unknown>>; notCarried: string[]} {
  const clock = clockOf(options)
  const {now} = clock
  const newId = () => {
    let id = clock.newId()
    while (taken.has(id)) id = clock.newId()
    return id
  }
  const w: Writer = {notes: new NotCarried(), extra: [], originals: originalsByKey(messages)}
  const records = sessionRecords(planTurns(messages, newId, w.extra), w, newId, now, taken)
  const last = records.at(-1)
  if (!last || last.type !== 'gemini' || typeof last.content !== 'string' || last.content === '') {
    records.push({id: newId(), timestamp: now().toISOString(), type: 'gemini', content: NO_REPLY_TEXT, thoughts: [], tokens: null})
    if (last) w.extra.push('a closing gemini reply was added (Gemini needs the session to end on one)')
  }
  return {records, notCarried: w.notes.lines(w.extra)}
}

/** The text of a Gemini session file holding `messages` (what writeGeminiSession writes). */
export function toGeminiSessionText(
  projectRoot: string,
  messages: readonly UniversalMessage[],
  options: Omit<GeminiSessionWriteOptions, 'env'> & {sessionId: string},
): {text: string; notCarried: string[]} {
  const {now} = clockOf(options)
  const {records, notCarried} = geminiSessionRecords(messages, options)
  const stamp = now().toISOString()
  const meta = {sessionId: options.sessionId, projectHash: geminiProjectHash(projectRoot), startTime: stamp, lastUpdated: stamp}
  const title = options.title !== undefined && options.title !== '' ? options.title : undefined
  const text =
    options.format === 'jsonl'
      ? `${[{...meta, kind: 'main'}, ...records, ...(title ? [{$set: {summary: title}}] : [])].map((r) => JSON.stringify(r)).join('\n')}\n`
      : JSON.stringify({...meta, messages: records, ...(title ? {summary: title} : {}), kind: 'main'}, null, 2)
  return {text, notCarried}
}

/**
 * Appends `messages` to an existing session file: to a `.jsonl` as new message lines and a `$set` of `lastUpdated`
 * (what Gemini CLI itself appends), to a `.json` inside its `messages`. The file is replaced atomically, and not at
 * all when it changed while jarvis read it (Gemini CLI may have it open).
 */
export async function appendGeminiSession(path: string, messages: UniversalMessage[], options: WriteClockOptions = {}): Promise<{notCarried: string[]}> {
  const before = await stat(path)
  const text = await readFile(path, 'utf8')
  if (messages.length === 0) return {notCarried: []}
  const {now} = clockOf(options)
  const existing = parseGeminiText(text, path).transcript.messages.flatMap((m) => m.metadata.original ?? [])
  const taken = new Set(existing.flatMap((r) => (isRecord(r) && typeof r.id === 'string' ? [r.id] : [])))
  const {records, notCarried} = geminiSessionRecords(messages, options, taken)
  const stamp = now().toISOString()
  let next: string
  if (path.endsWith('.jsonl')) {
    next = `${text}${text === '' || text.endsWith('\n') ? '' : '\n'}${[...records, {$set: {lastUpdated: stamp}}].map((r) => JSON.stringify(r)).join('\n')}\n`
  } else {
    const whole: unknown = JSON.parse(text)
    if (!isRecord(whole) || !Array.isArray(whole.messages)) throw new BadInputError(`${path} is not a Gemini CLI session file (no "messages")`, {path})
    next = JSON.stringify({...whole, messages: [...whole.messages, ...records], lastUpdated: stamp}, null, 2)
  }
  await assertUnchangedSince(path, before, 'Gemini CLI')
  await writeFileAtomic(path, next)
  return {notCarried}
}

/** A new session in the project's `chats/` that `gemini --resume <sessionId>` opens (startTime = now, so it is also `latest`). */
export async function writeGeminiSession(
  projectRoot: string,
  messages: UniversalMessage[],
  options: GeminiSessionWriteOptions = {},
): Promise<{sessionId: string; path: string; notCarried: string[]}> {
  const {now, newId} = clockOf(options)
  const sessionId = options.sessionId ?? newId()
  const format = options.format ?? 'json'
  const [dir] = await geminiProjectDirs(projectRoot, options.env)
  const startTime = now()
  const path = join(dir, 'chats', geminiSessionFileName(sessionId, startTime, format))
  const {text, notCarried} = toGeminiSessionText(projectRoot, messages, {...options, now: () => startTime, newId, sessionId, format})
  await writeFileAtomic(path, text)
  return {sessionId, path, notCarried}
}
