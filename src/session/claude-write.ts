/**
 * Writes universal messages as a Claude Code session that `claude --resume <id>` lists and opens (research §5.3
 * "To Claude"): one linear `parentUuid` chain, unique increasing timestamps, `entrypoint: "cli"`, one entry per
 * content block with the blocks of one response sharing `message.id`, every `tool_use` answered by a
 * `tool_result` right after its response, and a closing `last-prompt` naming the tail. Records that came from
 * Claude and are whole are written back verbatim (only `parentUuid`, `sessionId` or `timestamp` are changed when
 * the chain needs it). Reasoning from elsewhere becomes a text block: a thinking signature is never invented.
 */
import {access, stat} from 'node:fs/promises'
import {basename, join} from 'node:path'

import {BadInputError} from '../errors.js'
import {writeFileAtomic} from '../store/index.js'
import {isRecord} from '../schemas/plain-fields.js'
import {headOf} from '../schemas/shorten.js'
import {assertUnchangedSince} from './files.js'
import {claudeProjectDir} from './claude-paths.js'
import {CLAUDE_CONVERSATION_TYPES, readClaudeChain} from './claude-read.js'
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
  type Turn,
  type UniversalImageRef,
  type UniversalMessage,
  wholeRecords,
  type WriteClockOptions,
} from './universal.js'

/** `version` written on new entries when the caller does not name the installed Claude Code version. */
export const CLAUDE_WRITER_VERSION = '2.1.0'

export interface ClaudeWriteOptions extends WriteClockOptions {
  sessionId?: string
  /** Written as a `custom-title` line, so the picker shows it. */
  title?: string
  env?: NodeJS.ProcessEnv
  /** `version` on written entries (default CLAUDE_WRITER_VERSION). */
  version?: string
  gitBranch?: string
  /** Replace an existing file of that session id (default: refuse with BadInputError). */
  overwrite?: boolean
}

interface RenderContext {
  sessionId: string
  cwd: string
  version: string
  gitBranch: string
  parentUuid: string | null
  after?: string
  /** uuids already in the file: a verbatim record reusing one is written as a new entry instead. */
  taken: Set<string>
  now: () => Date
  newId: () => string
}

interface Rendered {
  lines: string[]
  leafUuid: string | null
  lastPrompt?: string
  notCarried: string[]
}

const CLAUDE_IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])
const TOOL_ID = /^[a-zA-Z0-9_-]+$/

/** `lastPrompt` as Claude Code writes it: newlines flattened, at most 200 characters plus `…`. */
export function lastPromptText(text: string): string {
  const flat = text.replace(/\s*\n\s*/g, ' ').trim()
  return flat.length > 200 ? `${headOf(flat, 200)}…` : flat
}

