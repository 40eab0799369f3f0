/**
 * Event ids: `evt_` + a ULID (48-bit millisecond time + 80 random bits, Crockford base32, 26 characters).
 * Ids from one factory only grow, also within one millisecond and when the clock steps back (the random
 * part is incremented, as ULID's monotonic mode does), so sorting ids sorts events by the time they were
 * stored. The storage still orders by its own insertion sequence: ids of two server processes need not interleave.
 */
import {randomBytes} from 'node:crypto'

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
const RANDOM_DIGITS = 16
const TIME_DIGITS = 10

export const EVENT_ID_PATTERN = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/

function encodeTime(ms: number): string {
  let out = ''
  let value = ms
  for (let i = 0; i < TIME_DIGITS; i++) {
    out = ALPHABET[value % 32] + out
    value = Math.floor(value / 32)
  }
  return out
}

function freshRandom(): number[] {
  return [...randomBytes(RANDOM_DIGITS)].map((byte) => byte & 31)
}

/** Adds one to a base-32 digit array; false when it overflowed. */
function increment(digits: number[]): boolean {
  for (let i = digits.length - 1; i >= 0; i--) {
    if (digits[i] < 31) {
      digits[i]++
      return true
    }
    digits[i] = 0
  }
  return false
}

/** A monotonic id factory: `next(nowMs)` returns an id greater than every id it returned before. */
export function eventIdFactory(): (nowMs: number) => string {
  let lastTime = -1
  let random: number[] = []
  return (nowMs: number): string => {
    let time = Math.max(Math.floor(nowMs), lastTime)
    if (time === lastTime) {
      if (!increment(random)) {
        time++
        random = freshRandom()
      }
    } else {
      random = freshRandom()
    }
    lastTime = time
    return `evt_${encodeTime(time)}${random.map((digit) => ALPHABET[digit]).join('')}`
  }
}
