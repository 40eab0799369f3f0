/**
 * Cutting text for a one-line display, by UTF-16 units as JavaScript counts length, but never between the two
 * halves of a surrogate pair: half an emoji is no character, becomes U+FFFD in UTF-8, and a server refuses it.
 */

const splitsPair = (text: string, at: number) => at > 0 && at < text.length && /[\uD800-\uDBFF]/.test(text[at - 1]) && /[\uDC00-\uDFFF]/.test(text[at])

/** `text.slice(start, end)`, each end moved inwards by one unit when it would fall inside a surrogate pair. */
export function sliceWhole(text: string, start: number, end: number = text.length): string {
  return text.slice(splitsPair(text, start) ? start + 1 : start, splitsPair(text, end) ? end - 1 : end)
}

/** The first `end` UTF-16 units of `text`, one fewer when the last would be the first half of a surrogate pair. */
export function headOf(text: string, end: number): string {
  return sliceWhole(text, 0, end)
}

/**
 * `text` when it has at most `max` units, else its head and an ellipsis, `max` units at most in all. The head ends
 * at the end of a word when one ends in its last third: "rotated every 90…" says what "rotated every 90 da…" does,
 * without a word the reader must guess. Text without spaces there (Japanese, a long path) is cut where it reaches.
 */
export function shorten(text: string, max: number): string {
  if (text.length <= max) return text
  const head = headOf(text, max - 1)
  const wordEnd = /\s/.test(text[head.length] ?? '') ? head.length : head.search(/\s+\S*$/)
  return `${(wordEnd * 3 >= head.length * 2 ? head.slice(0, wordEnd) : head).trimEnd()}…`
}