function render(messages: readonly UniversalMessage[], ctx: RenderContext): Rendered {
  const notes = new NotCarried()
  const extra: string[] = []
  const turns = planTurns(messages, ctx.newId, extra)
  const originals = originalsByKey(messages)
  const clock = new IncreasingClock(ctx.after)
  const out: Array<Record<string, unknown>> = []
  const emitted = new Set(ctx.taken)
  const callEntry = new Map<string, string>()
  const ids = new Map<string, string>()
  let prev = ctx.parentUuid
  let lastPrompt: string | undefined

  const toolId = (id: string): string => {
    let safe = ids.get(id)
    if (safe === undefined) {
      safe = TOOL_ID.test(id) ? id : id.replace(/[^a-zA-Z0-9_-]/g, '_') || `toolu_${ctx.newId()}`
      if (safe !== id) notes.add('tool call id(s) with characters Claude refuses were rewritten')
      ids.set(id, safe)
    }
    return safe
  }

  const push = (type: string, body: Record<string, unknown>, timestamp: string, after: Record<string, unknown> = {}): string => {
    const uuid = ctx.newId()
    out.push({
      parentUuid: prev,
      isSidechain: false,
      type,
      ...body,
      uuid,
      timestamp: clock.next(timestamp, ctx.now()),
      ...after,
      userType: 'external',
      entrypoint: 'cli',
      cwd: ctx.cwd,
      sessionId: ctx.sessionId,
      version: ctx.version,
      gitBranch: ctx.gitBranch,
    })
    emitted.add(uuid)
    prev = uuid
    return uuid
  }

  const imageBlocks = (message: UniversalMessage, refs: readonly UniversalImageRef[]): Array<Record<string, unknown>> =>
    refs.flatMap((ref): Array<Record<string, unknown>> => {
      const data = imageData(ref, message.metadata.source ? originals.get(message.metadata.source.key) : message.metadata.original)
      if (data === undefined) {
        notes.add('image(s) without their bytes carried as a text reference')
        return [{type: 'text', text: `[image ${ref.mediaType}${ref.uri ? ` ${ref.uri}` : ''}${ref.sha256 ? ` sha256:${ref.sha256}` : ''} not carried]`}]
      }
      if (CLAUDE_IMAGE_TYPES.has(ref.mediaType)) return [{type: 'image', source: {type: 'base64', media_type: ref.mediaType, data}}]
      if (ref.mediaType === 'application/pdf') return [{type: 'document', source: {type: 'base64', media_type: ref.mediaType, data}}]
      notes.add(`attachment(s) of a type Claude cannot take (${ref.mediaType}) carried as a text reference`)
      return [{type: 'text', text: `[attachment ${ref.mediaType} not carried]`}]
    })

  /** Writes the records back as they were; false when one of them cannot be (then the turn is written anew). */
  const verbatim = (records: unknown[][]): boolean => {
    const flat = records.flat().filter((r): r is Record<string, unknown> => isRecord(r) && typeof r.type === 'string' && CLAUDE_CONVERSATION_TYPES.has(r.type) && typeof r.uuid === 'string' && r.isSidechain !== true)
    if (flat.length === 0 || flat.some((r) => emitted.has(r.uuid as string))) return false
    for (const record of flat) {
      const copy: Record<string, unknown> = {...record}
      const boundary = record.type === 'system' && record.subtype === 'compact_boundary' && record.parentUuid === null
      if (!boundary && copy.parentUuid !== prev) copy.parentUuid = prev
      if (typeof copy.sessionId === 'string' && copy.sessionId !== ctx.sessionId) copy.sessionId = ctx.sessionId
      if (typeof copy.session_id === 'string' && copy.session_id !== ctx.sessionId) copy.session_id = ctx.sessionId
      if (typeof copy.entrypoint === 'string' && copy.entrypoint.startsWith('sdk-')) copy.entrypoint = 'cli' // the picker hides sdk-* sessions
      copy.timestamp = clock.accepts(record.timestamp) ? clock.take(record.timestamp as string) : clock.next(typeof record.timestamp === 'string' ? record.timestamp : undefined, ctx.now())
      out.push(copy)
      emitted.add(record.uuid as string)
      prev = record.uuid as string
      const content = isRecord(record.message) ? record.message.content : undefined
      if (record.type === 'assistant' && Array.isArray(content)) {
        for (const block of content) if (isRecord(block) && block.type === 'tool_use' && typeof block.id === 'string') callEntry.set(block.id, record.uuid as string)
      }
    }
    return true
  }

  const resultEntry = (callId: string, result: UniversalMessage | undefined, fallbackTime: string) => {
    const body = result?.content.tool_result ?? {error: INTERRUPTED_RESULT}
    const isError = body.error !== undefined
    const text = isError ? [body.output, body.error].filter((t) => typeof t === 'string' && t !== '').join('\n') : String(body.output ?? '')
    const images = result ? imageBlocks(result, result.metadata.images ?? []) : []
    const content = images.length > 0 ? [...(text === '' ? [] : [{type: 'text', text}]), ...images] : text
    const id = toolId(callId)
    const source = callEntry.get(id)
    push(
      'user',
      {message: {role: 'user', content: [{tool_use_id: id, type: 'tool_result', content, ...(isError ? {is_error: true} : {})}]}},
      result?.timestamp ?? fallbackTime,
      source ? {sourceToolAssistantUUID: source} : {},
    )
  }

  const writeUser = (turn: Extract<Turn, {role: 'user'}>) => {
    const message = turn.message
    const text = textOf(message)
    const kind = message.metadata.kind
    if (kind === undefined || kind === 'prompt') lastPrompt = text
    const records = wholeRecords([message], 'claude-jsonl')
    if (records && verbatim(records)) return
    const images = imageBlocks(message, message.metadata.images ?? [])
    if (text === '' && images.length === 0) return
    const content = images.length === 0 ? text : [...(text === '' ? [] : [{type: 'text', text}]), ...images]
    push('user', {message: {role: 'user', content}}, message.timestamp)
  }

  const writeAssistant = (turn: Extract<Turn, {role: 'assistant'}>) => {
    const records = wholeRecords([...turn.messages, ...turn.results], 'claude-jsonl')
    if (records && verbatim(records)) {
      for (const call of turn.calls) if (!call.result) resultEntry(call.id, undefined, call.use.timestamp)
      if (turn.calls.some((c) => !c.result)) notes.add('tool call(s) without a result answered as interrupted')
      return
    }
    const messageId = `msg_${ctx.newId().replaceAll('-', '')}`
    const requestId = `req_${ctx.newId().replaceAll('-', '')}`
    const first = out.length
    const block = (message: UniversalMessage, content: Record<string, unknown>) => {
      const model = typeof message.metadata.model === 'string' && message.metadata.model !== '' ? message.metadata.model : '<synthetic>'
      const body = {
        message: {
          id: messageId,
          type: 'message',
          role: 'assistant',
          model,
          content: [content],
          stop_reason: null,
          stop_sequence: null,
          usage: {input_tokens: 0, output_tokens: 0},
        },
      }
      return push('assistant', body, message.timestamp, {requestId})
    }
    const callOf = new Map(turn.calls.map((call) => [call.use, call]))
    for (const message of turn.messages) {
      for (const reasoning of message.metadata.reasoning ?? []) {
        if (reasoning.redacted) notes.add('redacted thinking block(s) dropped')
        else if (reasoning.signed) notes.add('thinking signature(s) dropped (the reasoning is carried as text)')
        if (reasoning.redacted || reasoning.text === '') continue
        const heading = reasoning.subject ? `**${reasoning.subject}** ` : ''
        block(message, {type: 'text', text: `${REASONING_PREFIX}${heading}${reasoning.text}`})
        if (message.metadata.provider !== 'claude') notes.add('reasoning block(s) carried as text')
      }
      if (message.type === 'tool_use') {
        const call = callOf.get(message)!
        const use = message.content.tool_use!
        let input = use.tool_input
        if (!isRecord(input)) {
          if (input !== undefined) notes.add('tool input(s) that were not JSON objects wrapped as {"input": …}')
          input = input === undefined ? {} : {input}
        }
        const uuid = block(message, {type: 'tool_use', id: toolId(call.id), name: use.tool_name, input})
        callEntry.set(toolId(call.id), uuid)
      } else if (textOf(message) !== '') {
        block(message, {type: 'text', text: textOf(message)})
      }
    }
    const blocks = out.slice(first)
    if (blocks.length > 0) {
      const last = blocks.at(-1)!.message as Record<string, unknown>
      last.stop_reason = turn.calls.length > 0 ? 'tool_use' : 'end_turn'
    }
    for (const result of turn.results) {
      const call = turn.calls.find((c) => c.result === result)!
      resultEntry(call.id, result, call.use.timestamp)
    }
    const missing = turn.calls.filter((c) => !c.result)
    for (const call of missing) resultEntry(call.id, undefined, call.use.timestamp)
    if (missing.length > 0) notes.add('tool call(s) without a result answered as interrupted')
  }

  for (const turn of turns) {
    if (turn.role === 'user') writeUser(turn)
    else writeAssistant(turn)
  }
  return {lines: out.map((entry) => JSON.stringify(entry)), leafUuid: prev, lastPrompt, notCarried: notes.lines(extra)}
}

