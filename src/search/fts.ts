/**
 * The keyword engine: SQLite FTS5 (through better-sqlite3) queried in place, with minisearch's ranking rules kept
 * (see docs/decisions/search.md): fields title ×3, tags ×2, path ×1.5, body ×1 (bm25() column weights); query
 * terms OR-ed, each counting in full when it matches exactly, 0.375 as a prefix (3+ characters) and 0.45 × its
 * closeness as a fuzzy term (5+ characters, 20 % of its length, at most 2 edits), 0.5 as another form of the same
 * word (the same English stem, Porter2: "hiking" for "hike", "verify" for "verified"); a file's score is multiplied
 * by the number of query terms it matched. Fuzzy terms and other forms come from the index's own vocabulary
 * (`terms`), within a bounded edit distance computed here, or by stem.
 *
 * Words are split, lower-cased and stop words dropped here, before FTS5 sees them (the same `processTerm` for
 * texts and queries), so what is indexed is exactly what a query can ask for. The FTS table is contentless: the
 * files are on disk, and snippets are read from them.
 */
import {ftsText} from '../store/cjk.js'
import type {RowDatabase, RowStatement} from '../store/sqlite-open.js'

import stem from 'wink-porter2-stemmer'

import type {SearchDocument} from './document.js'

/**
 * How much of a file's body the keyword index holds. Memory files are notes of a few kB; a log or a dump kept
 * in `.memory/` made the index as large as the tree (95 MB for 94 MB of dumps) and every prompt's search seconds
 * long. Past this, a file is still listed, read and snippeted, but its words are not indexed.
 */
export const INDEXED_BODY_CHARS = 64 * 1024

const STOP_WORDS = new Set(
  'a an and are as at be but by did do does for from had has have how i in is it its of on or our so that the their then there these this to was we were what when where which who why will with you'.split(' '),
)

/** A word is letters, digits and marks; anything else separates words (FTS5 is told the same categories). */
const WORD_SEPARATORS = /[^\p{L}\p{N}\p{M}]+/u

/** Latin letters that may carry a diacritic (Latin-1 Supplement, Extended-A and -B, Latin Extended Additional). */
const ACCENTED_LATIN = /[\u00c0-\u024f\u1e00-\u1eff]/g
const COMBINING_DIACRITICS = /[\u0300-\u036f]/g

/**
 * A word lower-cased, its Latin letters without their accents (`café` is `cafe`, as the event log's search folds it),
 * or null when it is too short or a stop word. Only Latin letters are folded: a Japanese voiced mark or a Cyrillic
 * `й` makes another letter, not an accented one.
 */
export function processTerm(term: string): string | null {
  let lower = term.toLowerCase()
  if (lower.length >= 2 && !ASCII_WORD.test(lower)) lower = lower.replace(ACCENTED_LATIN, (letter) => letter.normalize('NFD').replace(COMBINING_DIACRITICS, ''))
  return lower.length < 2 || STOP_WORDS.has(lower) ? null : lower
}

/** The indexed words of a text, in order; a run of CJK characters is its bigrams (store/cjk.ts). */
export function wordsOf(text: string): string[] {
  const words: string[] = []
  for (const raw of ftsText(text).split(WORD_SEPARATORS)) {
    const word = processTerm(raw)
    if (word) words.push(word)
  }
  return words
}

const BOOSTS = {title: 3, tags: 2, path: 1.5, body: 1}
const PREFIX_WEIGHT = 0.375
const FUZZY_WEIGHT = 0.45
const PREFIX_MIN = 3
const FUZZY_MIN = 5
const FUZZY_SHARE = 0.2
const MAX_EDITS = 2
/**
 * Another form of a query word (same stem, not a prefix match) counts this much: measured on LoCoMo and the
 * coding-memory set (docs/decisions/embeddings.md), 0.5 raised keyword recall@5 on both; 1.0 lowered recall@1.
 */
const STEM_WEIGHT = 0.5
/** At most this many indexed words sharing the stem's first letters are stemmed per query word. */
const STEM_CANDIDATES = 500
const ASCII_WORD = /^[a-z0-9]+$/
/** Above every character: the end of a range of words that start alike. */
const LAST_CHAR = String.fromCodePoint(0x10_ffff)

/** Idempotent: creates the tables of the engine in `db`. */
export function createFtsSchema(db: RowDatabase): void {
  db.exec(`
    CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(title, tags, path, body, content = '', contentless_delete = 1,
      tokenize = "unicode61 remove_diacritics 0 categories 'L* N* Co M*'");
    CREATE TABLE IF NOT EXISTS terms (term TEXT PRIMARY KEY, len INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS terms_by_length ON terms (len, term);
  `)
}

/** Two rows of the edit-distance table, reused by every call (words are short; longer ones get new rows). */
let rows = [new Int32Array(64), new Int32Array(64)]

