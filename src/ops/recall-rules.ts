/**
 * What counts as evidence that a memory file answers a query, and the order recall and the prompt hook show files
 * in. PURE (no import but the episode's own parser), so the prompt hook can load it at every prompt.
 *
 * Three rules on top of the search's ranking (docs/hooks.md, "Episodes and notes"):
 *
 * 1. **An echo is not evidence.** A session's episode (one the hooks wrote) holds what the session did, but lines that only restate the
 *    query (an earlier version's `## Asked`, an answer that repeats the question) and its header (title, topic,
 *    outcome: made from the lines below) say nothing the query did not: an episode's evidence is its own lines
 *    (decisions, files, what it learned, free text) without those restating the query. An episode with no evidence
 *    left goes after every file that has some, and after the notes that have none either (found by meaning): the
 *    episode was found through what it repeats or lists (the notes it used), the note through its own text.
 * 2. **Newest wins.** Of two files on the same thing (the same title, or most of their words in common:
 *    {@link SAME_SUBJECT_SHARE}) with the same evidence (the same query terms) and close scores (the lower at least
 *    {@link NEWER_WITHIN} of the higher), the newer one goes first: two notes on the same thing that disagree are most
 *    often an old one and the one that replaced it. Two files that only share the query's words (two sessions of
 *    one conversation, two incidents of one service) keep the search's order: the older may be the one asked about.
 * 3. **An episode never outranks the note it repeats.** An episode that names a note under `## Memory used` (jarvis
 *    gave it to the session, or the agent read it) goes after that note — unless one of its own decisions is
 *    evidence for the query: a decision taken since is news, and rule 2 orders the two.
 */
import {episodeParts, type EpisodeParts} from '../files/episode-parts.js'
import {bigrams, CJK_RUN} from '../store/cjk.js'

/** Terms shorter than this are ignored (`a`, `is`, `db` match too much by chance). */
export const MIN_TERM_LENGTH = 3
/** Rule 2: the newer file goes first when its score is at least this share of the older one's. */
export const NEWER_WITHIN = 0.75
/** Rule 2: two files with different titles are on the same thing when at least this share of their words is shared (Jaccard). */
export const SAME_SUBJECT_SHARE = 0.5

/** Stop words of the index, function words, and the words of talking to an assistant: they say nothing about a topic. */
const IGNORED = new Set(
  (
    'a an and are as at be but by did do does for from had has have how i in is it its of on or our so that the their then there these this to was we were what when where which who why will with you ' +
    'about above after again all also am any anything back been before being below both can cannot could couldn dont each else even every few further get gets give go going got here hers him his ' +
    'into just know let lets like look make many may me might more most much must my need needs new no nor not now off once one only other ought out over own please really right same say see ' +
    'shall she should show some something still such sure take tell than thank thanks that the them they thing things think those though through too try under until up upon us use used using very ' +
    'want wants way well what whatever while whom would yes yet your yours hi hello hey ok okay yeah cool great good nice fine done work works working help ' +
    'between among across against along around during without within because since via per toward towards onto beside besides beyond versus whether either neither however therefore ' +
    'explain describe difference differences compare example examples question questions answer mean means meaning'
  ).split(' '),
)

const HIRAGANA = /\p{Script=Hiragana}/u
/** A term made of Japanese, Chinese or Korean characters: found inside a word, as such text has no spaces. */
const CJK_TERM = new RegExp(`^(?:${CJK_RUN.source})$`, 'u')
/** Splits a word at its runs of those characters, keeping the runs (at the odd indexes). */
const CJK_PARTS = new RegExp(`(${CJK_RUN.source})`, 'u')

/**
 * The terms of a run of Japanese, Chinese or Korean text: its overlapping pairs of characters, as the search splits
 * it (store/cjk.ts), so that a word inside a sentence without spaces is found (`デプロイが失敗した` → `デプ プロ ロイ
 * 失敗`). A pair holding a hiragana character is left out: in Japanese those are particles and verb endings (`した`,
 * `が失`), which every text has, not a topic. A lone character says too little to count.
 */
function cjkTerms(run: string): string[] {
  return bigrams(run).filter((pair) => [...pair].length === 2 && !HIRAGANA.test(pair))
}

