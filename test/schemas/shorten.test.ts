/** Cutting text for display never leaves half of an emoji (a lone surrogate: U+FFFD in UTF-8, refused by a server). */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {contentGist} from '../../src/events/snapshot.js'
import {headOf, shorten, sliceWhole} from '../../src/schemas/shorten.js'

const LONE_SURROGATE = /\p{Cs}/u

describe('shorten', () => {
  it('cuts before an emoji it would split, and keeps whole ones', () => {
    expect(shorten('ab🎉🎉', 4)).toBe('ab…')
    expect(shorten('a🎉🎉', 4)).toBe('a🎉…')
    expect(shorten('🎉', 2)).toBe('🎉')
    expect(headOf('🎉x', 1)).toBe('')
    expect(sliceWhole('🎉ab🎉', 1, 4)).toBe('ab')
  })

  it('ends at a word when one ends near the cut, and cuts text without spaces where it reaches', () => {
    expect(shorten('passwords are rotated every 90 days by the vault', 24)).toBe('passwords are rotated…')
    expect(shorten('rotated every 90 days', 17)).toBe('rotated every 90…')
    expect(shorten('see /srv/app/releases/2026-12-07/current', 24)).toBe('see /srv/app/releases/2…')
    expect(shorten('パスワードは九十日ごとに更新する', 8)).toBe('パスワードは九…')
  })

  it('never leaves a lone surrogate, whatever the text and the cut', () => {
    fc.assert(
      fc.property(fc.string({unit: 'grapheme'}), fc.nat(40), fc.nat(40), (text, a, b) => {
        const whole = !LONE_SURROGATE.test(text)
        fc.pre(whole)
        expect(LONE_SURROGATE.test(shorten(text, Math.max(2, a)))).toBe(false)
        expect(LONE_SURROGATE.test(sliceWhole(text, Math.min(a, b), Math.max(a, b)))).toBe(false)
        expect(shorten(text, Math.max(2, a)).length).toBeLessThanOrEqual(Math.max(2, a))
      }),
    )
  })

  it('pinned memory shows a long line of emoji without half of one', () => {
    const gist = contentGist(`emojitest ${'🎉'.repeat(2100)}`, 200)
    expect(LONE_SURROGATE.test(gist)).toBe(false)
    expect(gist.endsWith('🎉…')).toBe(true)
  })
})
