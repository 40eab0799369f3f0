/**
 * Retrieval quality: how often `recall` brings the file that answers a question into its top k, beside plain SQLite
 * FTS5 BM25 over the same files in the same run. Questions are asked in process through recallRanking of src/ops/recall.ts
 * (what `jarvis recall --limit 10` runs, the same index and ranking), keyword-only and in the default mode
 * (hybrid when an embedding model answers; said "not available" otherwise).
 *
 * - LoCoMo, when the dataset is at hand (bench/quality-locomo.ts);
 * - the coding-memory set written for this project (test/fixtures/coding-memory, bench/quality-coding.ts);
 * - memory under use: the coding set's questions asked again after simulated agent sessions whose episodes the real
 *   hook wrote (bench/quality-use.ts).
 *
 * Standalone: `node --import tsx bench/quality.ts`. Quality does not depend on the machine's load; time does.
 */
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {basename, join} from 'node:path'
import {performance} from 'node:perf_hooks'
import {pathToFileURL} from 'node:url'

import {codingCorpus} from './quality-coding.js'
import {LOCOMO_CATEGORIES, loadLocomo, locomoPath} from './quality-locomo.js'
import {measureUnderUse} from './quality-use.js'
import {askFts5, askRecall, jarvisRecall, closeIndexes, type Corpus, corpusTree, fmt, groupRecall, KS, LIMIT, type Question, type Rankings, recallAt, recallNotes, recallTable, type SystemResult} from './quality-measure.js'
import {table, type BenchSection} from './stats.js'

/** A target the figures are reported against: `system`'s R@k at least `min`, or at least another system's R@k. */
interface Target {
  label: string
  met: boolean | undefined
}

function targetLines(targets: Target[]): string[] {
  return targets.map((t) => `- ${t.met === undefined ? '–' : t.met ? '✓' : '✗'} ${t.label}${t.met === undefined ? ' (not measured)' : ''}`)
}

/** The systems' rankings over several corpora (one tree each), questions in corpus order. */
export async function measureCorpora(corpora: Corpus[], work: string): Promise<{questions: Question[]; systems: SystemResult[]}> {
  const questions: Question[] = []
  const fts: Rankings = []
  const keyword: Rankings = []
  const keywordUncut: Rankings = []
  const hybrid: Rankings = []
  const hybridUncut: Rankings = []
  let missing: string | undefined
  let fellBack: string | undefined
  for (const [i, corpus] of corpora.entries()) {
    if (corpus.questions.length === 0) continue
    const root = await corpusTree(join(work, `corpus-${i}`), corpus.files)
    questions.push(...corpus.questions)
    fts.push(...askFts5(corpus.files, corpus.questions))
    const asked = await askRecall(root, corpus.questions, 'keyword')
    keyword.push(...asked.rankings)
    keywordUncut.push(...asked.uncut)
    if (missing === undefined) {
      // The default mode on one question first: hybrid when the code has an embedding model that answers.
      const probe = await jarvisRecall(root, corpus.questions[0].query, 'default')
      if (probe.mode === 'hybrid') {
        const both = await askRecall(root, corpus.questions, 'default')
        hybrid.push(...both.rankings)
        hybridUncut.push(...both.uncut)
        if (both.mode !== 'hybrid') fellBack ??= `some questions were answered keyword-only${both.note ? `: ${both.note.replace(/^keyword search only: /, '')}` : ''}`
      } else missing = `not available, the default mode answered keyword-only${probe.note ? `: ${probe.note.replace(/^keyword search only: /, '')}` : ''}`
    }
    closeIndexes()
  }
  return {
    questions,
    systems: [
      {name: 'SQLite FTS5 BM25 (words OR-ed)', rankings: fts},
      {name: '`recall`, keyword only', rankings: keyword, uncut: keywordUncut},
      missing === undefined ? {name: '`recall`, hybrid', rankings: hybrid, uncut: hybridUncut, ...(fellBack ? {note: fellBack} : {})} : {name: '`recall`, hybrid', missing},
    ],
  }
}

const at = (questions: Question[], system: SystemResult, k: number) => (system.rankings ? recallAt(questions, system.rankings, k) : undefined)

/** "keyword-only never below FTS5 BM25 at any k", and where it is below. */
function notBelow(questions: Question[], ours: SystemResult, theirs: SystemResult): Target {
  const label = `${ours.name}: never below FTS5 BM25 at any k`
  if (!ours.rankings || !theirs.rankings) return {label, met: undefined}
  const below = KS.filter((k) => recallAt(questions, ours.rankings!, k) < recallAt(questions, theirs.rankings!, k))
  const where = below.map((k) => `R@${k} ${fmt(recallAt(questions, ours.rankings!, k))} against ${fmt(recallAt(questions, theirs.rankings!, k))}`)
  return {label: below.length === 0 ? label : `${label} (below at ${where.join(', ')})`, met: below.length === 0}
}

