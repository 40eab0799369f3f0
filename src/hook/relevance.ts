/**
 * The relevance threshold of the prompt hook: which search hits are worth putting in front of the model. PURE.
 *
 * BM25 always finds something (prefix and fuzzy terms match a word or two of almost any prompt), so the ranking
 * alone cannot say "nothing here". A hit is shown only when BOTH hold:
 *
 * 1. **Coverage**: the file contains words of the prompt itself — not fuzzy neighbours. Each distinct prompt
 *    term (lower-cased, at least 3 characters, not a stop word or a conversational filler word) earns
 *    2 points when it is in the file's title, tags or path, else 1 point when it is in the body. A term also
 *    matches with a plural or verb ending (`certificates` finds `certificate`, `fail` finds `failing`). The hit needs
 *    at least {@link MIN_COVERAGE_POINTS} points: two prompt words in the body, or one in the title/tags/path.
 * 2. **Score**: its BM25 score is at least {@link MIN_RELATIVE_SCORE} of the best score among the hits that
 *    pass rule 1 (the tail of the ranking, files that share a word or two with a better match, is left out).
 *
 * A prompt with no term left after the filters (a greeting, "ok", "continue") shows nothing.
 */

export const MIN_COVERAGE_POINTS = 2
export const MIN_RELATIVE_SCORE = 0.3
/** Terms shorter than this are ignored (`a`, `is`, `db` match too much by chance). */
export const MIN_TERM_LENGTH = 3

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

/** The distinct terms of a prompt that can show relevance. */
export function promptTerms(prompt: string): string[] {
  const words = prompt.toLowerCase().split(/[^\p{L}\p{N}_]+/u)
  return [...new Set(words.filter((w) => w.length >= MIN_TERM_LENGTH && !IGNORED.has(w) && !/^\d+$/.test(w)))]
}

function escape(term: string): string {
  return term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * True when `term` is a word of `text`, allowing the endings of a plural or a verb form: `certificates` finds
 * `certificate`, `pgbouncer` finds `pgbouncers`, `fail` finds `failing` — but `write` does not find `writer`.
 */
export function containsTerm(text: string, term: string): boolean {
  const stem = term.length >= 5 && /[^s]s$/.test(term) ? term.slice(0, -1) : term
  return new RegExp(`(?:^|[^\\p{L}\\p{N}])${escape(stem)}(?:s|es|ed|d|ing)?(?![\\p{L}\\p{N}])`, 'iu').test(text)
}

export interface CandidateFile {
  path: string
  score: number
  title?: string
  tags: string[]
  body: string
}

/** Coverage points of one file for the prompt's terms (rule 1). */
export function coveragePoints(file: Omit<CandidateFile, 'score'>, terms: string[]): number {
  const strong = [file.title ?? '', file.tags.join(' '), file.path.replace(/[/_.-]+/g, ' ')].join('\n')
  let points = 0
  for (const term of terms) {
    if (containsTerm(strong, term)) points += 2
    else if (containsTerm(file.body, term)) points += 1
  }
  return points
}

/** The candidates that pass both rules, best first. */
export function relevantFiles<F extends CandidateFile>(prompt: string, candidates: F[]): F[] {
  const terms = promptTerms(prompt)
  if (terms.length === 0 || candidates.length === 0) return []
  const covered = candidates.filter((c) => coveragePoints(c, terms) >= MIN_COVERAGE_POINTS)
  if (covered.length === 0) return []
  const best = Math.max(...covered.map((c) => c.score))
  return covered.filter((c) => c.score >= best * MIN_RELATIVE_SCORE).sort((a, b) => b.score - a.score)
}
