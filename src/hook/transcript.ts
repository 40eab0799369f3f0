/**
 * The session transcript a recording hook is pointed at, reduced to what an episode needs: what was asked, what
 * the agent answered, which tools it called with which input. Claude Code and Gemini CLI transcripts go through
 * the session readers (src/session); a Codex rollout (`rollout-….jsonl`, `{timestamp, type, payload}` lines) is
 * read here, leniently: a line that does not parse is skipped.
 */
import {readFile} from 'node:fs/promises'

import type {UniversalMessage} from '../schemas/index.js'
import type {HookAgent} from './events.js'

export type DigestItem =
  | {kind: 'ask'; text: string; at?: string}
  | {kind: 'answer'; text: string; at?: string}
  | {kind: 'tool'; name: string; input: unknown; at?: string}

export interface TranscriptItems {
  items: DigestItem[]
  /** When the session started, if the transcript says. */
  startedAt?: string
  /** The session's working directory, if the transcript says (file paths are shown relative to it). */
  cwd?: string
}

/** Reads the transcript of `agent` at `path`. Throws (BadInputError and the like) when it cannot be read at all. */
export async function readTranscriptItems(agent: HookAgent, path: string): Promise<TranscriptItems> {
  if (agent === 'claude') {
    const {readClaudeSession} = await import('../session/claude-read.js')
    const transcript = await readClaudeSession(path, {history: 'full'})
    return {items: itemsOfMessages(transcript.messages), startedAt: transcript.startTime ?? transcript.messages[0]?.timestamp, cwd: transcript.projectRoot || undefined}
  }
  if (agent === 'gemini') {
    const {readGeminiSession} = await import('../session/gemini-read.js')
    const transcript = await readGeminiSession(path)
    return {items: itemsOfMessages(transcript.messages), startedAt: transcript.startTime ?? transcript.messages[0]?.timestamp, cwd: transcript.projectRoot || undefined}
  }
  if (agent === 'codex') return parseCodexRollout(await readFile(path, 'utf8'))
  throw new Error(`no reader for ${agent} transcripts`)
}

/** Universal messages (src/session) → digest items: typed prompts, assistant texts, tool calls. */
export function itemsOfMessages(messages: readonly UniversalMessage[]): DigestItem[] {
  const items: DigestItem[] = []
  for (const m of messages) {
    if (m.type === 'tool_use' && m.content.tool_use) {
      items.push({kind: 'tool', name: m.content.tool_use.tool_name, input: m.content.tool_use.tool_input, at: m.timestamp})
    } else if (m.type === 'message' && typeof m.content.text === 'string' && m.content.text.trim() !== '') {
      if (m.role === 'assistant') items.push({kind: 'answer', text: m.content.text, at: m.timestamp})
      else if (m.metadata.kind === undefined || m.metadata.kind === 'prompt') items.push({kind: 'ask', text: m.content.text, at: m.timestamp})
    }
  }
  return items
}

type Rec = Record<string, unknown>
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Text Codex puts in user messages that the user did not type. */
const CODEX_INJECTED = /^\s*(?:<environment_context>|<user_instructions>|<permissions|<user_shell_command>|<turn_aborted>|# AGENTS\.md instructions)/

function codexText(content: unknown): string {
  if (!Array.isArray(content)) return ''
  return content
    .filter((c): c is Rec => isRec(c) && (c.type === 'input_text' || c.type === 'output_text' || c.type === 'text') && typeof c.text === 'string')
    .map((c) => c.text as string)
    .join('\n')
}

/**
 * A Codex rollout: prompts from `event_msg` `user_message` (else from user `response_item` messages without
 * Codex's injected context), answers from assistant messages, tool calls from `function_call` (JSON-string
 * `arguments`) and `custom_tool_call` (raw `input`, e.g. an apply_patch).
 */
export function parseCodexRollout(text: string): TranscriptItems {
  const events: DigestItem[] = []
  const responses: DigestItem[] = []
  let startedAt: string | undefined
  let cwd: string | undefined
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    let record: unknown
    try {
      record = JSON.parse(line)
    } catch {
      continue
    }
    if (!isRec(record)) continue
    const at = typeof record.timestamp === 'string' ? record.timestamp : undefined
    const payload = isRec(record.payload) ? record.payload : record // legacy lines have no envelope
    const type = isRec(record.payload) ? record.type : 'response_item'
    if (type === 'session_meta') {
      startedAt ??= typeof payload.timestamp === 'string' ? payload.timestamp : at
      cwd ??= typeof payload.cwd === 'string' ? payload.cwd : undefined
    } else if (type === 'turn_context') {
      cwd ??= typeof payload.cwd === 'string' ? payload.cwd : undefined
    } else if (type === 'event_msg') {
      if (payload.type === 'user_message' && typeof payload.message === 'string') events.push({kind: 'ask', text: payload.message, at})
    } else if (type === 'response_item') {
      if (payload.type === 'message') {
        const body = codexText(payload.content)
        if (!body.trim()) continue
        if (payload.role === 'assistant') responses.push({kind: 'answer', text: body, at})
        else if (payload.role === 'user' && !CODEX_INJECTED.test(body)) responses.push({kind: 'ask', text: body, at})
      } else if (payload.type === 'function_call' && typeof payload.name === 'string') {
        let input: unknown = payload.arguments
        if (typeof input === 'string') {
          try {
            input = JSON.parse(input)
          } catch {
            // keep the raw string
          }
        }
        responses.push({kind: 'tool', name: payload.name, input, at})
      } else if (payload.type === 'custom_tool_call' && typeof payload.name === 'string') {
        responses.push({kind: 'tool', name: payload.name, input: payload.input, at})
      }
    }
  }
  const hasUserEvents = events.length > 0
  const items = hasUserEvents ? mergeByTime(events, responses.filter((i) => i.kind !== 'ask')) : responses
  return {items, startedAt, cwd}
}

/** Both lists are in file order; interleave them by position in time (stable for equal times). */
function mergeByTime(a: DigestItem[], b: DigestItem[]): DigestItem[] {
  const out: DigestItem[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && (a[i].at ?? '') <= (b[j].at ?? ''))) out.push(a[i++])
    else out.push(b[j++])
  }
  return out
}