/** The terms of a prompt or query that can show relevance, in its order, each as often as it occurs. */
function termsInOrder(prompt: string): string[] {
  const terms: string[] = []
  for (const word of prompt.toLowerCase().split(/[^\p{L}\p{N}_]+/u)) {
    // A word with CJK characters in it: their pairs, and the other letters' words around them (`APIの設計` → `api 設計`).
    const parts = word.split(CJK_PARTS)
    parts.forEach((part, i) => {
      if (i % 2 === 1) terms.push(...cjkTerms(part))
      else if (part.length >= MIN_TERM_LENGTH && !IGNORED.has(part) && !/^\d+$/.test(part)) terms.push(part)
    })
  }
  return terms
}

/** The distinct terms of a prompt or query that can show relevance, in its order. */
export function promptTerms(prompt: string): string[] {
  return [...new Set(termsInOrder(prompt))]
}

/**
 * The most terms of a query or prompt the rules weigh, as many as the search is asked for. A pasted log of thousands
 * of words would otherwise cost every episode line a test per word, and keep the agent's prompt waiting for seconds,
 * or minutes.
 */
export const MAX_QUERY_TERMS = 40

/**
 * The terms of a query or prompt the search and the rules use: {@link promptTerms}, in the prompt's order. Of a prompt
 * with more than MAX_QUERY_TERMS (a log, a stack trace or a file pasted in), those nearest its two ends, taken in turn
 * from its end and from its start: the person's own words are around what they pasted — the question after a log,
 * or before one — never in the middle of it. One pass over the prompt's words, whatever its length.
 */
export function queryTerms(query: string): string[] {
  const words = termsInOrder(query)
  const distinct = [...new Set(words)]
  if (distinct.length <= MAX_QUERY_TERMS) return distinct
  const chosen = new Set<string>()
  let [start, end] = [0, words.length - 1]
  for (let fromEnd = true; chosen.size < MAX_QUERY_TERMS && start <= end; fromEnd = !fromEnd) {
    if (fromEnd) {
      while (end >= start && chosen.has(words[end])) end--
      if (end >= start) chosen.add(words[end--])
    } else {
      while (start <= end && chosen.has(words[start])) start++
      if (start <= end) chosen.add(words[start++])
    }
  }
  return distinct.filter((term) => chosen.has(term))
}

