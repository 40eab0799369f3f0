/**
 * Japanese, Chinese and Korean text has no spaces between words: split on spaces and punctuation, a whole sentence
 * is one word and no word in it can be found. The classic remedy (Lucene's CJK bigram filter) is used by both
 * searches, of the event log (server/storage/fts.ts) and of the memory files (search/fts.ts): every run of CJK
 * characters stands for its overlapping pairs of characters (`共有メモリ` → `共有 有メ メモ モリ`), in texts and in
 * queries alike. No dictionary is needed, and ranking works on the pairs as on words.
 */

/** Han, Hiragana, Katakana (with the long-vowel mark and iteration marks) and Hangul. */
export const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc\u3005\u309d\u309e\u30fd\u30fe]+/gu

/** A run's overlapping pairs of characters (code points); a run of one character is itself. */
export function bigrams(run: string): string[] {
  const chars = [...run]
  if (chars.length === 1) return chars
  const pairs: string[] = []
  for (let i = 0; i + 1 < chars.length; i++) pairs.push(chars[i] + chars[i + 1])
  return pairs
}

/** `text` with each CJK run replaced by its space-separated bigrams; the rest is kept. */
export function ftsText(text: string): string {
  return text.replace(CJK_RUN, (run) => ` ${bigrams(run).join(' ')} `)
}
