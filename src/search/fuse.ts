/** Reciprocal rank fusion (Cormack, Clarke & Büttcher 2009): score(d) = Σ 1 / (k + rank_i(d)), rank from 1. */
export const RRF_K = 60

export function reciprocalRankFusion(rankings: string[][], k = RRF_K): Array<{id: string; score: number}> {
  const scores = new Map<string, number>()
  for (const ranking of rankings) {
    ranking.forEach((id, index) => scores.set(id, (scores.get(id) ?? 0) + 1 / (k + index + 1)))
  }
  return [...scores].map(([id, score]) => ({id, score})).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

/**
 * How much the keyword score weighs in a hybrid ranking of two lists (a remote model); the semantic score weighs the
 * rest. Measured with the built-in model before it had the word match (docs/decisions/embeddings.md): 0.6 was best
 * or within 0.005 of it at every k, and the keyword side keeps the larger share because it is the stronger ranker.
 */
export const KEYWORD_WEIGHT = 0.6

/**
 * The built-in model's three signals: keyword score, best chunk's similarity, word-by-word match. Chosen on one half
 * of each quality set's questions and checked on the other half (docs/decisions/embeddings.md): the grid's best on
 * either half gave the keywords 0.4 and split the rest between the two meaning signals (0.2/0.4 and 0.4/0.2); the
 * even split is used.
 */
export const BUILTIN_WEIGHTS = {keyword: 0.4, semantic: 0.3, words: 0.3} as const

/**
 * The built-in model's similarities are min–max scaled over a range of at least this: a query the model knows
 * nothing of (a typo, a code name) is about as similar to every file (0.29 against 0.30), and scaled over that
 * hair's breadth the least unlike file would get the whole semantic weight. Measured on both quality sets: no
 * recall@k moved by more than 0.006 (docs/decisions/embeddings.md).
 */
export const BUILTIN_MIN_SPREAD = 0.2

/**
 * A hybrid hit scoring under this share of the best one is left out: so far below the best, what it has is a
 * similarity about that of every other file (a typo's, a code name's). No recall@k of either quality set lost a hit to it.
 */
export const MIN_SHARE_OF_BEST = 0.1

const best = (scores: Iterable<number>) => Math.max(0, ...scores)

/**
 * Convex combination of scored rankings (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid
 * Retrieval", 2023): each list's scores brought to [0, 1] over the candidates (keyword scores and word-match scores
 * divided by their best, a file a list does not score scoring 0; similarities min–max over the candidates, over a
 * range of at least `minSpread`), then
 * `weight · keyword + words.weight · words + (1 − weight − words.weight) · semantic`. Unlike reciprocal rank fusion
 * it keeps how far apart the scores are, so a weaker ranking nudges the keyword one instead of overruling it.
 * The candidates are the files of `keyword` and `semantic`. PURE.
 */
export function convexFusion(
  keyword: ReadonlyArray<{path: string; score: number}>,
  semantic: ReadonlyArray<{path: string; score: number}>,
  weight = KEYWORD_WEIGHT,
  words?: {scores: ReadonlyMap<string, number>; weight: number},
  minSpread = 0,
): Array<{path: string; score: number}> {
  const keywordScores = new Map(keyword.map(({path, score}) => [path, score]))
  const semanticScores = new Map(semantic.map(({path, score}) => [path, score]))
  const bestKeyword = best(keywordScores.values())
  const bestWords = words ? best(words.scores.values()) : 0
  const wordWeight = words?.weight ?? 0
  const low = semantic.length > 0 ? Math.min(...semanticScores.values()) : 0
  const high = semantic.length > 0 ? Math.max(...semanticScores.values()) : 0
  const paths = new Set([...keywordScores.keys(), ...semanticScores.keys()])
  return [...paths]
    .map((path) => {
      const k = bestKeyword > 0 ? (keywordScores.get(path) ?? 0) / bestKeyword : 0
      const s = high > low ? ((semanticScores.get(path) ?? low) - low) / Math.max(high - low, minSpread) : 0
      const w = bestWords > 0 ? (words?.scores.get(path) ?? 0) / bestWords : 0
      return {path, score: weight * k + (1 - weight - wordWeight) * s + wordWeight * w}
    })
    .sort((a, b) => b.score - a.score || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}