function escape(term: string): string {
  return term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** Each term's pattern, made once: the rules test the same few terms against every line of every candidate. */
const termPatterns = new Map<string, RegExp>()
const MAX_TERM_PATTERNS = 4096

/**
 * True when `term` is a word of `text`, allowing the endings of a plural or a verb form: `certificates` finds
 * `certificate`, `pgbouncer` finds `pgbouncers`, `fail` finds `failing` — but `write` does not find `writer`. A
 * Japanese, Chinese or Korean term is found anywhere in the text: its words are not set apart by spaces.
 */
export function containsTerm(text: string, term: string): boolean {
  let pattern = termPatterns.get(term)
  if (pattern === undefined) {
    const stem = term.length >= 5 && /[^s]s$/.test(term) ? term.slice(0, -1) : term
    pattern = CJK_TERM.test(term) ? new RegExp(escape(term), 'u') : new RegExp(`(?:^|[^\\p{L}\\p{N}])${escape(stem)}(?:s|es|ed|d|ing)?(?![\\p{L}\\p{N}])`, 'iu')
    // A long-lived process (jarvis mcp) meets ever new terms: the cache starts again rather than grow.
    if (termPatterns.size >= MAX_TERM_PATTERNS) termPatterns.clear()
    termPatterns.set(term, pattern)
  }
  return pattern.test(text)
}

/** A file of the ranking: what the search gave for it. */
export interface RankedFile {
  path: string
  score: number
  title?: string
  tags: string[]
  /** The text after the front matter. */
  body: string
}

/**
 * The parts of a session's episode (one the hooks wrote: under `episodes/`, with their sections), or undefined for
 * any other file — a note, or an episode a person or an agent wrote with `memory episode`, whose every line is its own.
 */
export function sessionEpisode(file: Pick<RankedFile, 'path' | 'body'>): EpisodeParts | undefined {
  if (!file.path.startsWith('episodes/')) return undefined
  const parts = episodeParts(file.body)
  return parts.session ? parts : undefined
}

/** True when `line` only restates the query: it has topic terms, and each is one of the query's. */
export function restatesQuery(line: string, terms: readonly string[]): boolean {
  const own = promptTerms(line)
  if (own.length === 0) return false
  const query = terms.join(' ')
  return own.every((term) => containsTerm(query, term) || terms.some((q) => containsTerm(term, q)))
}

/** The evidence of a file for the query's terms: the strong fields (title, tags, path) and the body that count. */
export function evidenceOf(file: Omit<RankedFile, 'score'>, terms: readonly string[]): {strong: string; body: string} {
  const parts = sessionEpisode(file)
  if (!parts) return {strong: [file.title ?? '', file.tags.join(' '), file.path.replace(/[/_.-]+/g, ' ')].join('\n'), body: file.body}
  const own = [...parts.decided, ...parts.files, ...parts.learned, ...parts.other].filter((line) => !restatesQuery(line, terms))
  return {strong: '', body: own.join('\n')}
}

/** The query terms a file holds as evidence (rule 1), in the query's order. */
export function evidenceTerms(file: Omit<RankedFile, 'score'>, terms: readonly string[]): string[] {
  const {strong, body} = evidenceOf(file, terms)
  return terms.filter((term) => containsTerm(strong, term) || containsTerm(body, term))
}

/**
 * Coverage points of one file for the query's terms: 2 for a term in its title, tags or path, else 1 in its body;
 * an episode's echoes and header count nothing (rule 1).
 */
export function coveragePoints(file: Omit<RankedFile, 'score'>, terms: readonly string[]): number {
  const {strong, body} = evidenceOf(file, terms)
  let points = 0
  for (const term of terms) {
    if (containsTerm(strong, term)) points += 2
    else if (containsTerm(body, term)) points += 1
  }
  return points
}

/** The files among `files` whose place rule 2 may change: same evidence as another, a close score, the same subject. */
export function newestWinsCandidates(query: string, files: readonly RankedFile[]): string[] {
  const terms = queryTerms(query)
  const evidence = files.map((f) => evidenceTerms(f, terms).join(' '))
  const sameSubject = subjects()
  const paths = new Set<string>()
  for (let i = 0; i < files.length; i++) {
    for (let j = i + 1; j < files.length; j++) {
      if (evidence[i] !== '' && evidence[i] === evidence[j] && closeScores(files[i], files[j]) && sameSubject(files[i], files[j])) paths.add(files[i].path).add(files[j].path)
    }
  }
  return [...paths]
}

/** Rule 2's "on the same thing": the same title, or at least SAME_SUBJECT_SHARE of their words shared; each file's words read once. */
function subjects(): (a: RankedFile, b: RankedFile) => boolean {
  const words = new Map<string, Set<string>>()
  const wordsOf = (file: RankedFile) => {
    let found = words.get(file.path)
    if (found === undefined) words.set(file.path, (found = new Set(promptTerms(`${file.title ?? ''}\n${file.body}`))))
    return found
  }
  return (a, b) => {
    const title = (file: RankedFile) => file.title?.trim().toLowerCase()
    if (title(a) && title(a) === title(b)) return true
    const [x, y] = [wordsOf(a), wordsOf(b)]
    let shared = 0
    for (const word of x) if (y.has(word)) shared++
    const all = x.size + y.size - shared
    return all > 0 && shared / all >= SAME_SUBJECT_SHARE
  }
}

function closeScores(a: RankedFile, b: RankedFile): boolean {
  const [low, high] = a.score <= b.score ? [a.score, b.score] : [b.score, a.score]
  return high <= 0 || low >= high * NEWER_WITHIN
}

/**
 * The files in the order to show them for `query`: the search's order (by score), then rules 1–3. `dates` gives a
 * file's date (YYYY-MM-DD) where rule 2 needs it (newestWinsCandidates); a file without one keeps its place.
 */
export function orderForQuery<F extends RankedFile>(query: string, files: readonly F[], dates: ReadonlyMap<string, string | undefined> = new Map()): F[] {
  const terms = queryTerms(query)
  if (terms.length === 0) return [...files]
  const evidence = new Map(files.map((f) => [f.path, evidenceTerms(f, terms)]))
  const byScore = [...files].sort((a, b) => b.score - a.score)
  // Rule 1: echoes last, in their order; of the files without evidence, a note before a session's episode.
  const withEvidence = byScore.filter((f) => evidence.get(f.path)!.length > 0)
  const without = byScore.filter((f) => evidence.get(f.path)!.length === 0)
  const episodes = new Set(without.filter((f) => sessionEpisode(f) !== undefined))
  let order = [...withEvidence, ...without.filter((f) => !episodes.has(f)), ...episodes]
  // Rule 2: within each group of the same evidence and close scores, newest first, in the group's places.
  const dateOf = (f: F) => (f.path.startsWith('episodes/') ? /^episodes\/(\d{4}-\d{2}-\d{2})\//.exec(f.path)?.[1] : undefined) ?? dates.get(f.path)
  const sameSubject = subjects()
  const placed = new Set<string>()
  for (const [i, first] of order.entries()) {
    if (placed.has(first.path) || evidence.get(first.path)!.length === 0) continue
    const key = evidence.get(first.path)!.join(' ')
    const slots = order.flatMap((f, j) => (j >= i && !placed.has(f.path) && evidence.get(f.path)!.join(' ') === key && closeScores(first, f) && (f === first || sameSubject(first, f)) ? [j] : []))
    const group = slots.map((j) => order[j])
    group.forEach((f) => placed.add(f.path))
    if (group.length < 2 || group.some((f) => dateOf(f) === undefined)) continue
    const newest = [...group].sort((a, b) => (dateOf(b)! > dateOf(a)! ? 1 : dateOf(b)! < dateOf(a)! ? -1 : 0))
    order = order.map((f, j) => (slots.includes(j) ? newest[slots.indexOf(j)] : f))
  }
  // Rule 3: an episode goes after the notes it names, unless its own decisions are evidence.
  for (const [episode, parts] of order.flatMap((f) => {
    const parts = sessionEpisode(f)
    return parts && parts.sources.length > 0 ? [[f, parts] as const] : []
  })) {
    if (parts.decided.some((line) => !restatesQuery(line, terms) && terms.some((t) => containsTerm(line, t)))) continue
    const at = order.indexOf(episode)
    const lastSource = Math.max(-1, ...parts.sources.map((p) => order.findIndex((f) => f.path === p)))
    if (lastSource > at) order = [...order.slice(0, at), ...order.slice(at + 1, lastSource + 1), episode, ...order.slice(lastSource + 1)]
  }
  return order
}

/** Lines of a file that say nothing of their own: an episode's date, tags and refs, its `Summary:` label, a code fence. */
const LABEL_LINE = /^(?:(?:date|tags|refs):|summary:\s*$|```)/i

/**
 * The line(s) of a file that best answer a prompt: those holding the most of its terms (plural and verb endings
 * match), in the file's order; undefined when no line holds one. A session's episode offers only its own lines (what
 * it decided and learned), not those that restate the prompt. What the recall block shows of a file: its first line
 * ("the staging database password rotates monthly") says nothing about the prompt ("When does the staging deploy
 * run?") when another line answers it.
 */
export function answeringLines(file: Pick<RankedFile, 'path' | 'body'>, terms: readonly string[]): string | undefined {
  if (terms.length === 0) return undefined
  const episode = sessionEpisode(file)
  const lines = (episode ? [...episode.decided, ...episode.learned, ...episode.other].filter((line) => !restatesQuery(line, terms)) : file.body.split(/\r?\n/))
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#') && !LABEL_LINE.test(line))
    .map((line) => line.replace(/^(?:[-*+]\s+|>\s*)/, ''))
  let best = 0
  let chosen: string[] = []
  for (const line of lines) {
    const held = terms.filter((term) => containsTerm(line, term)).length
    if (held > best) [best, chosen] = [held, [line]]
    else if (held === best && held > 0) chosen.push(line)
  }
  return best === 0 ? undefined : chosen.join(' ')
}
