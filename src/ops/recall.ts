import {checkRecallLimit, recallBlock, type RecallResult, searchDocuments, type SearchedDocument, type SearchOptions, type SearchResult} from '../search/index.js'
import {findRoot} from '../store/root.js'
import {readMemoryFile} from '../store/tree.js'
import {answeringLines, evidenceTerms, newestWinsCandidates, orderForQuery, queryTerms, type RankedFile, sessionEpisode} from './recall-rules.js'

export type {RecallResult} from '../search/index.js'

export interface RecallInput {
  dir?: string
  query: string
  limit?: number
  tags?: string[]
  prefix?: string
  since?: string
}

/**
 * How many of the search's best files recall weighs before it keeps `limit`: rules 1 and 3 of recall-rules.ts move
 * episodes behind notes, so a note the search ranked a little lower must still be among them.
 */
export const RECALL_POOL = 30
/** The search is asked for at most this many files when echoes fill its first answers (searchPastEchoes). */
export const MAX_POOL = 320

/**
 * The search's best `pool` documents for `query` — more, doubling, while fewer than `want` of them are anything but
 * echoes (sessions' episodes with no evidence for the query, recall-rules.ts rule 1): episodes of earlier versions
 * repeat a question in their title and outrank the note that answers it, a hundred sessions deep. In a tree without
 * such episodes this is one search. `leaveOut` takes documents out (the prompt hook: another project's files), and
 * more are asked for while they fill the answers too.
 */
export async function searchPastEchoes(
  root: string,
  query: string,
  options: SearchOptions & {pool: number; want: number; terms?: string[]; leaveOut?: (document: SearchedDocument) => boolean},
): Promise<{result: SearchResult; documents: SearchedDocument[]}> {
  const {pool, want, terms = queryTerms(query), leaveOut, ...search} = options
  let limit = pool
  for (;;) {
    const searched = await searchDocuments(root, query, {...search, limit})
    const found = leaveOut ? {...searched, documents: searched.documents.filter((d) => !leaveOut(d))} : searched
    const echoes = found.documents.filter((d) => {
      const file = {path: d.hit.path, title: d.title, tags: d.tags, body: d.body}
      return sessionEpisode(file) !== undefined && evidenceTerms(file, terms).length === 0
    }).length
    if (found.documents.length - echoes >= want || found.result.hits.length < limit || limit >= MAX_POOL || terms.length === 0) {
      const documents = await withRepeatedNotes(root, query, found.documents, {...search, want, terms})
      return {result: found.result, documents: leaveOut ? documents.filter((d) => !leaveOut(d)) : documents}
    }
    limit = Math.min(MAX_POOL, limit * 2)
  }
}

/**
 * Rule 3 of recall-rules.ts for a note the search ranked outside the pool: a session's episode among the first `want`
 * files with evidence that repeats a note it names under `## Memory used` (the note holds every query term the
 * episode holds) brings that note in, at the episode's score, when the note matches the query and the filters.
 * Sessions that were given the same note and repeated it outrank it by their number alone (two hundred of them rank
 * it last); rule 3 then puts them behind it. A note the episode only names (shown to the session, not what it said)
 * is left where the search put it.
 */
async function withRepeatedNotes(
  root: string,
  query: string,
  documents: readonly SearchedDocument[],
  options: SearchOptions & {want: number; terms: string[]},
): Promise<SearchedDocument[]> {
  const {want, terms, ...search} = options
  const fileOf = (d: SearchedDocument) => ({path: d.hit.path, title: d.title, tags: d.tags, body: d.body})
  const present = new Set(documents.map((d) => d.hit.path))
  const missing = new Map<string, {episode: SearchedDocument; evidence: string[]}>()
  let withEvidence = 0
  for (const document of documents) {
    if (withEvidence >= want) break
    const evidence = evidenceTerms(fileOf(document), terms)
    if (evidence.length === 0) continue
    withEvidence++
    for (const source of sessionEpisode(fileOf(document))?.sources ?? []) {
      if (!present.has(source) && !missing.has(source) && (!search.prefix || source.startsWith(search.prefix))) missing.set(source, {episode: document, evidence})
    }
  }
  if (missing.size === 0) return [...documents]
  const added = new Map<SearchedDocument, SearchedDocument[]>()
  for (const [source, {episode, evidence}] of [...missing].slice(0, want)) {
    // The index was brought up to date by the search that made the pool.
    const [note] = (await searchDocuments(root, query, {...search, prefix: source, limit: 1, refresh: false})).documents
    if (note?.hit.path !== source) continue
    const holds = new Set(evidenceTerms(fileOf(note), terms))
    if (evidence.every((term) => holds.has(term))) added.set(episode, [...(added.get(episode) ?? []), {...note, hit: {...note.hit, score: episode.hit.score}}])
  }
  return documents.flatMap((d) => [...(added.get(d) ?? []), d])
}

/** The date (YYYY-MM-DD) of each file, from its front matter or path (search/document.ts), read for these paths only. */
export async function fileDates(root: string, paths: readonly string[]): Promise<Map<string, string | undefined>> {
  if (paths.length === 0) return new Map()
  const {toSearchDocument} = await import('../search/document.js')
  const texts = await Promise.all(paths.map((path) => readMemoryFile(root, path)))
  return new Map(paths.map((path, i) => [path, texts[i] === null ? undefined : toSearchDocument(path, texts[i]!).date]))
}

/** The search's documents in recall's order for `query` (recall-rules.ts), each with its ranked fields. */
export async function orderDocuments(root: string, query: string, documents: readonly SearchedDocument[]): Promise<Array<SearchedDocument & RankedFile>> {
  const ranked = documents.map((d) => ({...d, path: d.hit.path, score: d.hit.score}))
  return orderForQuery(query, ranked, await fileDates(root, newestWinsCandidates(query, ranked)))
}

/**
 * `jarvis recall`: the `[MEMORY CONTEXT]` block for the memory files that best match `query`. Files only, which are
 * always on this machine: it never needs the server (`memory search` adds the shared event log, and stops with
 * exit 3 when that cannot be read). The search's ranking, then recall's rules: an episode's echo of the query is no
 * evidence, the newer of two files on the same thing goes first, an episode goes after the note it repeats.
 */
export async function recallMemory(input: RecallInput): Promise<RecallResult> {
  const {result, ordered} = await recallRanking(input)
  // Each file by the line(s) that answer the query, as the prompt hook shows it, else by what it is about.
  const terms = queryTerms(input.query)
  const summaryOf = (d: SearchedDocument) => answeringLines({path: d.hit.path, body: d.body}, terms) ?? d.summary
  return {...recallBlock(ordered.map((d) => ({hit: d.hit, summary: summaryOf(d)}))), mode: result.mode, ...(result.model ? {model: result.model} : {}), ...(result.note ? {note: result.note} : {})}
}

/** Recall's files in its order, at most `limit`, before its block is cut to its character bound; and the search's result. */
export async function recallRanking(input: RecallInput): Promise<{result: SearchResult; ordered: Array<SearchedDocument & RankedFile>}> {
  // The tree's root only: its config (and the schemas that check it) says nothing a recall uses.
  const root = findRoot(process.cwd(), input.dir)
  const limit = checkRecallLimit(input.limit)
  const {result, documents} = await searchPastEchoes(root, input.query, {pool: Math.max(limit, RECALL_POOL), want: limit, tags: input.tags, prefix: input.prefix, since: input.since})
  return {result, ordered: (await orderDocuments(root, input.query, documents)).slice(0, limit)}
}
