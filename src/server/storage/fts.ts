/**
 * Text for the SQLite FTS5 index of the event log, and the safe MATCH expression of a user's query.
 *
 * FTS5's `unicode61` tokenizer splits on spaces and punctuation, which suits English and keys
 * (`config:telegram_bot_token` → config, telegram, bot, token), but Japanese, Chinese and Korean text has no
 * spaces: a whole sentence would be one token and no word in it could be found. The classic remedy (Lucene's
 * CJK bigram filter) is used here: every run of CJK characters is indexed as its overlapping pairs of
 * characters (`共有メモリ` → `共有 有メ メモ モリ`), and a query is turned into the same pairs, searched as a
 * phrase. A one-character CJK query becomes a prefix search. No dictionary is needed, and ranking (bm25)
 * works on the pairs like on words.
 *
 * User input never reaches FTS5's query syntax: every word is quoted, so `AND`, `"`, `*`, `(`, `:` and
 * `NEAR` in a query are plain text. A trailing `*` on a word asks for a prefix match.
 */

/** Han, Hiragana, Katakana (with the long-vowel mark and iteration marks) and Hangul. */
const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc\u3005\u309d\u309e\u30fd\u30fe]+/gu

function bigrams(run: string): string[] {
  const chars = [...run]
  if (chars.length === 1) return chars
  const pairs: string[] = []
  for (let i = 0; i + 1 < chars.length; i++) pairs.push(chars[i] + chars[i + 1])
  return pairs
}

/** The text that is indexed for `text`: CJK runs become space-separated bigrams, the rest is kept. */
export function ftsText(text: string): string {
  return text.replace(CJK_RUN, (run) => ` ${bigrams(run).join(' ')} `)
}

/** Longest query accepted, in characters. */
export const MAX_QUERY_LENGTH = 500

/**
 * The FTS5 MATCH expression for a user's query: every whitespace-separated word must match (AND), a word
 * is a phrase of its tokens, CJK words are phrases of bigrams. Returns null when the query has nothing to
 * search for (only punctuation).
 */
export function ftsQuery(query: string): string | null {
  const parts: string[] = []
  for (const word of query.trim().split(/\s+/u)) {
    if (word === '') continue
    const prefix = word.endsWith('*')
    const bare = prefix ? word.replace(/\*+$/u, '') : word
    const tokens: string[] = []
    let singleCjk = false
    // Same split as the tokenizer: letters and digits (of any script) form tokens; CJK runs become bigrams.
    for (const match of bare.matchAll(/[\p{L}\p{N}\p{M}]+/gu)) {
      const piece = match[0]
      let last = 0
      for (const cjk of piece.matchAll(CJK_RUN)) {
        const before = piece.slice(last, cjk.index)
        if (before !== '') tokens.push(before)
        const pairs = bigrams(cjk[0])
        if (pairs.length === 1 && [...cjk[0]].length === 1) singleCjk = true
        tokens.push(...pairs)
        last = (cjk.index ?? 0) + cjk[0].length
      }
      const after = piece.slice(last)
      if (after !== '') tokens.push(after)
    }
    if (tokens.length === 0) continue
    // Tokens hold only letters, digits and marks, so they need no escaping inside the quotes.
    const phrase = `"${tokens.join(' ')}"`
    parts.push(prefix || (singleCjk && tokens.length === 1) ? `${phrase} *` : phrase)
  }
  return parts.length === 0 ? null : parts.join(' AND ')
}
