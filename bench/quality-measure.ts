/**
 * Retrieval quality, shared by the quality benches: a set of memory files and questions whose answering files are
 * known, asked of jarvis's `recall` (in process: recallRanking of src/ops/recall.ts, what `jarvis recall --limit 10` runs) in
 * each mode the code offers, and of plain SQLite FTS5 BM25 over the same files; recall@k for each.
 */
import {mkdir, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import Database from 'better-sqlite3'

import {recallRanking} from '../src/ops/recall.js'
import {recallBlock, resetSearchCache} from '../src/search/index.js'
import {initTree} from '../src/store/index.js'
import {table} from './stats.js'

export const KS = [1, 3, 5, 10] as const
export const LIMIT = 10

export interface Question {
  query: string
  /** Paths (relative to `.memory/`) of the files that answer it: found when one of them is in the top k. */
  answers: string[]
  /** A label to break the figures down by (LoCoMo's category). */
  group?: string
}

/** Files searched together (one tree) and the questions asked of them. */
export interface Corpus {
  files: Map<string, string>
  questions: Question[]
}

/** Each question's ranked paths, best first, at most LIMIT. */
export type Rankings = string[][]

/** How `recall` ranks: keyword only, or whatever it does by default (hybrid when an embedding model answers). */
export type RecallMode = 'keyword' | 'default'

export async function writeFiles(memory: string, files: Map<string, string>): Promise<void> {
  const dirs = new Set([...files.keys()].map((path) => dirname(join(memory, path))))
  for (const dir of dirs) await mkdir(dir, {recursive: true})
  for (const [path, text] of files) await writeFile(join(memory, path), text)
}

/** A jarvis tree at `dir` holding the corpus's files (no server: recall never needs one). */
export async function corpusTree(dir: string, files: Map<string, string>): Promise<string> {
  const {root} = await initTree(dir, {})
  await writeFiles(join(root, '.memory'), files)
  return root
}

export interface RecallRun {
  rankings: Rankings
  /** The same ranking before recall's block is cut to its character bound. */
  uncut: Rankings
  /** The mode recall said it used for every question ('hybrid' | 'keyword'), or 'mixed'. */
  mode: string
  /** recall's note when it answered keyword-only in default mode (why no embeddings). */
  note?: string
}

/**
 * One question asked as `jarvis recall --limit 10` asks it (recallRanking of src/ops/recall.ts: the search, then
 * recall's rules), keyword only as `JARVIS_EMBEDDINGS=off` makes it: the files its block shows, the ranking before
 * the block is cut to its character bound, the mode and the note.
 */
export async function jarvisRecall(root: string, query: string, mode: RecallMode): Promise<{shown: string[]; uncut: string[]; mode: string; note?: string}> {
  const before = process.env.JARVIS_EMBEDDINGS
  if (mode === 'keyword') process.env.JARVIS_EMBEDDINGS = 'off'
  try {
    const {result, ordered} = await recallRanking({dir: root, query, limit: LIMIT})
    const {hits} = recallBlock(ordered.map(({hit, summary}) => ({hit, summary})))
    return {shown: hits.map((hit) => hit.path), uncut: ordered.map((d) => d.path), mode: result.mode, ...(mode === 'default' && result.note ? {note: result.note} : {})}
  } finally {
    if (before === undefined) delete process.env.JARVIS_EMBEDDINGS
    else process.env.JARVIS_EMBEDDINGS = before
  }
}

/** Every question asked of `jarvis recall --limit 10` (jarvisRecall). */
export async function askRecall(root: string, questions: Question[], mode: RecallMode): Promise<RecallRun> {
  const rankings: Rankings = []
  const uncut: Rankings = []
  const modes = new Set<string>()
  let note: string | undefined
  for (const {query} of questions) {
    const asked = await jarvisRecall(root, query, mode)
    rankings.push(asked.shown)
    uncut.push(asked.uncut)
    modes.add(asked.mode)
    note ??= asked.note
  }
  return {rankings, uncut, mode: modes.size === 1 ? [...modes][0] : modes.size === 0 ? 'none' : 'mixed', note}
}

/** The words of a query as an FTS5 MATCH expression: each word quoted, OR-ed (any word matches, ranked by bm25). */
export function ftsQuery(query: string): string | undefined {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])]
  return words.length === 0 ? undefined : words.map((w) => `"${w}"`).join(' OR ')
}

