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
 * How much the keyword score weighs in a hybrid ranking; the semantic score weighs the rest. Measured on LoCoMo and
 * the coding-memory set (docs/decisions/embeddings.md): 0.6 was best or within 0.005 of it at every k for the
 * built-in model, and the keyword side keeps the larger share because it is the stronger ranker of the two.
 */
export const KEYWORD_WEIGHT = 0.6

/**
 * Convex combination of two scored rankings (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid
 * Retrieval", 2023): each list's scores brought to [0, 1] over the candidates (keyword scores divided by the best,
 * a file the keywords do not match scoring 0; similarities min–max over the candidates), then
 * `weight · keyword + (1 − weight) · semantic`. Unlike reciprocal rank fusion it keeps how far apart the scores
 * are, so a weaker semantic ranking nudges the keyword one instead of overruling it. PURE.
 */
export function convexFusion(keyword: ReadonlyArray<{path: string; score: number}>, semantic: ReadonlyArray<{path: string; score: number}>, weight = KEYWORD_WEIGHT): Array<{path: string; score: number}> {
  const keywordScores = new Map(keyword.map(({path, score}) => [path, score]))
  const semanticScores = new Map(semantic.map(({path, score}) => [path, score]))
  const best = Math.max(0, ...keywordScores.values())
  const low = semantic.length > 0 ? Math.min(...semanticScores.values()) : 0
  const high = semantic.length > 0 ? Math.max(...semanticScores.values()) : 0
  const paths = new Set([...keywordScores.keys(), ...semanticScores.keys()])
  return [...paths]
    .map((path) => {
      const k = best > 0 ? (keywordScores.get(path) ?? 0) / best : 0
      const s = high > low ? ((semanticScores.get(path) ?? low) - low) / (high - low) : 0
      return {path, score: weight * k + (1 - weight) * s}
    })
    .sort((a, b) => b.score - a.score || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}
