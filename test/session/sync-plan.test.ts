/** The pure parts of `jarvis session sync`: the carry plan, prefix marks, source resolution, retries. */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import type {SessionRegistry, UniversalMessage} from '../../src/schemas/index.js'
import type {CarriedPair} from '../../src/session/registry.js'
import {defaultTag, keyedSide, markOf, planCarry, resolveSync, retryFileAccess, syncKey} from '../../src/session/sync.js'
import type {SessionSummary} from '../../src/session/universal.js'

let id = 0
function say(role: 'user' | 'assistant', text: string, provider = 'claude'): UniversalMessage {
  id++
  return {id: `${provider}-${id}`, parentId: null, sessionId: provider, timestamp: '2026-05-01T10:00:00Z', role, type: 'message', content: {text}, metadata: {provider}}
}

type Previous = Pick<CarriedPair, 'source' | 'target' | 'targetOwn'>

/** One sync as syncSession does it, without files: Claude targets are appended to, Gemini targets rewritten in merged order. */
function carry(world: World, from: 'A' | 'B', to: 'A' | 'B', options: {deduplicate?: boolean} = {}) {
  const S = world[from]
  const T = world[to]
  const plan = planCarry({source: keyedSide(S), target: keyedSide(T), previous: world.pairs.get(from + to), incremental: true, deduplicate: options.deduplicate ?? true})
  const next = to === 'A' ? [...T, ...plan.added.map((i) => S[i])] : [...T.slice(0, plan.keep), ...plan.order.map((r) => (r.side === 'target' ? T[r.index] : S[r.index]))]
  world[to] = next
  const pair: Previous = {source: markOf(S.length, keyedSide(S).key), target: markOf(next.length, keyedSide(next).key), targetOwn: plan.targetOwn}
  world.pairs.set(from + to, pair)
  if (plan.targetOwn === 0) world.pairs.set(to + from, {source: pair.target, target: pair.source, targetOwn: 0})
  return plan
}

interface World {
  A: UniversalMessage[]
  B: UniversalMessage[]
  pairs: Map<string, Previous>
}

const texts = (messages: UniversalMessage[]) => messages.map((m) => m.content.text)

