/**
 * Writes universal messages as a Codex CLI rollout that `codex resume <id>` lists and `codex exec resume <id>`
 * continues (research §3): a `session_meta` line (source `cli`, so the resume picker shows it), then per message
 * the `response_item` Codex sends its model on resume — user and assistant messages, `function_call` and
 * `function_call_output` paired by `call_id` — with the `event_msg` copies (`user_message`, `agent_message`) its
 * picker reads for the preview. Timestamps strictly increase. Reasoning from elsewhere becomes an assistant text that
 * starts with REASONING_PREFIX: Codex's own reasoning items need encrypted content that only its model can make.
 */
import {stat} from 'node:fs/promises'

import {BadInputError} from '../errors.js'
import {writeFileAtomic} from '../store/index.js'
import {assertUnchangedSince} from './files.js'
import {codexRolloutPath, uuidV7} from './codex-paths.js'
import {readCodexRollout} from './codex-read.js'
import {toolToProvider} from './tools.js'
import {
  clockOf,
  imageData,
  IncreasingClock,
  INTERRUPTED_RESULT,
  NotCarried,
  originalsByKey,
  planTurns,
  REASONING_PREFIX,
  textOf,
  type UniversalMessage,
  type WriteClockOptions,
} from './universal.js'

/** `cli_version` written in `session_meta` when the caller does not name the installed Codex CLI version. */
export const CODEX_WRITER_VERSION = '0.169.0'

export interface CodexWriteOptions extends WriteClockOptions {
  env?: NodeJS.ProcessEnv
  /** The thread id (default a new UUID v7). */
  sessionId?: string
  cliVersion?: string
}

type Line = Record<string, unknown>

interface Rendered {
  lines: Line[]
  notCarried: string[]
}

function renderItems(messages: readonly UniversalMessage[], clock: IncreasingClock, now: () => Date, newId: () => string): Rendered {
  const notes = new NotCarried()
  const extra: string[] = []
  const originals = originalsByKey(messages)
  const lines: Line[] = []
  const at = (message: UniversalMessage | undefined) => clock.next(message?.timestamp, now())
  const item = (timestamp: string, payload: Line) => lines.push({timestamp, type: 'response_item', payload})
  const event = (timestamp: string, payload: Line) => lines.push({timestamp, type: 'event_msg', payload})
  const images = (message: UniversalMessage): Line[] =>
    (message.metadata.images ?? []).flatMap((ref): Line[] => {
      const data = imageData(ref, message.metadata.source ? originals.get(message.metadata.source.key) : message.metadata.original)
      if (data !== undefined && ref.mediaType.startsWith('image/')) return [{type: 'input_image', image_url: `data:${ref.mediaType};base64,${data}`}]
      if (data === undefined && ref.uri !== undefined && /^https?:/.test(ref.uri)) return [{type: 'input_image', image_url: ref.uri}]
      notes.add('image(s) or attachment(s) Codex cannot take carried as a text reference')
      return [{type: 'input_text', text: `[attachment ${ref.mediaType}${ref.sha256 ? ` sha256:${ref.sha256}` : ''} not carried]`}]
    })

  for (const turn of planTurns(messages, newId, extra)) {
    if (turn.role === 'user') {
      const text = textOf(turn.message)
      const content = [...(text === '' ? [] : [{type: 'input_text', text}]), ...images(turn.message)]
      if (content.length === 0) continue
      const timestamp = at(turn.message)
      item(timestamp, {type: 'message', role: 'user', content})
      event(timestamp, {type: 'user_message', message: text, images: [], local_images: [], text_elements: []})
      continue
    }
    const callOf = new Map(turn.calls.map((call) => [call.use, call]))
    for (const message of turn.messages) {
      for (const reasoning of message.metadata.reasoning ?? []) {
        if (reasoning.redacted) notes.add('redacted or encrypted reasoning dropped')
        else if (reasoning.signed) notes.add('reasoning signature(s) dropped (the reasoning is carried as text)')
        if (reasoning.redacted || reasoning.text === '') continue
        const heading = reasoning.subject ? `**${reasoning.subject}** ` : ''
        item(at(message), {type: 'message', role: 'assistant', content: [{type: 'output_text', text: `${REASONING_PREFIX}${heading}${reasoning.text}`}]})
        if (message.metadata.provider !== 'codex') notes.add('reasoning block(s) carried as text')
      }
      const call = callOf.get(message)
      if (call) {
        const use = message.content.tool_use!
        const mapped = toolToProvider('codex', use.tool_name, use.tool_input)
        // A raw string input is how Codex records its freeform tools (apply_patch): give it back that way.
        if (typeof mapped.input === 'string') item(at(message), {type: 'custom_tool_call', status: 'completed', call_id: call.id, name: mapped.name, input: mapped.input})
        else item(at(message), {type: 'function_call', name: mapped.name, arguments: JSON.stringify(mapped.input ?? {}), call_id: call.id})
      } else if (textOf(message) !== '') {
        const timestamp = at(message)
        item(timestamp, {type: 'message', role: 'assistant', content: [{type: 'output_text', text: textOf(message)}]})
        event(timestamp, {type: 'agent_message', message: textOf(message)})
      }
    }
    const ordered = [...turn.results.map((result) => turn.calls.find((c) => c.result === result)!), ...turn.calls.filter((c) => !c.result)]
    if (ordered.some((c) => !c.result)) notes.add('tool call(s) without a result answered as interrupted')
    for (const call of ordered) {
      const body = call.result?.content.tool_result ?? {error: INTERRUPTED_RESULT}
      const failed = body.error !== undefined
      if (failed && call.result) notes.add('tool error flag(s) dropped (Codex records an output only; the error text is carried)')
      const text = failed ? [body.output, body.error].filter((t) => typeof t === 'string' && t !== '').join('\n') : String(body.output ?? '')
      const media = call.result ? images(call.result) : []
      const output = media.length > 0 ? [...(text === '' ? [] : [{type: 'input_text', text}]), ...media] : text
      const custom = typeof toolToProvider('codex', call.use.content.tool_use!.tool_name, call.use.content.tool_use!.tool_input).input === 'string'
      item(at(call.result ?? call.use), {type: custom ? 'custom_tool_call_output' : 'function_call_output', call_id: call.id, output})
    }
  }
  return {lines, notCarried: notes.lines(extra)}
}