function closingLines(rendered: Rendered, sessionId: string, lastPrompt: string | undefined, title?: string): string[] {
  const lines: string[] = []
  if (title !== undefined && title !== '') lines.push(JSON.stringify({type: 'custom-title', customTitle: title, sessionId}))
  if (rendered.leafUuid !== null) {
    lines.push(JSON.stringify({type: 'last-prompt', ...(lastPrompt !== undefined ? {lastPrompt: lastPromptText(lastPrompt)} : {}), leafUuid: rendered.leafUuid, sessionId}))
  }
  return lines
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path)
    return true
  } catch {
    return false
  }
}

/** The text of a new Claude session file for `messages` (what writeClaudeSession writes). */
export function toClaudeSessionJsonl(
  projectRoot: string,
  messages: readonly UniversalMessage[],
  options: Omit<ClaudeWriteOptions, 'env' | 'overwrite'> & {sessionId: string},
): {text: string; leafUuid: string | null; notCarried: string[]} {
  const {now, newId} = clockOf(options)
  const rendered = render(messages, {
    sessionId: options.sessionId,
    cwd: projectRoot,
    version: options.version ?? CLAUDE_WRITER_VERSION,
    gitBranch: options.gitBranch ?? '',
    parentUuid: null,
    taken: new Set(),
    now,
    newId,
  })
  const lines = [...rendered.lines, ...closingLines(rendered, options.sessionId, rendered.lastPrompt, options.title)]
  return {text: lines.length > 0 ? `${lines.join('\n')}\n` : '', leafUuid: rendered.leafUuid, notCarried: rendered.notCarried}
}