/**
 * The edit distance between `a` and `b` (insertions, deletions, substitutions), or `max + 1` as soon as it is
 * known to exceed `max`. Only the diagonal band of width `2 max + 1` is computed: a path through the table that
 * leaves it costs more than `max` edits. PURE (the rows are scratch space).
 */
export function boundedEditDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1
  if (b.length + 1 > rows[0].length) rows = [new Int32Array(b.length + 1), new Int32Array(b.length + 1)]
  const outside = max + 1
  let [previous, current] = rows
  for (let j = 0; j <= b.length; j++) previous[j] = j <= max ? j : outside
  for (let i = 1; i <= a.length; i++) {
    const from = Math.max(1, i - max)
    const to = Math.min(b.length, i + max)
    current[0] = i <= max ? i : outside
    if (from > 1) current[from - 1] = outside
    let rowMin = current[0]
    for (let j = from; j <= to; j++) {
      const substitution = previous[j - 1] + (a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1)
      const deletion = j < i + max ? previous[j] + 1 : outside
      const insertion = current[j - 1] + 1
      const value = Math.min(substitution, deletion, insertion, outside)
      current[j] = value
      if (value < rowMin) rowMin = value
    }
    if (to < b.length) current[to + 1] = outside
    if (rowMin > max) return outside
    ;[previous, current] = [current, previous]
  }
  return Math.min(previous[b.length], outside)
}

/** `word` cut into `count` (at most 3) contiguous pieces of nearly equal length. PURE. */
function piecesOf(word: string, count: number): string[] {
  const pieces: string[] = []
  for (let i = 0; i < count; i++) pieces.push(word.slice(Math.floor((i * word.length) / count), Math.floor(((i + 1) * word.length) / count)))
  return pieces
}

export interface FtsHit {
  id: number
  score: number
}

/** A query's hits, best first, and what each matched. */
export interface FtsResult {
  hits: FtsHit[]
  /** The indexed words file `id` matched (query words, their fuzzy neighbours), for snippets. */
  termsOf(id: number): string[]
}

/** Groups of words (each FTS query run) whose matches a file records in its bit mask; later ones in a list of its own. */
const MASK_GROUPS = 31

/** The FTS5 tables of one database: add, remove, rank. The caller maps ids to paths and runs the transactions. */
export class FtsEngine {
  private readonly insertDoc: RowStatement
  private readonly deleteDoc: RowStatement
  private readonly insertTerm: RowStatement
  private readonly matchDocs: RowStatement
  private readonly termsByLength: RowStatement
  private readonly termsStartingWith: RowStatement
  private readonly longerTerm: RowStatement

  constructor(db: RowDatabase) {
    createFtsSchema(db)
    this.insertDoc = db.prepare('INSERT INTO docs (rowid, title, tags, path, body) VALUES (?, ?, ?, ?, ?)')
    this.deleteDoc = db.prepare('DELETE FROM docs WHERE rowid = ?')
    this.insertTerm = db.prepare('INSERT OR IGNORE INTO terms (term, len) VALUES (?, ?)')
    this.matchDocs = db.prepare(`SELECT rowid, bm25(docs, ${BOOSTS.title}, ${BOOSTS.tags}, ${BOOSTS.path}, ${BOOSTS.body}) FROM docs WHERE docs MATCH ?`)
    // A word within d edits of the query word holds one of d + 1 disjoint pieces of it unchanged (each edit breaks
    // at most one piece): SQLite keeps only such words, so few reach the edit distance computed here.
    this.termsStartingWith = db.prepare(`SELECT term FROM terms WHERE term >= ? AND term < ? LIMIT ${STEM_CANDIDATES}`)
    this.longerTerm = db.prepare('SELECT 1 FROM terms WHERE term > ? AND term < ? LIMIT 1')
    this.termsByLength = db.prepare('SELECT term FROM terms WHERE len BETWEEN ? AND ? AND (instr(term, ?) OR instr(term, ?) OR instr(term, ?))')
  }

  /** Indexes `doc` under `id` (call `remove(id)` first when it was indexed before). */
  add(id: number, doc: SearchDocument): void {
    const fields = [wordsOf(doc.title ?? ''), doc.tags.flatMap(wordsOf), wordsOf(doc.path.replace(/\.md$/, '')), wordsOf(doc.body.slice(0, INDEXED_BODY_CHARS))]
    this.insertDoc.run(id, ...fields.map((words) => words.join(' ')))
    // The vocabulary for fuzzy terms only grows (a word no file holds any more matches nothing); a rebuild trims it.
    for (const word of new Set(fields.flat())) this.insertTerm.run(word, word.length)
  }

  remove(id: number): void {
    this.deleteDoc.run(id)
  }

