import {canonicalJson, isPlainObject} from './canonical.js'
import type {Side, TranscriptMerge, UniversalMessage} from './types.js'

function normalizeText(text: unknown): string {
  return typeof text === 'string' ? text.replace(/\s+/g, ' ').trim() : ''
}

/**
 * What makes two messages "the same" across providers: ids, timestamps and metadata differ
 * between Claude and Gemini copies, so only role, type and normalised content count.
 */
export function messageKey(message: UniversalMessage): string {
  const type = typeof message.type === 'string' ? message.type : 'message'
  const content: unknown = message.content
  let body: string
  if (typeof content === 'string') body = normalizeText(content)
  else if (!isPlainObject(content)) body = canonicalJson(content ?? null)
  else if (type === 'tool_use' && isPlainObject(content.tool_use)) {
    body = `${String(content.tool_use.tool_name)} ${canonicalJson(content.tool_use.tool_input ?? null)}`
  } else if (type === 'tool_result' && isPlainObject(content.tool_result)) {
    // Its texts, output and error alike: a tool without an error flag (Codex) carries an error's text as the output,
    // and the copy that comes back from it must still be the same result.
    body = [content.tool_result.output, content.tool_result.error].map(normalizeText).filter((text) => text !== '').join('\n')
  } else if (typeof content.text === 'string') body = normalizeText(content.text)
  else body = canonicalJson(content)
  return JSON.stringify([String(message.role), type, body])
}

/**
 * The merged order as references into the two inputs. A message is identified by its key plus
 * its occurrence number, so "continue" typed twice stays twice while a copy is not added again.
 * Every local message keeps its place; a remote-only message goes after the last message it
 * shares with local that precedes it in remote order (past local's own new messages there), so
 * both sides' orders survive wherever they agree. Linear: Maps only.
 */
export function planTranscriptMerge(localKeys: readonly string[], remoteKeys: readonly string[]): Array<{side: Side; index: number}> {
  const localAt = new Map<string, number>()
  const seen = new Map<string, number>()
  const occurrence = (key: string) => {
    const n = (seen.get(key) ?? 0) + 1
    seen.set(key, n)
    return `${n}:${key}`
  }
  localKeys.forEach((key, index) => localAt.set(occurrence(key), index))
  seen.clear()
  const matched = new Uint8Array(localKeys.length)
  const slotOf: number[] = [] // for each remote-only message, in remote order: the local index it follows
  const remoteOnly: number[] = []
  let anchor = -1
  remoteKeys.forEach((key, index) => {
    const at = localAt.get(occurrence(key))
    if (at === undefined) {
      remoteOnly.push(index)
      slotOf.push(anchor)
    } else {
      matched[at] = 1
      anchor = Math.max(anchor, at)
    }
  })
  // A remote-only message anchored after local index a is emitted just before the next shared local message.
  const nextShared = new Int32Array(localKeys.length + 1).fill(localKeys.length)
  for (let i = localKeys.length - 1; i >= 0; i--) nextShared[i] = matched[i] ? i : nextShared[i + 1]
  const plan: Array<{side: Side; index: number}> = []
  let r = 0
  for (let i = 0; i <= localKeys.length; i++) {
    while (r < remoteOnly.length && nextShared[slotOf[r] + 1] === i) plan.push({side: 'remote', index: remoteOnly[r++]})
    if (i < localKeys.length) plan.push({side: 'local', index: i})
  }
  return plan
}

/** Append-only union of two transcripts (seed 002), in linear time. Inputs are not modified. */
export function mergeTranscript<T extends UniversalMessage>(local: readonly T[], remote: readonly T[]): TranscriptMerge<T> {
  const plan = planTranscriptMerge(local.map(messageKey), remote.map(messageKey))
  const messages = plan.map(({side, index}) => (side === 'local' ? local[index] : remote[index]))
  const added = plan.filter(({side}) => side === 'remote').map(({index}) => remote[index])
  return {messages, added}
}
