/** What a session sync notes as carried into a session, and the session's own messages read back without them. PURE parts and a temp tree. */
import {afterAll, describe, expect, it} from 'vitest'

import {addedMessages, noteCarried, readCarried, withoutCarried} from '../../src/session/carried.js'
import type {UniversalMessage} from '../../src/session/universal.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

let n = 0
const message = (role: 'user' | 'assistant', text: string): UniversalMessage => ({
  id: `m${++n}`,
  parentId: null,
  sessionId: 's',
  timestamp: '2026-12-07T10:00:00.000Z',
  role,
  type: 'message',
  content: {text},
  metadata: {},
})

describe('the messages carried into a session', () => {
  it('are those a sync added; the session keeps its own, a repeated "continue" of its own included', async () => {
    const {root} = await initTree(await tempDir('jarvis-carried-'), {})
    dirs.push(root)
    const own = [message('user', 'continue'), message('assistant', 'We decided to keep the cache.')]
    const carried = [message('user', 'Which queue?'), message('assistant', 'We decided to use RabbitMQ.'), message('user', 'continue')]
    // The target held its own messages; the sync appended the carried ones (a copy of one it held is not added again).
    const before = own
    const after = [...own, ...carried, message('assistant', 'We decided to keep the cache.')]
    const added = addedMessages(before, after)
    expect([...added.values()].reduce((a, b) => a + b, 0)).toBe(4)
    await noteCarried(root, 'gemini', 'g-1', added)
    const later = [...after, message('user', 'continue'), message('assistant', 'Done: the cache stays.')]
    const left = withoutCarried(later, await readCarried(root, 'gemini', 'g-1'))
    expect(left.map((m) => m.content.text)).toEqual(['continue', 'We decided to keep the cache.', 'continue', 'Done: the cache stays.'])
    // Another sync adds to the note; another session's note is its own.
    const again = [...later, message('assistant', 'We decided to use RabbitMQ.')]
    await noteCarried(root, 'gemini', 'g-1', addedMessages(later, again))
    expect(withoutCarried(again, await readCarried(root, 'gemini', 'g-1')).map((m) => m.content.text)).toEqual(left.map((m) => m.content.text))
    expect(await readCarried(root, 'codex', 'g-1')).toEqual(new Map())
  })
})
