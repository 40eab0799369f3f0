import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {mergeTranscript, messageKey} from '../../src/merge/transcript.js'
import type {UniversalMessage} from '../../src/merge/types.js'
import {RUNS} from './arbitraries.js'

let id = 0
function say(role: 'user' | 'assistant', text: string, provider = 'claude'): UniversalMessage {
  id++
  return {id: `${provider}-${id}`, parentId: null, sessionId: provider, timestamp: `2025-05-01T10:00:${String(id % 60).padStart(2, '0')}Z`, role, type: 'message', content: {text}, metadata: {provider}}
}

const message = fc
  .tuple(fc.constantFrom('user', 'assistant'), fc.constantFrom('continue', 'ok', 'done', 'hi'), fc.constantFrom('claude', 'gemini'))
  .map(([role, text, provider]) => say(role as 'user' | 'assistant', text, provider))
const transcript = fc.array(message, {maxLength: 12})

function counts(messages: readonly UniversalMessage[]): Map<string, number> {
  const result = new Map<string, number>()
  for (const m of messages) result.set(messageKey(m), (result.get(messageKey(m)) ?? 0) + 1)
  return result
}

describe('messageKey', () => {
  it('ignores ids, timestamps, provider and whitespace differences', () => {
    expect(messageKey(say('user', '  Fix the\r\nbug  '))).toBe(messageKey(say('user', 'Fix the bug', 'gemini')))
    expect(messageKey(say('user', 'Fix the bug'))).not.toBe(messageKey(say('assistant', 'Fix the bug')))
  })

  it('keys tool calls by tool name and canonical input, tool results by output and error', () => {
    const call = (input: unknown) => ({role: 'assistant', type: 'tool_use', content: {tool_use: {tool_name: 'read', tool_input: input}}})
    expect(messageKey(call({path: 'a', limit: 1}))).toBe(messageKey(call({limit: 1, path: 'a'})))
    expect(messageKey(call({path: 'a'}))).not.toBe(messageKey(call({path: 'b'})))
    const result = (output: string, error?: string) => ({role: 'user', type: 'tool_result', content: {tool_result: {output, error}}})
    expect(messageKey(result('ok\n'))).toBe(messageKey(result('ok')))
    expect(messageKey(result('ok', 'boom'))).not.toBe(messageKey(result('ok')))
    // An error's text carried as the output (Codex records no error flag) is the same result.
    expect(messageKey({role: 'user', type: 'tool_result', content: {tool_result: {error: 'File does not exist.'}}})).toBe(messageKey(result('File does not exist.')))
  })
})

describe('mergeTranscript', () => {
  it('keeps a message typed twice, and adds only what is new', () => {
    const local = [say('user', 'continue'), say('assistant', 'ok'), say('user', 'continue')]
    const remote = [say('user', 'continue', 'gemini'), say('assistant', 'ok', 'gemini'), say('user', 'continue', 'gemini'), say('assistant', 'done', 'gemini')]
    const result = mergeTranscript(local, remote)
    expect(result.messages).toEqual([...local, remote[3]])
    expect(result.added).toEqual([remote[3]])
  })

  it('keeps the larger multiplicity of a repeated message', () => {
    const local = [say('user', 'continue'), say('user', 'continue')]
    const remote = [say('user', 'continue'), say('user', 'continue'), say('user', 'continue')]
    expect(mergeTranscript(local, remote).messages).toEqual([...local, remote[2]])
  })

  it('keeps both sides in order: a remote message before the shared ones stays before them', () => {
    const [a, b] = [say('user', 'a'), say('assistant', 'b')]
    const [x, y] = [say('user', 'x'), say('assistant', 'y')]
    expect(mergeTranscript([a, b], [x, a, b, y]).messages).toEqual([x, a, b, y])
    const mine = say('user', 'mine')
    expect(mergeTranscript([a, mine, b], [a, x, b]).messages).toEqual([a, mine, x, b])
  })

  it('keeps both new tails once each, local first, after the shared prefix', () => {
    const tail = (words: string[]) => fc.array(fc.constantFrom(...words).map((w) => say('user', w)), {maxLength: 5})
    fc.assert(
      fc.property(transcript, tail(['l1', 'l2']), tail(['r1', 'r2']), (prefix, mine, theirs) => {
        const result = mergeTranscript([...prefix, ...mine], [...prefix, ...theirs])
        expect(result.messages).toEqual([...prefix, ...mine, ...theirs])
        expect(result.added).toEqual(theirs)
      }),
      RUNS,
    )
  })

  it('keeps every local message in place, adds remote ones in remote order, with multiplicity max(local, remote)', () => {
    fc.assert(
      fc.property(transcript, transcript, (local, remote) => {
        const {messages, added} = mergeTranscript(local, remote)
        const localSet = new Set(local)
        expect(messages.filter((m) => localSet.has(m))).toEqual(local)
        expect(messages.filter((m) => !localSet.has(m))).toEqual(added)
        expect(remote.filter((m) => added.includes(m))).toEqual(added)
        const [l, r, merged] = [counts(local), counts(remote), counts(messages)]
        for (const key of new Set([...l.keys(), ...r.keys()])) expect(merged.get(key)).toBe(Math.max(l.get(key) ?? 0, r.get(key) ?? 0))
      }),
      RUNS,
    )
  })

  it('is idempotent', () => {
    fc.assert(
      fc.property(transcript, transcript, (local, remote) => {
        const once = mergeTranscript(local, remote).messages
        expect(mergeTranscript(once, remote)).toEqual({messages: once, added: []})
        expect(mergeTranscript(local, local)).toEqual({messages: local, added: []})
      }),
      RUNS,
    )
  })

  // No clock here (a loaded machine is slow, not wrong): a quadratic merge of this size runs for minutes, past the
  // test's timeout.
  it('merges 100,000 messages per side, which only a linear merge does within a test', () => {
    const shared = Array.from({length: 80_000}, (_, i) => say('user', `message ${i % 500}`))
    const local = [...shared, ...Array.from({length: 20_000}, (_, i) => say('user', `local ${i}`))]
    const remote = [...shared, ...Array.from({length: 20_000}, (_, i) => say('assistant', `remote ${i}`))]
    const result = mergeTranscript(local, remote)
    expect(result.added).toHaveLength(20_000)
  })
})
