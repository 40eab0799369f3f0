/**
 * Reads a Claude Code transcript (`<sessionId>.jsonl`) the way Claude Code resumes it (research §1.8): pick the
 * leaf, walk `parentUuid` back to the root (or the last compaction), put back parallel tool results that hang
 * off the chain, leave sidechains and metadata lines out. Every entry on the chain is kept verbatim in
 * `metadata.original`; one universal message per content block.
 */
import {basename} from 'node:path'

import createDebug from 'debug'

import {BadInputError} from '../errors.js'
import type {UniversalImageRef, UniversalReasoning} from '../schemas/index.js'
import {isRecord} from '../schemas/plain-fields.js'
import {readTranscriptFile} from './files.js'
import {stripInjected} from './injected.js'
import {
  type Draft,
  imageRef,
  type JsonLine,
  parseLine,
  REASONING_PREFIX,
  type SessionTranscript,
  splitJsonLines,
  TranscriptBuilder,
  validTimestamp,
} from './universal.js'

const debug = createDebug('jarvis:session')

type Entry = Record<string, unknown> & {type: string}

/** Entries of the conversation tree: they carry `uuid` and `parentUuid`. */
export const CLAUDE_CONVERSATION_TYPES = new Set(['user', 'assistant', 'system', 'attachment', 'progress'])
/** Metadata lines a Claude transcript is known to hold (unknown ones are tolerated, but do not make a file a transcript). */
const METADATA_TYPES = new Set([
  'summary',
  'ai-title',
  'custom-title',
  'agent-name',
  'last-prompt',
  'mode',
  'permission-mode',
  'queue-operation',
  'file-history-snapshot',
  'file-history-delta',
  'frame-link',
  'cost-state',
  'bridge-session',
  'atis-latch',
  'pr-link',
  'agent-setting',
])

export interface ClaudeReadOptions {
  /** `resume` (default): what Claude Code sends on resume, from the last compaction on. `full`: the history before it too. */
  history?: 'resume' | 'full'
}

/** What the writer needs besides the transcript to append to a session. */
export interface ClaudeChain {
  transcript: SessionTranscript
  /** uuid of the last entry on the active chain; null for a session without entries. */
  leafUuid: string | null
  /** The latest timestamp anywhere in the file. */
  lastTimestamp?: string
  cwd?: string
  version?: string
  gitBranch?: string
  lastPrompt?: string
  /** Every entry uuid in the file, on the chain or not. */
  uuids: Set<string>
}

function isConversation(entry: Entry): boolean {
  return CLAUDE_CONVERSATION_TYPES.has(entry.type) && typeof entry.uuid === 'string'
}

function contentOf(entry: Entry): unknown {
  return isRecord(entry.message) ? entry.message.content : undefined
}

function toolResultIds(entry: Entry): string[] {
  const content = contentOf(entry)
  if (entry.type !== 'user' || !Array.isArray(content)) return []
  return content.flatMap((block) => (isRecord(block) && block.type === 'tool_result' && typeof block.tool_use_id === 'string' ? [block.tool_use_id] : []))
}

function toolUseIds(entry: Entry): string[] {
  const content = contentOf(entry)
  if (entry.type !== 'assistant' || !Array.isArray(content)) return []
  return content.flatMap((block) => (isRecord(block) && block.type === 'tool_use' && typeof block.id === 'string' ? [block.id] : []))
}

function responseIdOf(entry: Entry): string | undefined {
  return isRecord(entry.message) && typeof entry.message.id === 'string' ? entry.message.id : undefined
}

/** The text of a tool_result's `content` (a string or text/image blocks) and the images in it. */
function resultBody(content: unknown, pointer: string): {text: string; images: UniversalImageRef[]} {
  if (typeof content === 'string') return {text: content, images: []}
  if (!Array.isArray(content)) return {text: '', images: []}
  const texts: string[] = []
  const images: UniversalImageRef[] = []
  content.forEach((item, index) => {
    if (typeof item === 'string') texts.push(item)
    else if (isRecord(item) && item.type === 'text' && typeof item.text === 'string') texts.push(item.text)
    else if (isRecord(item) && item.type === 'image' && isRecord(item.source) && typeof item.source.data === 'string') {
      images.push(imageRef(String(item.source.media_type ?? 'application/octet-stream'), item.source.data, `${pointer}/${index}`))
    }
  })
  return {text: texts.join('\n'), images}
}

