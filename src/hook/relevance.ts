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
 *    A session's episode counts only its own lines, not those that restate the prompt (src/ops/recall-rules.ts).
 * 2. **Score**: its BM25 score is at least {@link MIN_RELATIVE_SCORE} of the best score among the files that pass
 *    rule 1 and are not sessions' episodes (among those when nothing else passes): an episode's score counts the prompt's words that earlier
 *    sessions wrote into it, so it never sets the bar a note must reach.
 *
 * A prompt with no term left after the filters (a greeting, "ok", "continue") shows nothing.
 */
import {answeringLines, containsTerm, coveragePoints, MIN_TERM_LENGTH, promptTerms, queryTerms, type RankedFile, sessionEpisode} from '../ops/recall-rules.js'

export {answeringLines, containsTerm, coveragePoints, MIN_TERM_LENGTH, promptTerms, queryTerms}

export const MIN_COVERAGE_POINTS = 2
export const MIN_RELATIVE_SCORE = 0.3

export type CandidateFile = RankedFile

/**
 * True when a file is another project's than the tree's: its front matter names a project (`project: shop`, as every
 * session's episode and project summary does) and the tree's is another. A file naming none (`PROJECT_MEMORY.md`, most
 * notes) is the workspace's, the same for every project of it. The hooks show the session only its project's files
 * and the workspace's, as the server shows it only the events of its project's scope.
 */
export function ofAnotherProject(fileProject: string | undefined, project: string | undefined): boolean {
  return fileProject !== undefined && project !== undefined && fileProject !== project
}

/** The candidates that pass both rules, best score first. */
export function relevantFiles<F extends CandidateFile>(prompt: string, candidates: F[]): F[] {
  const terms = queryTerms(prompt)
  if (terms.length === 0 || candidates.length === 0) return []
  const covered = candidates.filter((c) => coveragePoints(c, terms) >= MIN_COVERAGE_POINTS)
  if (covered.length === 0) return []
  const notes = covered.filter((c) => !sessionEpisode(c))
  const best = Math.max(...(notes.length > 0 ? notes : covered).map((c) => c.score))
  return covered.filter((c) => c.score >= best * MIN_RELATIVE_SCORE).sort((a, b) => b.score - a.score)
}
