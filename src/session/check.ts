/**
 * The rules a written transcript must follow for its tool to resume it (research §1.8, §1.12, §2.3, §2.5,
 * §5.3), checked on the file text. Each function returns the problems found, [] when the file is fine.
 */
import {isRecord} from '../schemas/plain-fields.js'

type Rec = Record<string, unknown>

function parseLines(text: string, problems: string[]): Rec[] {
  const out: Rec[] = []
  if (text !== '' && !text.endsWith('\n')) problems.push('the file does not end with a newline')
  text.split('\n').forEach((line, index) => {
    if (line === '') return
    try {
      const value: unknown = JSON.parse(line)
      if (isRecord(value)) out.push(value)
      else problems.push(`line ${index + 1}: not a JSON object`)
    } catch {
      problems.push(`line ${index + 1}: not JSON`)
    }
  })
  return out
}

const CONVERSATION = new Set(['user', 'assistant', 'system', 'attachment', 'progress'])

function blocks(entry: Rec): Rec[] {
  const content = isRecord(entry.message) ? entry.message.content : undefined
  return Array.isArray(content) ? content.filter(isRecord) : []
}

/**
 * A Claude session file: every entry's `parentUuid` is the entry before it (a compaction boundary may have
 * null), unique uuids, `sessionId` = the file's id, strictly increasing timestamps, no sidechain or `sdk-*`
 * entry, thinking only with a signature, every `tool_use` answered right after its response and every
 * `tool_result` answering the response before it, and a closing `last-prompt` naming the last entry.
 */
export function claudeSessionProblems(text: string, sessionId: string): string[] {
  const problems: string[] = []
  const lines = parseLines(text, problems)
  const entries = lines.filter((l) => typeof l.type === 'string' && CONVERSATION.has(l.type))
  const uuids = new Set<string>()
  let previous: Rec | undefined
  let lastTime = Number.NEGATIVE_INFINITY
  for (const entry of entries) {
    const uuid = String(entry.uuid)
    if (typeof entry.uuid !== 'string' || uuids.has(uuid)) problems.push(`entry ${uuid}: missing or repeated uuid`)
    uuids.add(uuid)
    const boundary = entry.type === 'system' && entry.subtype === 'compact_boundary' && entry.parentUuid === null
    const wanted = previous === undefined ? null : previous.uuid
    if (!boundary && entry.parentUuid !== wanted) problems.push(`entry ${uuid}: parentUuid ${String(entry.parentUuid)} is not the entry before it (${String(wanted)})`)
    if (boundary && previous !== undefined && entry.logicalParentUuid !== previous.uuid) problems.push(`entry ${uuid}: compaction boundary not linked to the entry before it`)
    if (entry.sessionId !== sessionId) problems.push(`entry ${uuid}: sessionId ${String(entry.sessionId)} is not the file's ${sessionId}`)
    if (entry.isSidechain !== false) problems.push(`entry ${uuid}: isSidechain is not false`)
    if (typeof entry.entrypoint === 'string' && entry.entrypoint.startsWith('sdk-')) problems.push(`entry ${uuid}: entrypoint ${entry.entrypoint} hides it from the picker`)
    const time = typeof entry.timestamp === 'string' ? Date.parse(entry.timestamp) : Number.NaN
    if (!(time > lastTime)) problems.push(`entry ${uuid}: timestamp ${String(entry.timestamp)} is not after the one before`)
    if (!Number.isNaN(time)) lastTime = time
    for (const block of blocks(entry)) {
      if (block.type === 'thinking' && (typeof block.signature !== 'string' || block.signature === '')) problems.push(`entry ${uuid}: a thinking block without a signature`)
    }
    previous = entry
  }
  // Tool pairing over the user/assistant messages, the way the API sees them after merging blocks of one response.
  const turns: Array<{role: string; id?: unknown; entries: Rec[]}> = []
  for (const entry of entries) {
    if (entry.type !== 'user' && entry.type !== 'assistant') continue
    const id = entry.type === 'assistant' && isRecord(entry.message) ? entry.message.id : undefined
    const last = turns.at(-1)
    if (last && last.role === entry.type && (entry.type === 'user' || last.id === id)) last.entries.push(entry)
    else turns.push({role: String(entry.type), id, entries: [entry]})
  }
  turns.forEach((turn, index) => {
    if (turn.role !== 'assistant') return
    const calls = turn.entries.flatMap(blocks).filter((b) => b.type === 'tool_use').map((b) => String(b.id))
    const next = turns[index + 1]
    const answered = new Set(next?.role === 'user' ? next.entries.flatMap(blocks).filter((b) => b.type === 'tool_result').map((b) => String(b.tool_use_id)) : [])
    for (const call of calls) if (!answered.has(call)) problems.push(`tool_use ${call} has no tool_result right after its response`)
  })
  turns.forEach((turn, index) => {
    if (turn.role !== 'user') return
    const previousTurn = turns[index - 1]
    const calls = new Set(previousTurn?.role === 'assistant' ? previousTurn.entries.flatMap(blocks).filter((b) => b.type === 'tool_use').map((b) => String(b.id)) : [])
    for (const result of turn.entries.flatMap(blocks).filter((b) => b.type === 'tool_result')) {
      if (!calls.has(String(result.tool_use_id))) problems.push(`tool_result ${String(result.tool_use_id)} answers no tool_use of the response before it`)
    }
  })
  const closing = lines.at(-1)
  if (!closing || closing.type !== 'last-prompt') problems.push('the file does not end with a last-prompt line')
  else if (closing.leafUuid !== previous?.uuid) problems.push(`last-prompt names ${String(closing.leafUuid)}, not the last entry ${String(previous?.uuid)}`)
  else if (closing.sessionId !== sessionId) problems.push('last-prompt has another sessionId')
  return problems
}