function atLeast(questions: Question[], system: SystemResult, k: number, min: number): Target {
  const value = at(questions, system, k)
  return {label: `${system.name}: R@${k} ≥ ${min.toFixed(2)}${value === undefined ? '' : ` (${fmt(value)})`}`, met: value === undefined ? undefined : value >= min}
}

async function locomoPart(work: string): Promise<string> {
  const path = locomoPath()
  const started = performance.now()
  const locomo = loadLocomo(path)
  if (!locomo) {
    return `**LoCoMo**: skipped, the dataset is not at \`${path}\` (it is read from \`../shared/data/locomo10.zip\` beside the repository, or from the file JARVIS_BENCH_LOCOMO names; never copied into the repository).`
  }
  const {questions, systems} = await measureCorpora(locomo.corpora, join(work, 'locomo'))
  const [fts, keyword, hybrid] = systems
  const files = locomo.corpora.reduce((n, c) => n + c.files.size, 0)
  const groups = Object.keys(LOCOMO_CATEGORIES)
  const byGroup = table(
    ['category (R@5)', 'questions', ...systems.map((s) => s.name)],
    groups.map((g) => [LOCOMO_CATEGORIES[g], String(questions.filter((q) => q.group === g).length), ...systems.map((s) => (s.rankings ? fmt(groupRecall(questions, s.rankings, g, 5)) : '—'))]),
  )
  return [
    `**LoCoMo** (snap-research/locomo, read from its \`${basename(path)}\` as published): ${locomo.corpora.length} conversations, each session one memory file of its conversation's tree (${files} files), ${questions.length} questions of categories 1–4 with evidence; each asked of \`recall\` with \`--limit ${LIMIT}\` in its conversation's tree, and of FTS5 over the same files. Session-level recall@k: a question is found when one of its evidence sessions is among the first k files. The whole row took ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    '',
    recallTable(questions, systems),
    '',
    ...recallNotes(questions, systems),
    '',
    byGroup,
    '',
    'Targets:',
    ...targetLines([
      atLeast(questions, hybrid, 1, 0.8),
      atLeast(questions, hybrid, 5, 0.96),
      atLeast(questions, hybrid, 10, 0.98),
      notBelow(questions, keyword, fts),
    ]),
  ].join('\n')
}

async function codingPart(work: string): Promise<string> {
  const started = performance.now()
  const corpus = codingCorpus()
  const {questions, systems} = await measureCorpora([corpus], join(work, 'coding'))
  const [, keyword, hybrid] = systems
  return [
    `**Coding memory** (test/fixtures/coding-memory, written for this project): ${corpus.files.size} engineering notes of a fictional team in one tree, ${questions.length} questions each phrased in other words than the note that answers it. The whole row took ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    '',
    recallTable(questions, systems),
    '',
    ...recallNotes(questions, systems),
    '',
    'Targets:',
    ...targetLines([atLeast(questions, hybrid, 3, 0.9), {...atLeast(questions, keyword, 3, 0.9), label: `for reference, ${atLeast(questions, keyword, 3, 0.9).label}`}]),
  ].join('\n')
}

export async function benchQuality(): Promise<BenchSection> {
  const work = await mkdtemp(join(tmpdir(), 'jarvis-bench-quality-'))
  try {
    const parts = [await locomoPart(work), await codingPart(work), (await measureUnderUse(join(work, 'use'))).markdown]
    return {
      title: 'Quality',
      markdown: [
        `Each question asked in process as \`jarvis recall --limit ${LIMIT}\` asks it (src/ops/recall.ts: the search's index and ranking, then recall's rules: echoes last, the newer of two files on one thing first, an episode behind the note it repeats), keyword only (embeddings off) and in the default mode (hybrid when an embedding model answers); beside plain SQLite FTS5 (unicode61 tokenizer, default \`bm25()\`, the question's words OR-ed) over the same files, in the same run. R@k: the share of questions with an answering file among the first k.`,
        '',
        ...parts.flatMap((part) => [part, '']),
      ].join('\n').trimEnd(),
    }
  } finally {
    closeIndexes()
    await rm(work, {recursive: true, force: true})
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const section = await benchQuality()
  process.stdout.write(`## ${section.title}\n\n${section.markdown}\n`)
}