/** The baseline: plain SQLite FTS5 (unicode61 tokenizer, default bm25()) over the same files' whole texts. */
export function askFts5(files: Map<string, string>, questions: Question[]): Rankings {
  const db = new Database(':memory:')
  try {
    db.exec('CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, body)')
    const insert = db.prepare('INSERT INTO docs (path, body) VALUES (?, ?)')
    db.transaction(() => {
      for (const [path, text] of files) insert.run(path, text)
    })()
    const search = db.prepare<[string, number], {path: string}>('SELECT path FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?')
    return questions.map(({query}) => {
      const match = ftsQuery(query)
      return match === undefined ? [] : search.all(match, LIMIT).map((row) => row.path)
    })
  } finally {
    db.close()
  }
}

/** The share of questions with an answering file among the first k of their ranking. */
export function recallAt(questions: Question[], rankings: Rankings, k: number): number {
  if (questions.length === 0) return Number.NaN
  let found = 0
  questions.forEach((q, i) => {
    if (rankings[i].slice(0, k).some((path) => q.answers.includes(path))) found++
  })
  return found / questions.length
}

export function fmt(value: number): string {
  return Number.isNaN(value) ? '—' : value.toFixed(3)
}

/** One system's figures over all the corpora of a set: every question's ranking, in the order of `questions`. */
export interface SystemResult {
  name: string
  rankings?: Rankings
  /** `recall` only: the ranking before its block was cut to the character bound. */
  uncut?: Rankings
  /** Why there are no figures (the mode is not available). */
  missing?: string
  /** Something the figures need said beside them (a mode that fell back for some questions). */
  note?: string
}

/** `| system | R@1 | R@3 | R@5 | R@10 |` for the systems given, over `questions`. */
export function recallTable(questions: Question[], systems: SystemResult[]): string {
  return table(
    ['system', ...KS.map((k) => `R@${k}`)],
    systems.map((s) => [s.name, ...KS.map((k, i) => (s.rankings ? fmt(recallAt(questions, s.rankings, k)) : i === 0 ? 'not available' : '—'))]),
  )
}

/** The lines under a recall table: why a mode is missing, and what recall's bounded block cut off. */
export function recallNotes(questions: Question[], systems: SystemResult[]): string[] {
  const lines: string[] = []
  for (const s of systems) if (s.missing ?? s.note) lines.push(`- ${s.name}: ${s.missing ?? s.note}.`)
  const cut = systems.filter((s) => s.rankings && s.uncut)
  if (cut.length > 0) {
    const shown = cut.map((s) => `${(s.rankings!.reduce((n, r) => n + r.length, 0) / Math.max(1, s.rankings!.length)).toFixed(1)} (${s.name})`).join(', ')
    const before = cut.map((s) => `${fmt(recallAt(questions, s.uncut!, LIMIT))} (${s.name})`).join(', ')
    lines.push(`- \`recall\`'s block is bounded in characters: of the ${LIMIT} files asked it showed ${shown} on average; the ranking before that cut has R@${LIMIT} ${before}.`)
  }
  return lines
}

/** `recallAt` for the questions of one group only. */
export function groupRecall(questions: Question[], rankings: Rankings, group: string, k: number): number {
  const picked = questions.map((q, i) => [q, rankings[i]] as const).filter(([q]) => q.group === group)
  return recallAt(
    picked.map(([q]) => q),
    picked.map(([, r]) => r),
    k,
  )
}

/** Closes the search indexes this process opened (between trees that are deleted afterwards). */
export function closeIndexes(): void {
  resetSearchCache()
}