function partsText(parts: unknown[]): string {
  return parts.map((p) => (isRecord(p) && typeof p.text === 'string' && p.thought !== true ? p.text : '')).join('')
}

/**
 * A `/chat save` checkpoint: `{history}` of `{role: user|model, parts: […]}`, the hidden context turn first,
 * every functionCall answered in the next (user) content and every functionResponse answering the content
 * before it, ending on a model text.
 */
export function geminiCheckpointProblems(text: string): string[] {
  const problems: string[] = []
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return ['not JSON']
  }
  if (!isRecord(value) || !Array.isArray(value.history)) return ['no "history" array']
  const history = value.history
  history.forEach((content, index) => {
    if (!isRecord(content) || (content.role !== 'user' && content.role !== 'model') || !Array.isArray(content.parts) || content.parts.length === 0) {
      problems.push(`history[${index}]: not a {role: user|model, parts: [...]} content`)
    }
  })
  if (problems.length > 0) return problems
  const contents = history as Array<{role: string; parts: Rec[]}>
  if (!/context for our chat/.test(partsText(contents[0]?.parts ?? []))) problems.push('history[0] is not the hidden context turn')
  contents.forEach((content, index) => {
    const calls = content.parts.filter((p) => isRecord(p.functionCall)).map((p) => (p.functionCall as Rec).id)
    if (calls.length > 0) {
      const next = contents[index + 1]
      const answered = new Set(next?.role === 'user' ? next.parts.filter((p) => isRecord(p.functionResponse)).map((p) => (p.functionResponse as Rec).id) : [])
      for (const id of calls) if (!answered.has(id)) problems.push(`history[${index}]: functionCall ${String(id)} has no functionResponse in the next content`)
      if (content.role !== 'model') problems.push(`history[${index}]: a functionCall outside a model content`)
    }
    const responses = content.parts.filter((p) => isRecord(p.functionResponse)).map((p) => (p.functionResponse as Rec).id)
    if (responses.length > 0) {
      const before = contents[index - 1]
      const called = new Set(before?.role === 'model' ? before.parts.filter((p) => isRecord(p.functionCall)).map((p) => (p.functionCall as Rec).id) : [])
      for (const id of responses) if (!called.has(id)) problems.push(`history[${index}]: functionResponse ${String(id)} answers no functionCall of the content before it`)
    }
  })
  const last = contents.at(-1)
  if (!last || last.role !== 'model' || partsText(last.parts) === '') problems.push('the history does not end on a model text')
  return problems
}

/**
 * A Gemini session file (`.json` or `.jsonl`): metadata with string `sessionId` and `projectHash`, the file
 * name ending in `sessionId.slice(0, 8)`, unique message ids, resumable content, every tool call carrying
 * its result, no separate function-response message, ending on a `gemini` text.
 */