const toText = (lines: readonly Line[]) => lines.map((line) => `${JSON.stringify(line)}\n`).join('')

/** The text of a new rollout holding `messages` (what writeCodexSession writes). */
export function toCodexRolloutJsonl(
  projectRoot: string,
  messages: readonly UniversalMessage[],
  options: Omit<CodexWriteOptions, 'env'> & {sessionId: string},
): {text: string; notCarried: string[]; written: number} {
  const {now, newId} = clockOf(options)
  const clock = new IncreasingClock()
  const started = clock.next(undefined, now())
  const meta: Line = {
    timestamp: started,
    type: 'session_meta',
    payload: {id: options.sessionId, timestamp: started, cwd: projectRoot, originator: 'jarvis', cli_version: options.cliVersion ?? CODEX_WRITER_VERSION, source: 'cli'},
  }
  // Carried messages keep their own times, but never before the thread starts.
  const rendered = renderItems(messages, clock, now, newId)
  return {text: toText([meta, ...rendered.lines]), notCarried: rendered.notCarried, written: rendered.lines.length}
}

/** A new rollout of `projectRoot` under `$CODEX_HOME/sessions/<today>/`, which `codex exec resume <sessionId>` continues. */
export async function writeCodexSession(
  projectRoot: string,
  messages: UniversalMessage[],
  options: CodexWriteOptions = {},
): Promise<{sessionId: string; path: string; notCarried: string[]}> {
  const {now} = clockOf(options)
  const startedAt = now()
  const sessionId = options.sessionId ?? uuidV7(startedAt)
  const path = codexRolloutPath(sessionId, startedAt, options.env)
  const {text, notCarried, written} = toCodexRolloutJsonl(projectRoot, messages, {...options, now: () => startedAt, sessionId})
  if (written === 0) throw new BadInputError(`nothing to write to ${path}: no message has text, a tool call or a result`, {path})
  await writeFileAtomic(path, text)
  return {sessionId, path, notCarried}
}

/**
 * Appends `messages` to an existing rollout, with timestamps after every line in it. The whole file is rewritten
 * atomically (old bytes + new lines) unless it changed while jarvis read it (then nothing is written).
 */
export async function appendCodexSession(path: string, messages: UniversalMessage[], options: WriteClockOptions = {}): Promise<{notCarried: string[]}> {
  const before = await stat(path)
  const rollout = await readCodexRollout(path)
  if (messages.length === 0) return {notCarried: []}
  const {now, newId} = clockOf(options)
  const rendered = renderItems(messages, new IncreasingClock(rollout.lastTimestamp), now, newId)
  if (rendered.lines.length === 0) return {notCarried: rendered.notCarried}
  let text = rollout.text
  if (text !== '' && !text.endsWith('\n')) text += '\n'
  text += toText(rendered.lines)
  await assertUnchangedSince(path, before, 'Codex CLI')
  await writeFileAtomic(path, text)
  return {notCarried: rendered.notCarried}
}