  /**
   * Every file matching any query word, best first, with its score; `accept` filters by id before ranking. A common
   * word matches thousands of files: each is a slot of a few number arrays, not an object with two sets (which
   * lived through the whole query and kept the garbage collector copying them).
   */
  search(query: string, accept: (id: number) => boolean): FtsResult {
    const slots = new Map<number, number>()
    const ids: number[] = []
    const scores: number[] = []
    /** Per slot: how many query words it matched, the last one (queries run word by word), its groups. */
    const matched: number[] = []
    const lastWord: number[] = []
    const masks: number[] = []
    const laterGroups = new Map<number, number[]>()
    const groups: string[][] = []
    const rowsOf = (match: string) => this.matchDocs.all(match) as Array<[number, number]>
    const collect = (rows: Array<[number, number]>, weight: number, word: number, terms: string[]) => {
      const group = groups.push(terms) - 1
      for (const [id, bm25] of rows) {
        let slot = slots.get(id)
        if (slot === undefined) {
          if (!accept(id)) continue
          slots.set(id, (slot = ids.push(id) - 1))
          scores.push(0)
          matched.push(0)
          lastWord.push(-1)
          masks.push(0)
        }
        scores[slot] += -bm25 * weight // bm25() is negative: lower is better
        if (lastWord[slot] !== word) {
          lastWord[slot] = word
          matched[slot]++
        }
        if (group < MASK_GROUPS) masks[slot] |= 1 << group
        else laterGroups.set(slot, [...(laterGroups.get(slot) ?? []), group])
      }
    }
    for (const [word, term] of [...new Set(wordsOf(query))].entries()) {
      const exact = rowsOf(`"${term}"`)
      collect(exact, 1, word, [term])
      // With no longer indexed word starting with it, the prefix query finds the same rows with the same bm25 (the
      // vocabulary holds every indexed word); only for ASCII words, which FTS5 folds exactly as `processTerm` does.
      if (term.length >= PREFIX_MIN) collect(ASCII_WORD.test(term) && !this.hasLongerTerm(term) ? exact : rowsOf(`"${term}"*`), PREFIX_WEIGHT, word, [term])
      if (term.length >= PREFIX_MIN) {
        const forms = this.otherForms(term)
        if (forms.length > 0) collect(rowsOf(forms.map((form) => `"${form}"`).join(' OR ')), STEM_WEIGHT, word, forms)
      }
      if (term.length >= FUZZY_MIN) {
        for (const [distance, neighbours] of this.fuzzyNeighbours(term)) {
          collect(rowsOf(neighbours.map((neighbour) => `"${neighbour}"`).join(' OR ')), (FUZZY_WEIGHT * term.length) / (term.length + distance), word, neighbours)
        }
      }
    }
    const hits = ids.map((id, slot) => ({id, score: scores[slot] * matched[slot]})).sort((a, b) => b.score - a.score || a.id - b.id)
    const termsOf = (id: number): string[] => {
      const slot = slots.get(id)
      if (slot === undefined) return []
      const terms = new Set<string>()
      groups.forEach((words, group) => {
        if (group < MASK_GROUPS ? (masks[slot] & (1 << group)) !== 0 : laterGroups.get(slot)?.includes(group)) for (const term of words) terms.add(term)
      })
      return [...terms]
    }
    return {hits, termsOf}
  }

  /** Whether the vocabulary holds a word that starts with `term` and is longer. */
  private hasLongerTerm(term: string): boolean {
    return this.longerTerm.get(term, term + LAST_CHAR) !== undefined
  }

  /**
   * The indexed words with the stem of `term` ("hiking", "hikes" for "hike"), but not those the prefix query counts
   * already ("deployed" for "deploy"). A word starts with its stem but for the stem's last letter (Porter2 may put
   * back an e or turn a y into an i: "hiking" → "hike", "happy" → "happi"), so only the indexed words starting so
   * are stemmed.
   */
  private otherForms(term: string): string[] {
    const root = stem(term)
    const start = root.slice(0, Math.max(PREFIX_MIN, root.length - 1))
    const forms: string[] = []
    for (const [word] of this.termsStartingWith.all(start, start + LAST_CHAR) as Array<[string]>) {
      if (word !== term && !word.startsWith(term) && stem(word) === root) forms.push(word)
    }
    return forms
  }

  /**
   * The indexed words within the fuzzy distance of `term`, by distance; words that `term` is a prefix of are left
   * to the prefix query, which already counts them.
   */
  private fuzzyNeighbours(term: string): Map<number, string[]> {
    const max = Math.min(MAX_EDITS, Math.round(term.length * FUZZY_SHARE))
    const byDistance = new Map<number, string[]>()
    const pieces = piecesOf(term, max + 1)
    for (const [word] of this.termsByLength.all(term.length - max, term.length + max, pieces[0], pieces[1 % pieces.length], pieces[2 % pieces.length]) as Array<[string]>) {
      if (word.startsWith(term)) continue
      const distance = boundedEditDistance(term, word, max)
      if (distance === 0 || distance > max) continue
      const list = byDistance.get(distance)
      if (list) list.push(word)
      else byDistance.set(distance, [word])
    }
    return byDistance
  }
}