export function geminiSessionProblems(text: string, fileName: string): string[] {
  const problems: string[] = []
  let meta: Rec = {}
  let messages: Rec[] = []
  if (fileName.endsWith('.jsonl')) {
    const lines = parseLines(text, problems)
    meta = lines[0] ?? {}
    messages = lines.slice(1).filter((l) => typeof l.id === 'string')
  } else {
    try {
      const value: unknown = JSON.parse(text)
      if (isRecord(value)) {
        meta = value
        messages = Array.isArray(value.messages) ? value.messages.filter(isRecord) : []
      }
    } catch {
      return ['not JSON']
    }
  }
  if (typeof meta.sessionId !== 'string' || typeof meta.projectHash !== 'string') return ['the metadata lacks a string sessionId or projectHash']
  if (!fileName.replace(/\.jsonl?$/, '').endsWith(`-${meta.sessionId.slice(0, 8)}`)) problems.push(`file name ${fileName} does not end with the sessionId's first 8 characters`)
  const ids = new Set<string>()
  for (const m of messages) {
    if (ids.has(String(m.id))) problems.push(`message ${String(m.id)} appears twice`)
    ids.add(String(m.id))
    if (m.type === 'user' && Array.isArray(m.content) && m.content.some((p) => isRecord(p) && isRecord(p.functionResponse))) problems.push(`message ${String(m.id)}: a separate function-response message`)
    if (m.type === 'gemini' && Array.isArray(m.toolCalls)) {
      for (const call of m.toolCalls) if (!isRecord(call) || call.result === undefined || call.result === null) problems.push(`message ${String(m.id)}: a tool call without its result`)
    }
  }
  const userText = (m: Rec) => (typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? partsText(m.content) : '')
  const resumable = (m: Rec) =>
    (m.type === 'user' && userText(m) !== '' && !/^\s*(?:[/?]|<session_context>|<hook_context>)/.test(userText(m))) ||
    (m.type === 'gemini' && ((typeof m.content === 'string' && m.content !== '') || (Array.isArray(m.toolCalls) && m.toolCalls.length > 0) || (Array.isArray(m.thoughts) && m.thoughts.length > 0)))
  if (!messages.some(resumable)) problems.push('nothing Gemini CLI would resume (hasResumableContent)')
  const last = messages.at(-1)
  if (!last || last.type !== 'gemini' || typeof last.content !== 'string' || last.content === '') problems.push('the session does not end on a gemini text')
  return problems
}

/**
 * A Codex CLI rollout: every line `{timestamp, type, payload}`, a `session_meta` first naming the thread id and its
 * cwd with an interactive `source` (so the resume picker lists it), timestamps that never go back, every tool call
 * answered by an output with its `call_id` before the next user message, and a `user_message` event (the picker's
 * preview; a thread without one is hidden).
 */
export function codexRolloutProblems(text: string, threadId: string): string[] {
  const problems: string[] = []
  const lines = parseLines(text, problems)
  lines.forEach((line, index) => {
    if (typeof line.timestamp !== 'string' || typeof line.type !== 'string' || !isRecord(line.payload)) problems.push(`line ${index + 1}: not a {timestamp, type, payload} rollout line`)
  })
  const meta = lines[0]
  if (meta?.type !== 'session_meta' || !isRecord(meta.payload)) return [...problems, 'the first line is not session_meta']
  if (meta.payload.id !== threadId) problems.push(`session_meta.id ${String(meta.payload.id)} is not the thread id ${threadId}`)
  if (typeof meta.payload.cwd !== 'string' || meta.payload.cwd === '') problems.push('session_meta has no cwd')
  if (meta.payload.source !== 'cli' && meta.payload.source !== 'vscode') problems.push(`session_meta.source ${JSON.stringify(meta.payload.source)} is hidden from the resume picker`)
  let last = Number.NEGATIVE_INFINITY
  for (const line of lines) {
    const time = typeof line.timestamp === 'string' ? Date.parse(line.timestamp) : Number.NaN
    if (!(time >= last)) problems.push(`timestamp ${String(line.timestamp)} goes back`)
    if (!Number.isNaN(time)) last = time
  }
  const items = lines.filter((l) => l.type === 'response_item' && isRecord(l.payload)).map((l) => l.payload as Rec)
  const open = new Set<string>()
  const check = () => {
    for (const id of open) problems.push(`tool call ${id} has no output before the next user message`)
    open.clear()
  }
  for (const item of items) {
    if (item.type === 'message' && item.role === 'user') check()
    else if (item.type === 'function_call' || item.type === 'custom_tool_call' || item.type === 'local_shell_call') open.add(String(item.call_id))
    else if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') {
      if (!open.delete(String(item.call_id))) problems.push(`output ${String(item.call_id)} answers no open tool call`)
    }
  }
  check()
  if (!lines.some((l) => l.type === 'event_msg' && isRecord(l.payload) && l.payload.type === 'user_message')) problems.push('no user_message event (the resume picker hides the thread)')
  return problems
}