describe('planCarry', () => {
  it('first sync into an empty target carries everything, a message typed twice included', () => {
    const source = [say('user', 'hi'), say('assistant', 'hello'), say('user', 'continue'), say('user', 'continue')]
    const plan = planCarry({source: keyedSide(source), target: keyedSide([]), incremental: true, deduplicate: true})
    expect(plan).toMatchObject({mode: 'full', reason: 'first sync of this pair', keep: 0, added: [0, 1, 2, 3], considered: 4, targetOwn: 0})
  })

  it('merges only the new tails after a recorded point, and drops what the target already got', () => {
    const world: World = {A: [say('user', 'a'), say('assistant', 'b')], B: [], pairs: new Map()}
    carry(world, 'A', 'B')
    world.A.push(say('user', 'c'), say('assistant', 'd'))
    world.B.push(say('user', 'c', 'gemini')) // the same message arrived on the other side meanwhile
    const plan = carry(world, 'A', 'B')
    expect(plan).toMatchObject({mode: 'incremental', keep: 2, added: [3], considered: 2, targetOwn: 0})
    expect(texts(world.B)).toEqual(['a', 'b', 'c', 'd'])
    expect(carry(world, 'A', 'B')).toMatchObject({mode: 'incremental', added: [], considered: 0})
  })

  it('looks at only a few keys of a long prefix', () => {
    const source = Array.from({length: 10_000}, (_, i) => say(i % 2 ? 'assistant' : 'user', `m${i}`))
    const world: World = {A: source, B: [], pairs: new Map()}
    carry(world, 'A', 'B')
    world.A.push(say('user', 'new'))
    let computed = 0
    const counting = (messages: UniversalMessage[]) => {
      const side = keyedSide(messages)
      return {length: side.length, key: (i: number) => (computed++, side.key(i))}
    }
    const plan = planCarry({source: counting(world.A), target: counting(world.B), previous: world.pairs.get('AB'), incremental: true, deduplicate: true})
    expect(plan.added).toEqual([10_000])
    expect(computed).toBeLessThan(40)
  })

  it('falls back to a full merge when a prefix no longer matches (a rewind, a checkpoint saved over)', () => {
    const world: World = {A: [say('user', 'a'), say('assistant', 'b'), say('user', 'c')], B: [], pairs: new Map()}
    carry(world, 'A', 'B')
    world.A = [world.A[0], say('assistant', 'b2'), say('user', 'c')]
    const plan = carry(world, 'A', 'B')
    expect(plan).toMatchObject({mode: 'full', reason: 'the source changed before the point of the last sync', added: [1]})
    world.B = world.B.slice(0, 2)
    expect(carry(world, 'A', 'B')).toMatchObject({mode: 'full', reason: 'the target changed before the point of the last sync'})
  })

  it('with incrementalSync off, always merges everything and still drops duplicates', () => {
    const source = [say('user', 'a'), say('assistant', 'b')]
    const target = [say('user', 'a', 'gemini')]
    const previous = {source: markOf(1, keyedSide(source).key), target: markOf(1, keyedSide(target).key), targetOwn: 0}
    const plan = planCarry({source: keyedSide(source), target: keyedSide(target), previous, incremental: false, deduplicate: true})
    expect(plan).toMatchObject({mode: 'full', added: [1]})
  })

  it('with deduplicateMessages off, appends the new tail as it is', () => {
    const world: World = {A: [say('user', 'a')], B: [], pairs: new Map()}
    carry(world, 'A', 'B')
    world.A.push(say('user', 'c'))
    world.B.push(say('user', 'c', 'gemini'))
    expect(carry(world, 'A', 'B', {deduplicate: false})).toMatchObject({mode: 'incremental', added: [1], targetOwn: 1})
    expect(texts(world.B)).toEqual(['a', 'c', 'c'])
  })

  it('counts the target messages the source lacks, and never sends a message back where it came from', () => {
    const world: World = {A: [say('user', 'a')], B: [say('user', 'mine', 'gemini')], pairs: new Map()}
    expect(carry(world, 'A', 'B').targetOwn).toBe(1)
    expect(world.pairs.has('BA')).toBe(false)
    expect(carry(world, 'B', 'A')).toMatchObject({added: [0], targetOwn: 0})
    expect(texts(world.A)).toEqual(['a', 'mine'])
    // A now holds nothing B lacks, so A → B starts after all of it.
    expect(carry(world, 'A', 'B')).toMatchObject({mode: 'incremental', considered: 0, added: []})
  })

  it('property: both ways, in any order, every new message arrives exactly once and the two sides converge', () => {
    const op = fc.oneof(
      fc.record({kind: fc.constant('addA' as const), role: fc.constantFrom('user' as const, 'assistant' as const)}),
      fc.record({kind: fc.constant('addB' as const), role: fc.constantFrom('user' as const, 'assistant' as const)}),
      fc.constant({kind: 'AB' as const}),
      fc.constant({kind: 'BA' as const}),
    )
    fc.assert(
      fc.property(fc.array(op, {maxLength: 40}), (ops) => {
        const world: World = {A: [], B: [], pairs: new Map()}
        let n = 0
        for (const o of ops) {
          if (o.kind === 'addA') world.A.push(say(o.role, `new ${n++}`))
          else if (o.kind === 'addB') world.B.push(say(o.role, `new ${n++}`, 'gemini'))
          else carry(world, o.kind[0] as 'A' | 'B', o.kind[1] as 'A' | 'B')
        }
        carry(world, 'A', 'B')
        carry(world, 'B', 'A')
        const a = texts(world.A).sort()
        const b = texts(world.B).sort()
        expect(a).toEqual(b)
        expect(new Set(a).size).toBe(a.length)
        expect(a.length).toBe(n)
        // Nothing new: both directions add nothing.
        expect(carry(world, 'A', 'B').added).toEqual([])
        expect(carry(world, 'B', 'A').added).toEqual([])
      }),
      {numRuns: 300},
    )
  })

  it('property: with repeated content ("continue", "ok") the sides still converge and a second round adds nothing', () => {
    const op = fc.oneof(
      fc.record({kind: fc.constantFrom('addA' as const, 'addB' as const), text: fc.constantFrom('continue', 'ok', 'done')}),
      fc.constantFrom({kind: 'AB' as const}, {kind: 'BA' as const}),
    )
    fc.assert(
      fc.property(fc.array(op, {maxLength: 40}), (ops) => {
        const world: World = {A: [], B: [], pairs: new Map()}
        for (const o of ops) {
          if (o.kind === 'addA') world.A.push(say('user', o.text))
          else if (o.kind === 'addB') world.B.push(say('user', o.text, 'gemini'))
          else carry(world, o.kind[0] as 'A' | 'B', o.kind[1] as 'A' | 'B')
        }
        carry(world, 'A', 'B')
        carry(world, 'B', 'A')
        expect(texts(world.A).sort()).toEqual(texts(world.B).sort())
        expect(carry(world, 'A', 'B').added).toEqual([])
        expect(carry(world, 'B', 'A').added).toEqual([])
      }),
      {numRuns: 300},
    )
  })
})

