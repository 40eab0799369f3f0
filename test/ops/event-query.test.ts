/** The text search a server is sent for a query longer than it answers (src/ops/events/list.ts eventQueryOf). */
import {describe, expect, it} from 'vitest'

import {eventQueryOf} from '../../src/ops/events/list.js'
import {EVENT_QUERY_MAX} from '../../src/schemas/index.js'

describe('eventQueryOf', () => {
  it('sends a query a server answers as it is', () => {
    const exact = 'a'.repeat(EVENT_QUERY_MAX)
    expect(eventQueryOf(exact)).toBe(exact)
    expect(eventQueryOf('deploy day')).toBe('deploy day')
  })

  it('cuts a longer one at its last whole word, never inside a surrogate pair', () => {
    const words = 'kestrel queue '.repeat(40)
    const cut = eventQueryOf(words)
    expect(cut.length).toBeLessThanOrEqual(EVENT_QUERY_MAX)
    expect(words.startsWith(cut)).toBe(true)
    expect(cut.split(' ').every((word) => word === 'kestrel' || word === 'queue')).toBe(true)
    // One word longer than the limit is cut where it must be, and a pair the limit splits is left out whole.
    const emoji = `${'x'.repeat(EVENT_QUERY_MAX - 1)}😀tail`
    expect(eventQueryOf(emoji)).toBe('x'.repeat(EVENT_QUERY_MAX - 1))
    expect(() => encodeURIComponent(eventQueryOf(emoji))).not.toThrow()
  })
})
