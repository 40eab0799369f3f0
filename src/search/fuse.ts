/** Reciprocal rank fusion (Cormack, Clarke & Büttcher 2009): score(d) = Σ 1 / (k + rank_i(d)), rank from 1. */
export const RRF_K = 60

export function reciprocalRankFusion(rankings: string[][], k = RRF_K): Array<{id: string; score: number}> {
  const scores = new Map<string, number>()
  for (const ranking of rankings) {
    ranking.forEach((id, index) => scores.set(id, (scores.get(id) ?? 0) + 1 / (k + index + 1)))
  }
  return [...scores].map(([id, score]) => ({id, score})).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}