describe('syncKey', () => {
  it('is the transcript merge key: ids, timestamps and providers do not count', () => {
    expect(syncKey(say('user', 'Fix  the bug'))).toBe(syncKey(say('user', 'Fix the bug', 'gemini')))
  })
})

describe('resolveSync', () => {
  const claude = (sessionId: string, lastActivity = '2026-05-01T10:00:00Z'): SessionSummary => ({provider: 'claude', sessionId, path: `/c/${sessionId}.jsonl`, messageCount: 2, lastActivity})
  const checkpoint = (tag: string): SessionSummary => ({provider: 'gemini', sessionId: tag, tag, path: `/g/checkpoint-${tag}.json`, messageCount: 2, lastActivity: '2026-05-01T10:00:00Z'})
  const chat = (sessionId: string): SessionSummary => ({provider: 'gemini', sessionId, path: `/g/chats/session-${sessionId.slice(0, 8)}.jsonl`, messageCount: 2, lastActivity: '2026-05-01T10:00:00Z'})
  const empty: SessionRegistry = {version: 1, sessions: []}
  const linked: SessionRegistry = {
    version: 1,
    sessions: [
      {
        sessionId: 'e1',
        sessionTag: 'auth',
        projectPath: '/p',
        createdAt: '2026-05-01T10:00:00Z',
        lastActivity: '2026-05-01T10:00:00Z',
        providers: [
          {provider: 'claude', sessionId: 'aaaa1111-0000', messageCount: 2},
          {provider: 'gemini', sessionId: 'auth', messageCount: 2},
        ],
      },
    ],
  }
  const lists = {claude: [claude('aaaa1111-0000'), claude('aaab2222-0000')], gemini: [checkpoint('auth'), chat('cccc3333-0000')]}

  it('names a Claude session by id or unique prefix, and defaults the tag to claude-<id8>', () => {
    const byId = resolveSync({ref: 'aaab2222-0000', to: 'gemini', registry: empty, ...lists})
    expect(byId).toMatchObject({source: {sessionId: 'aaab2222-0000'}, tag: 'claude-aaab2222'})
    expect(byId.target).toBeUndefined()
    expect(resolveSync({ref: 'aaab', to: 'gemini', registry: empty, ...lists}).source.sessionId).toBe('aaab2222-0000')
    expect(() => resolveSync({ref: 'aaa', to: 'gemini', registry: empty, ...lists})).toThrow(/ambiguous.*aaaa1111-0000, aaab2222-0000/)
  })

  it('names a Gemini checkpoint by tag or a Gemini session by id', () => {
    expect(resolveSync({ref: 'auth', to: 'claude', registry: empty, ...lists})).toMatchObject({source: {tag: 'auth'}, tag: 'auth'})
    expect(resolveSync({ref: 'cccc', to: 'claude', registry: empty, ...lists})).toMatchObject({source: {sessionId: 'cccc3333-0000'}, tag: 'gemini-cccc3333'})
  })

  it('a registry tag or either linked id finds the conversation; the target is the linked session of the other tool', () => {
    // Into Gemini: the checkpoint of the tag is written beside a chat session, which does not exist yet.
    const intoGemini = resolveSync({ref: 'auth', to: 'gemini', registry: linked, ...lists})
    expect(intoGemini).toMatchObject({source: {sessionId: 'aaaa1111-0000'}, checkpoint: {tag: 'auth'}, tag: 'auth'})
    expect(intoGemini.target).toBeUndefined()
    expect(resolveSync({ref: 'auth', to: 'claude', registry: linked, ...lists})).toMatchObject({source: {tag: 'auth'}, target: {sessionId: 'aaaa1111-0000'}})
    expect(resolveSync({ref: 'aaaa1111-0000', to: 'claude', registry: linked, ...lists})).toMatchObject({source: {tag: 'auth'}, target: {sessionId: 'aaaa1111-0000'}})
  })

  it('a conversation in all three tools: the source is its newest session outside the target tool', () => {
    const codex = (sessionId: string, lastActivity: string): SessionSummary => ({provider: 'codex', sessionId, path: `/x/rollout-${sessionId}.jsonl`, messageCount: 4, lastActivity})
    const three: SessionRegistry = {
      version: 1,
      sessions: [{...linked.sessions[0], providers: [...linked.sessions[0].providers, {provider: 'codex', sessionId: '0199aaaa-0000', messageCount: 4}, {provider: 'gemini', sessionId: 'cccc3333-0000', messageCount: 2}]}],
    }
    const later = {...lists, codex: [codex('0199aaaa-0000', '2026-05-01T11:00:00Z')]}
    expect(resolveSync({ref: 'auth', to: 'claude', registry: three, ...later})).toMatchObject({source: {provider: 'codex'}, target: {sessionId: 'aaaa1111-0000'}})
    expect(resolveSync({ref: 'auth', to: 'gemini', registry: three, ...later})).toMatchObject({source: {provider: 'codex'}, target: {sessionId: 'cccc3333-0000'}, checkpoint: {tag: 'auth'}})
    expect(resolveSync({ref: 'auth', to: 'codex', registry: three, ...later})).toMatchObject({source: {provider: 'claude'}, target: {sessionId: '0199aaaa-0000'}})
    expect(resolveSync({ref: '0199', to: 'claude', registry: three, ...later})).toMatchObject({source: {provider: 'codex', sessionId: '0199aaaa-0000'}})
    expect(() => resolveSync({ref: '0199aaaa-0000', to: 'codex', registry: empty, ...later})).toThrow(expect.objectContaining({exit: 2, message: expect.stringMatching(/Codex CLI session already.*--to claude or --to gemini/)}))
  })

  it('a registered Claude session whose file is gone is replaced by a new one', () => {
    const resolved = resolveSync({ref: 'auth', to: 'claude', registry: linked, claude: [], gemini: lists.gemini})
    expect(resolved.target).toBeUndefined()
    expect(resolved.replaces).toEqual({provider: 'claude', sessionId: 'aaaa1111-0000'})
  })

  it('refuses an unknown name (exit 2), a session of the target tool, and a bad or conflicting --tag', () => {
    expect(() => resolveSync({ref: 'nope', to: 'gemini', registry: empty, ...lists})).toThrow(expect.objectContaining({code: 'SESSION_NOT_FOUND', exit: 2}))
    expect(() => resolveSync({ref: 'aaab2222-0000', to: 'claude', registry: empty, ...lists})).toThrow(expect.objectContaining({exit: 2, message: expect.stringMatching(/already.*--to gemini/)}))
    expect(() => resolveSync({ref: 'aaab', to: 'gemini', tag: 'has space', registry: empty, ...lists})).toThrow(expect.objectContaining({exit: 2}))
    expect(() => resolveSync({ref: 'auth', to: 'gemini', tag: 'other', registry: linked, ...lists})).toThrow(/already tagged "auth"/)
    // A session of no conversation yet, given the tag of another one: joined, it would mix two conversations.
    expect(() => resolveSync({ref: 'aaab', to: 'gemini', tag: 'auth', registry: linked, ...lists})).toThrow(
      expect.objectContaining({exit: 2, message: expect.stringContaining('--tag "auth" already names another conversation')}),
    )
  })
})