function userKind(entry: Entry, text: string): string {
  if (entry.isCompactSummary === true) return 'compact-summary'
  if (entry.isMeta === true) return 'meta'
  if (/^\s*<(command-name|command-message|local-command-stdout|local-command-stderr)>/.test(text)) return 'command'
  // Claude Code's own notes (`<system-reminder>`) and jarvis's blocks are not the person's words: a message of
  // nothing else is harness context.
  if (text.trim() !== '' && stripInjected(text).trim() === '') return 'meta'
  return 'prompt'
}

/** A user message's text as the person typed it: Claude Code's `<system-reminder>` notes and jarvis's blocks taken out. */
function typedText(text: string, kind: string): string {
  return kind === 'prompt' ? stripInjected(text) : text
}

/** Drafts for one chain entry; `at` is the entry's index inside the `original` it will end up in. */
function draftsOf(entry: Entry, at: number): {drafts: Draft[]; reasoning: UniversalReasoning[]} {
  const timestamp = typeof entry.timestamp === 'string' ? entry.timestamp : undefined
  const content = contentOf(entry)
  if (entry.type === 'user') {
    if (typeof content === 'string') {
      const kind = userKind(entry, content)
      return {drafts: [{role: 'user', type: 'message', content: {text: typedText(content, kind)}, timestamp, metadata: {kind}}], reasoning: []}
    }
    if (!Array.isArray(content)) return {drafts: [], reasoning: []}
    const drafts: Draft[] = []
    const texts: string[] = []
    const images: UniversalImageRef[] = []
    let textSlot = -1
    content.forEach((block, index) => {
      const pointer = `/${at}/message/content/${index}`
      if (typeof block === 'string' || (isRecord(block) && block.type === 'text' && typeof block.text === 'string')) {
        texts.push(typeof block === 'string' ? block : String(block.text))
        if (textSlot < 0) textSlot = drafts.length
      } else if (isRecord(block) && (block.type === 'image' || block.type === 'document') && isRecord(block.source)) {
        const source = block.source
        if (source.type === 'text' && typeof source.data === 'string') texts.push(source.data)
        else if (typeof source.data === 'string') images.push(imageRef(String(source.media_type ?? 'application/octet-stream'), source.data, pointer))
        else images.push({mediaType: String(source.media_type ?? 'application/octet-stream'), at: pointer, ...(typeof source.url === 'string' ? {uri: source.url} : {})})
        if (textSlot < 0) textSlot = drafts.length
      } else if (isRecord(block) && block.type === 'tool_result') {
        const body = resultBody(block.content, `${pointer}/content`)
        const id = typeof block.tool_use_id === 'string' ? block.tool_use_id : undefined
        drafts.push({
          role: 'user',
          type: 'tool_result',
          content: {tool_result: {...(block.is_error === true ? {error: body.text} : {output: body.text}), ...(id ? {tool_use_id: id} : {})}},
          timestamp,
          metadata: body.images.length > 0 ? {images: body.images} : {},
        })
      }
    })
    if (textSlot >= 0) {
      const text = texts.join('\n')
      const kind = userKind(entry, text)
      drafts.splice(textSlot, 0, {
        role: 'user',
        type: 'message',
        content: {text: typedText(text, kind)},
        timestamp,
        metadata: {kind, ...(images.length > 0 ? {images} : {})},
      })
    }
    return {drafts, reasoning: []}
  }
  if (entry.type === 'assistant' && entry.isApiErrorMessage !== true && Array.isArray(content)) {
    const message = entry.message as Record<string, unknown>
    const base = {
      ...(typeof message.model === 'string' ? {model: message.model} : {}),
      ...(typeof message.id === 'string' ? {responseId: message.id} : {}),
    }
    const drafts: Draft[] = []
    const reasoning: UniversalReasoning[] = []
    for (const block of content) {
      if (!isRecord(block)) continue
      if (block.type === 'thinking') {
        reasoning.push({text: typeof block.thinking === 'string' ? block.thinking : '', ...(typeof block.signature === 'string' && block.signature !== '' ? {signed: true} : {})})
      } else if (block.type === 'redacted_thinking') {
        reasoning.push({text: '', redacted: true})
      } else if (block.type === 'text' && typeof block.text === 'string') {
        if (block.text.startsWith(REASONING_PREFIX)) reasoning.push({text: block.text.slice(REASONING_PREFIX.length)})
        else drafts.push({role: 'assistant', type: 'message', content: {text: block.text}, timestamp, metadata: {...base}})
      } else if (block.type === 'tool_use' && typeof block.name === 'string' && block.name !== '') {
        drafts.push({
          role: 'assistant',
          type: 'tool_use',
          content: {tool_use: {tool_name: block.name, tool_input: block.input, ...(typeof block.id === 'string' ? {tool_use_id: block.id} : {})}},
          timestamp,
          metadata: {...base},
        })
      }
    }
    return {drafts, reasoning}
  }
  return {drafts: [], reasoning: []}
}

