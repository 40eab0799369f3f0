/**
 * Text for the SQLite FTS5 index of the event log, and the safe MATCH expression of a user's query.
 *
 * FTS5's `unicode61` tokenizer splits on spaces and punctuation, which suits English and keys
 * (`config:telegram_bot_token` → config, telegram, bot, token), but Japanese, Chinese and Korean text has no
 * spaces: a whole sentence would be one token and no word in it could be found. The classic remedy (Lucene's
 * CJK bigram filter, store/cjk.ts) is used here: every run of CJK characters is indexed as its overlapping pairs of
 * characters (`共有メモリ` → `共有 有メ メモ モリ`), and a query is turned into the same pairs, searched as a
 * phrase. A one-character CJK query becomes a prefix search. No dictionary is needed, and ranking (bm25)
 * works on the pairs like on words.
 *
 * User input never reaches FTS5's query syntax: every word is quoted, so `AND`, `"`, `*`, `(`, `:` and
 * `NEAR` in a query are plain text. A trailing `*` on a word asks for a prefix match.
 */
import {bigrams, CJK_RUN, ftsText} from '../../store/cjk.js'

export {ftsText}

/** One word of a query: its tokens (searched as a phrase), and whether its last token is a prefix. */
interface QueryWord {
  tokens: string[]
  prefix: boolean
}

/** A user's query as words of index tokens, split the way the index splits text (CJK runs become bigrams). */
function queryWords(query: string): QueryWord[] {
  const words: QueryWord[] = []
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
    words.push({tokens, prefix: prefix || (singleCjk && tokens.length === 1)})
  }
  return words
}

/**
 * The FTS5 MATCH expression for a user's query: every whitespace-separated word must match (AND), a word
 * is a phrase of its tokens, CJK words are phrases of bigrams. Returns null when the query has nothing to
 * search for (only punctuation).
 */
export function ftsQuery(query: string): string | null {
  // Tokens hold only letters, digits and marks, so they need no escaping inside the quotes.
  const parts = queryWords(query).map(({tokens, prefix}) => `"${tokens.join(' ')}"${prefix ? ' *' : ''}`)
  return parts.length === 0 ? null : parts.join(' AND ')
}

/**
 * PostgreSQL full-text search (postgres-events.ts) gets the same tokens as FTS5: the text is split here, not by
 * PostgreSQL's parser (which would keep `a.b/c` or `x@y` whole as host or e-mail tokens), lower-cased and stripped of
 * diacritics (FTS5's `remove_diacritics`), and indexed with the `simple` configuration (no stemming, no stop words).
 */
function plainTokens(text: string): string[] {
  // Only Latin-style combining accents go (as in FTS5): a Japanese voicing mark or a Hangul jamo stays what it was.
  const folded = text.normalize('NFD').replace(/[\u0300-\u036f]+/gu, '').normalize('NFC').toLowerCase()
  return [...folded.matchAll(/[\p{L}\p{N}\p{M}]+/gu)].map((match) => match[0])
}

/** The text PostgreSQL indexes for `text`: its tokens (CJK runs as bigrams), separated by spaces. */
export function tsText(text: string): string {
  return plainTokens(ftsText(text)).join(' ')
}

/** The `to_tsquery('simple', …)` text of a user's query (same rules as ftsQuery), or null when there is nothing to search. */
export function tsQuery(query: string): string | null {
  const parts: string[] = []
  for (const {tokens, prefix} of queryWords(query)) {
    const lexemes = tokens.flatMap(plainTokens)
    if (lexemes.length === 0) continue
    // Quoted lexemes of letters and digits only: nothing in them is tsquery syntax.
    const phrase = lexemes.map((lexeme) => `'${lexeme}'`)
    if (prefix) phrase[phrase.length - 1] += ':*'
    parts.push(phrase.length === 1 ? phrase[0] : `(${phrase.join(' <-> ')})`)
  }
  return parts.length === 0 ? null : parts.join(' & ')
}