describe('defaultTag', () => {
  const tagged = (...tags: string[]): SessionRegistry => ({
    version: 1,
    sessions: tags.map((sessionTag, i) => ({sessionId: `e${i}`, sessionTag, projectPath: '/p', createdAt: '2026-05-01T10:00:00Z', lastActivity: '2026-05-01T10:00:00Z', providers: []})),
  })
  const codex = {provider: 'codex' as const, sessionId: '01a25257-589b-7a10-9b2c-3d4e5f607182'}

  it('is <provider>-<id8>, or more of the id while another conversation has that tag', () => {
    expect(defaultTag(tagged(), codex)).toBe('codex-01a25257')
    expect(defaultTag(tagged('codex-01a25257'), codex)).toBe('codex-01a25257-589b')
    expect(defaultTag(tagged('codex-01a25257', 'codex-01a25257-589b', 'codex-01a25257-589b-7a10'), codex)).toBe('codex-01a25257-589b-7a10-9b2c')
    expect(defaultTag(tagged('codex-01a25257', 'codex-01a25257-589b-7a10-9b2c-3d4e5f607182'), codex)).toBe('codex-01a25257-589b')
    const all = ['codex-01a25257', 'codex-01a25257-589b', 'codex-01a25257-589b-7a10', 'codex-01a25257-589b-7a10-9b2c', `codex-${codex.sessionId}`]
    expect(defaultTag(tagged(...all), codex)).toBe(`codex-${codex.sessionId}-2`)
  })
})