/** Parses the text of a Claude transcript; `path` is only used in messages. */
export function parseClaudeTranscript(text: string, path: string, options: ClaudeReadOptions = {}, fallbackTimestamp = new Date(0).toISOString()): ClaudeChain {
  const warnings: string[] = []
  const entries: Array<{entry: Entry; line: JsonLine}> = []
  let recognised = 0
  let unreadable = 0
  const lines = splitJsonLines(text)
  for (const line of lines) {
    const parsed = parseLine(line)
    if (!parsed.ok) {
      warnings.push(`${path}:${line.line}: ${parsed.reason}; skipped`)
      if (line.terminated) unreadable++
      continue
    }
    const value = parsed.value
    if (!isRecord(value) || typeof value.type !== 'string') {
      warnings.push(`${path}:${line.line}: not a Claude transcript entry (no "type"); skipped`)
      unreadable++
      continue
    }
    const entry = value as Entry
    if (CLAUDE_CONVERSATION_TYPES.has(entry.type) && typeof entry.uuid !== 'string') {
      warnings.push(`${path}:${line.line}: a "${entry.type}" entry without "uuid"; skipped`)
      unreadable++
      continue
    }
    if (isConversation(entry) || METADATA_TYPES.has(entry.type)) recognised++
    entries.push({entry, line})
  }
  if (recognised === 0 && unreadable > 0) {
    throw new BadInputError(`${path} is not a Claude Code transcript (no line is a Claude Code entry)`, {path, warnings})
  }

  const byUuid = new Map<string, {entry: Entry; index: number}>()
  const children = new Map<string, number[]>()
  entries.forEach(({entry}, index) => {
    if (!isConversation(entry)) return
    byUuid.set(entry.uuid as string, {entry, index})
    if (entry.isSidechain === true) return
    if (typeof entry.parentUuid === 'string') {
      const list = children.get(entry.parentUuid) ?? []
      list.push(index)
      children.set(entry.parentUuid, list)
    }
  })

  // 1. The leaf: the newest last-prompt pointer (2.1.145+), else a legacy summary pointer, else the last main-chain entry.
  let leafIndex = -1
  for (const type of ['last-prompt', 'summary']) {
    for (let i = entries.length - 1; i >= 0 && leafIndex < 0; i--) {
      const {entry} = entries[i]
      if (entry.type !== type || typeof entry.leafUuid !== 'string') continue
      const target = byUuid.get(entry.leafUuid)
      if (target && target.entry.isSidechain !== true) leafIndex = target.index
    }
    if (leafIndex >= 0) break
  }
  if (leafIndex < 0) {
    for (let i = entries.length - 1; i >= 0; i--) {
      const {entry} = entries[i]
      if (isConversation(entry) && entry.isSidechain !== true) {
        leafIndex = i
        break
      }
    }
  }
  // A pointer written before the last turn finished names an ancestor of the real tail: follow it to the newest descendant.
  if (leafIndex >= 0) {
    let newest = leafIndex
    const stack = [entries[leafIndex].entry.uuid as string]
    const seen = new Set<string>()
    while (stack.length > 0) {
      const uuid = stack.pop()!
      if (seen.has(uuid)) continue
      seen.add(uuid)
      for (const child of children.get(uuid) ?? []) {
        newest = Math.max(newest, child)
        stack.push(entries[child].entry.uuid as string)
      }
    }
    leafIndex = newest
  }

  // 2. Walk back to the root, or to the compaction boundary (Claude's resume view), or through it (`full`).
  const chain: Entry[] = []
  const onChain = new Set<string>()
  let cursor: Entry | undefined = leafIndex >= 0 ? entries[leafIndex].entry : undefined
  while (cursor) {
    const uuid = cursor.uuid as string
    if (onChain.has(uuid)) {
      warnings.push(`${path}: parentUuid cycle at ${uuid}; history before it is not read`)
      break
    }
    onChain.add(uuid)
    chain.push(cursor)
    let parent = cursor.parentUuid
    if (parent === null && options.history === 'full' && cursor.type === 'system' && cursor.subtype === 'compact_boundary') parent = cursor.logicalParentUuid
    if (typeof parent !== 'string') break
    const next = byUuid.get(parent)
    if (!next) {
      warnings.push(`${path}: entry ${uuid} names a parent ${parent} that is not in the file; history before it is not read`)
      break
    }
    cursor = next.entry
  }
  chain.reverse()

  // 3. Parallel tool results threaded to their own tool_use entry (2.1.85+) hang off the chain: put them back.
  const answered = new Set(chain.flatMap(toolResultIds))
  const resultEntries = new Map<string, Entry>()
  for (const {entry} of entries) {
    if (entry.isSidechain === true || !isConversation(entry) || onChain.has(entry.uuid as string)) continue
    for (const id of toolResultIds(entry)) if (!resultEntries.has(id)) resultEntries.set(id, entry)
  }
  for (let i = 0; i < chain.length; i++) {
    for (const id of toolUseIds(chain[i])) {
      if (answered.has(id)) continue
      const found = resultEntries.get(id)
      if (!found || onChain.has(found.uuid as string)) continue
      // After the response holding the call, among its results, in the order of the calls.
      const response = responseIdOf(chain[i])
      let start = i
      while (start > 0 && chain[start - 1].type === 'assistant' && responseIdOf(chain[start - 1]) === response) start--
      let at = i
      while (at + 1 < chain.length && chain[at + 1].type === 'assistant' && responseIdOf(chain[at + 1]) === response) at++
      const order = chain.slice(start, at + 1).flatMap(toolUseIds)
      const rank = (entry: Entry) => Math.min(...toolResultIds(entry).map((r) => order.indexOf(r)).filter((n) => n >= 0), Number.POSITIVE_INFINITY)
      while (at + 1 < chain.length && toolResultIds(chain[at + 1]).length > 0 && rank(chain[at + 1]) < order.indexOf(id)) at++
      chain.splice(at + 1, 0, found)
      onChain.add(found.uuid as string)
      for (const other of toolResultIds(found)) answered.add(other)
    }
  }

  // 4. Chain entries → universal messages.
  const fileName = basename(path).replace(/\.jsonl$/, '')
  const firstSession = chain.find((e) => typeof e.sessionId === 'string')?.sessionId
  const sessionId = fileName !== '' ? fileName : typeof firstSession === 'string' ? firstSession : 'unknown'
  const builder = new TranscriptBuilder('claude', sessionId, 'claude-jsonl', fallbackTimestamp)
  let pendingReasoning: {responseId?: string; items: UniversalReasoning[]; key: string; timestamp?: string; model?: string} | undefined
  const flushReasoning = () => {
    if (!pendingReasoning) return
    const {items, key, responseId, timestamp, model} = pendingReasoning
    pendingReasoning = undefined
    builder.add(`${key}:reasoning`, [], [
      {
        role: 'assistant',
        type: 'message',
        content: {text: ''},
        timestamp,
        metadata: {reasoning: items, ...(responseId ? {responseId} : {}), ...(model ? {model} : {})},
      },
    ])
  }
  for (const entry of chain) {
    if (entry.isSidechain === true) {
      builder.keep(entry)
      continue
    }
    const responseId = entry.type === 'assistant' ? responseIdOf(entry) : undefined
    if (pendingReasoning && (entry.type === 'user' || (entry.type === 'assistant' && responseId !== pendingReasoning.responseId))) flushReasoning()
    const {drafts, reasoning} = draftsOf(entry, builder.pendingCount)
    if (reasoning.length > 0) {
      if (drafts.length > 0) {
        drafts[0].metadata.reasoning = [...(pendingReasoning?.items ?? []), ...reasoning]
        pendingReasoning = undefined
      } else {
        pendingReasoning ??= {
          responseId,
          items: [],
          key: entry.uuid as string,
          timestamp: typeof entry.timestamp === 'string' ? entry.timestamp : undefined,
          model: isRecord(entry.message) && typeof entry.message.model === 'string' ? entry.message.model : undefined,
        }
        pendingReasoning.items.push(...reasoning)
      }
    } else if (pendingReasoning && drafts.length > 0) {
      drafts[0].metadata.reasoning = pendingReasoning.items
      pendingReasoning = undefined
    }
    builder.add(entry.uuid as string, [entry], drafts)
  }
  flushReasoning()
  const messages = builder.finish()

  // 5. Session facts from anywhere in the file.
  let title: string | undefined
  let customTitle: string | undefined
  let aiTitle: string | undefined
  let lastTimestamp: string | undefined
  let lastPrompt: string | undefined
  for (const {entry} of entries) {
    if (entry.type === 'custom-title' && typeof entry.customTitle === 'string') customTitle = entry.customTitle
    else if (entry.type === 'ai-title' && typeof entry.aiTitle === 'string') aiTitle = entry.aiTitle
    else if (entry.type === 'summary' && typeof entry.summary === 'string') title = entry.summary
    else if (entry.type === 'last-prompt' && typeof entry.lastPrompt === 'string') lastPrompt = entry.lastPrompt
    const ts = validTimestamp(entry.timestamp)
    if (ts !== undefined && (lastTimestamp === undefined || Date.parse(ts) > Date.parse(lastTimestamp))) lastTimestamp = ts
  }
  const tail = chain.at(-1)
  const firstWithCwd = chain.find((e) => typeof e.cwd === 'string') ?? entries.find(({entry}) => typeof entry.cwd === 'string')?.entry
  const transcript: SessionTranscript = {
    provider: 'claude',
    sessionId,
    path,
    projectRoot: typeof firstWithCwd?.cwd === 'string' ? firstWithCwd.cwd : '',
    ...((customTitle ?? aiTitle ?? title) !== undefined ? {title: customTitle ?? aiTitle ?? title} : {}),
    ...(messages.length > 0 ? {startTime: messages[0].timestamp} : {}),
    ...(lastTimestamp !== undefined ? {lastUpdated: lastTimestamp} : {}),
    messages,
    warnings,
    notCarried: [],
  }
  debug('%s: %d entries, chain of %d, %d messages, %d warnings', path, entries.length, chain.length, messages.length, warnings.length)
  return {
    transcript,
    leafUuid: tail ? (tail.uuid as string) : null,
    lastTimestamp,
    cwd: typeof tail?.cwd === 'string' ? tail.cwd : typeof firstWithCwd?.cwd === 'string' ? firstWithCwd.cwd : undefined,
    version: typeof tail?.version === 'string' ? tail.version : undefined,
    gitBranch: typeof tail?.gitBranch === 'string' ? tail.gitBranch : undefined,
    lastPrompt,
    uuids: new Set(byUuid.keys()),
  }
}

/** Reads a Claude transcript and the facts about its chain that an append needs. */
export async function readClaudeChain(path: string, options: ClaudeReadOptions = {}): Promise<ClaudeChain & {text: string}> {
  const {text, mtime} = await readTranscriptFile(path)
  return {...parseClaudeTranscript(text, path, options, mtime), text}
}

export async function readClaudeSession(path: string, options: ClaudeReadOptions = {}): Promise<SessionTranscript> {
  return (await readClaudeChain(path, options)).transcript
}