/**
 * A new session of `projectRoot` in `$CLAUDE_CONFIG_DIR/projects/<slug>/<sessionId>.jsonl`. Refuses (BadInputError)
 * when that file exists unless `overwrite`, and when no message has anything Claude can show.
 */
export async function writeClaudeSession(
  projectRoot: string,
  messages: UniversalMessage[],
  options: ClaudeWriteOptions = {},
): Promise<{sessionId: string; path: string; notCarried: string[]}> {
  const {newId} = clockOf(options)
  const sessionId = options.sessionId ?? newId()
  const path = join(claudeProjectDir(projectRoot, options.env), `${sessionId}.jsonl`)
  if (!options.overwrite && (await exists(path))) throw new BadInputError(`${path} exists; pick another session id or append to it`, {path})
  const {text, leafUuid, notCarried} = toClaudeSessionJsonl(projectRoot, messages, {...options, newId, sessionId})
  if (leafUuid === null) throw new BadInputError(`nothing to write to ${path}: no message has text, a tool call or a result`, {path})
  await writeFileAtomic(path, text)
  return {sessionId, path, notCarried}
}

/**
 * Appends `messages` to an existing Claude session, chained to its current leaf, with timestamps after every
 * timestamp in the file and a fresh `last-prompt`. The whole file is rewritten atomically (old bytes + new lines).
 * Only call it while no Claude Code process has the session open (research §1.9).
 */
export async function appendClaudeSession(path: string, messages: UniversalMessage[], options: WriteClockOptions = {}): Promise<{notCarried: string[]}> {
  const before = await stat(path)
  const chain = await readClaudeChain(path)
  if (messages.length === 0) return {notCarried: []}
  const {now, newId} = clockOf(options)
  const sessionId = basename(path).replace(/\.jsonl$/, '')
  const taken = chain.uuids
  const rendered = render(messages, {
    sessionId,
    cwd: chain.cwd ?? chain.transcript.projectRoot,
    version: chain.version ?? CLAUDE_WRITER_VERSION,
    gitBranch: chain.gitBranch ?? '',
    parentUuid: chain.leafUuid,
    after: chain.lastTimestamp,
    taken,
    now,
    newId,
  })
  if (rendered.lines.length === 0) return {notCarried: rendered.notCarried}
  let text = chain.text
  if (text !== '' && !text.endsWith('\n')) text += '\n'
  text += `${[...rendered.lines, ...closingLines(rendered, sessionId, rendered.lastPrompt ?? chain.lastPrompt)].join('\n')}\n`
  // The file is replaced whole (atomic); a line Claude Code appended since we read it would be lost, so
  // look again right before the rename and give up rather than overwrite it.
  await assertUnchangedSince(path, before, 'Claude Code')
  await writeFileAtomic(path, text)
  return {notCarried: rendered.notCarried}
}