describe('retryFileAccess', () => {
  const busy = () => Object.assign(new Error('EBUSY: resource busy'), {code: 'EBUSY'})

  it('retries a transient failure with exponential backoff', async () => {
    const waits: number[] = []
    let calls = 0
    const value = await retryFileAccess('read x', async () => (++calls < 3 ? Promise.reject(busy()) : 'ok'), {maxRetries: 3, retryDelay: 100, sleep: async (ms) => void waits.push(ms)})
    expect(value).toBe('ok')
    expect(waits).toEqual([100, 200])
  })

  it('gives up after maxRetries with FILE_ACCESS naming what it tried; other errors fail at once', async () => {
    const waits: number[] = []
    await expect(retryFileAccess('read x', () => Promise.reject(busy()), {maxRetries: 2, retryDelay: 10, sleep: async (ms) => void waits.push(ms)})).rejects.toMatchObject({
      code: 'FILE_ACCESS',
      exit: 1,
      message: expect.stringMatching(/^read x: EBUSY.*3 attempts/),
    })
    expect(waits).toEqual([10, 20])
    let calls = 0
    const missing = Object.assign(new Error('ENOENT'), {code: 'ENOENT'})
    await expect(retryFileAccess('read y', () => (calls++, Promise.reject(missing)), {maxRetries: 5, retryDelay: 10, sleep: async () => {}})).rejects.toBe(missing)
    expect(calls).toBe(1)
  })
})
