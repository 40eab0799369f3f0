/**
 * Memory-file search (issue 6) on 10,000 files: index build, incremental update after one edit, and query
 * latency on a warm index, side by side with `grep -ril` (and `rg -il` when installed) over the same files for
 * the same queries. grep and rg only list the files holding any of the words — no ranking, no snippets, no
 * fuzzy terms — so they are the floor a real index must be worth its keep against.
 * Standalone: `node --import tsx bench/search.ts`.
 */
import {execFileSync, spawnSync} from 'node:child_process'
import {appendFile, mkdtemp, rm, stat, utimes} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {performance} from 'node:perf_hooks'
import {pathToFileURL} from 'node:url'

import {INDEX_FILE, refreshSearchIndex, resetSearchCache, searchMemory} from '../src/search/index.js'
import {startServer} from '../src/server/start.js'
import {initTree} from '../src/store/index.js'
import {largeCorpus, QUERIES, writeCorpusFast} from '../test/search/corpus.js'
import {runJarvis, runProcess, startSyncWatch} from './process.js'
import {median, ms, table, type BenchSection} from './stats.js'

const FILES = 10_000
const QUERY_COUNT = 30
const ROUNDS = 5
const PROCESS_QUERIES = 15
const TOKEN = `bench-search-${process.pid}-${Date.now()}`

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

async function time<T>(fn: () => Promise<T>): Promise<{ms: number; value: T}> {
  const start = performance.now()
  const value = await fn()
  return {ms: performance.now() - start, value}
}

function chunks<T>(items: T[], size: number): T[][] {
  return Array.from({length: Math.ceil(items.length / size)}, (_, i) => items.slice(i * size, (i + 1) * size))
}

function hasTool(tool: string): boolean {
  return spawnSync(tool, ['--version'], {stdio: 'ignore'}).status === 0
}

/** The command line of one external search: every word an `-e` pattern (any word matches, like our OR query). */
function toolArgs(tool: 'grep' | 'rg', memory: string, query: string): string[] {
  const patterns = query.split(/\s+/).flatMap((w) => ['-e', w])
  return tool === 'grep' ? ['-ril', '-F', ...patterns, memory] : ['-il', '-F', ...patterns, memory]
}

/** One external search as a process (exit 1 is "nothing found", not a failure). */
function runTool(tool: 'grep' | 'rg', memory: string, query: string) {
  return runProcess(tool, toolArgs(tool, memory, query), {cwd: memory, alsoFine: [1]})
}

async function timeTool(tool: 'grep' | 'rg', memory: string, queries: string[]): Promise<number[]> {
  const durations: number[] = []
  for (const query of queries) durations.push((await runTool(tool, memory, query)).ms)
  return durations
}

export async function benchSearch(): Promise<BenchSection> {
  const dir = await mkdtemp(join(tmpdir(), 'jarvis-bench-search-'))
  let server: Awaited<ReturnType<typeof startServer>> | undefined
  try {
    // Synced with a real `jarvis serve`, so that a `jarvis sync --watch` can run in the tree (the warm path's row).
    server = await startServer({host: '127.0.0.1', port: 0, dataDir: join(dir, 'server'), tokens: {[TOKEN]: 'claude'}, logLevel: 'silent'})
    const {root} = await initTree(join(dir, 'tree'), {server: server.url, agent: 'claude'})
    const memory = join(root, '.memory')
    const files = largeCorpus(FILES)
    await writeCorpusFast(memory, files)
    // A real tree grew over months: files dated a day back, so the scan's stat hints hold (the racy-git window
    // makes every file written in the last 2 s be hashed again, which is not the case being measured).
    const dayAgo = new Date(Date.now() - 86_400_000)
    for (const chunk of chunks([...files.keys()], 64)) await Promise.all(chunk.map((path) => utimes(join(memory, path), dayAgo, dayAgo)))
    const queries = QUERIES.slice(0, QUERY_COUNT).map((q) => q.query)
    resetSearchCache()

    const build = await time(() => refreshSearchIndex(root))
    // SQLite in WAL mode: what this process wrote may still be in the -wal file beside the index.
    const indexBytes = (await Promise.all(['', '-wal'].map(async (suffix) => (await stat(join(root, '.nexus', INDEX_FILE + suffix)).catch(() => ({size: 0}))).size))).reduce((a, b) => a + b, 0)
    resetSearchCache()
    const load = await time(() => refreshSearchIndex(root)) // a new process: load the index, scan, nothing to re-index
    const edited = [...files.keys()][1234]
    await appendFile(join(memory, edited), '\nEdited for the benchmark.\n')
    const incremental = await time(() => refreshSearchIndex(root))
    const noop = await time(() => refreshSearchIndex(root))

    const warm: number[] = []
    const withScan: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      for (const query of queries) warm.push((await time(() => searchMemory(root, query, {limit: 10, embeddings: false, refresh: false}))).ms)
    }
    for (const query of queries) withScan.push((await time(() => searchMemory(root, query, {limit: 10, embeddings: false}))).ms)

    const rows: string[][] = [
      [`jarvis: warm index, ranked top 10 with snippets`, ms(median(warm)), ms(percentile(warm, 95))],
      [`jarvis: same, re-checking ${FILES.toLocaleString('en')} files for changes first`, ms(median(withScan)), ms(percentile(withScan, 95))],
    ]
    const grep = await timeTool('grep', memory, queries)
    rows.push([`\`grep -ril\` (unranked file list)`, ms(median(grep)), ms(percentile(grep, 95))])
    if (hasTool('rg')) {
      const rg = await timeTool('rg', memory, queries)
      rows.push([`\`rg -il\` (unranked file list)`, ms(median(rg)), ms(percentile(rg, 95))])
    } else rows.push(['`rg -il`', 'not installed', '—'])
    const grepVersion = execFileSync('grep', ['--version'], {encoding: 'utf8'}).split('\n')[0]

    // As a user runs them: `jarvis recall` (a new process: load the index, check the tree, rank) and `grep -ril`,
    // alternated query by query.
    // The same with a `jarvis sync --watch` running in the tree, which answers the call from its watched index (the
    // warm path, docs/decisions/warm-path.md); the cold row turns that off (JARVIS_WARM=off).
    const env = {...process.env, XDG_CONFIG_HOME: join(dir, 'xdg'), JARVIS_DIR: '', JARVIS_SERVER: '', JARVIS_TOKEN: TOKEN, JARVIS_WARM: '', NO_COLOR: '1', DEBUG: ''}
    const cold = {...env, JARVIS_WARM: 'off'}
    await runJarvis(['recall', queries[0]], {cwd: root, env: cold})
    const watch = await startSyncWatch(root, env)
    const recallRuns: number[] = []
    const warmRuns: number[] = []
    const grepRuns: number[] = []
    try {
      await runJarvis(['recall', queries[0]], {cwd: root, env})
      for (const query of queries.slice(0, PROCESS_QUERIES)) {
        recallRuns.push((await runJarvis(['recall', query, '--limit', '10'], {cwd: root, env: cold})).ms)
        warmRuns.push((await runJarvis(['recall', query, '--limit', '10'], {cwd: root, env})).ms)
        grepRuns.push((await runTool('grep', memory, query)).ms)
      }
    } finally {
      await watch.stop()
    }
    const vsGrep = (runs: number[]) => `${(median(runs) / median(grepRuns)).toFixed(2)}×`
    const processRows = [
      ['`jarvis recall <query>` (ranked top 10 with summaries)', ms(median(recallRuns)), ms(percentile(recallRuns, 95)), vsGrep(recallRuns)],
      ['`jarvis recall <query>` with `jarvis sync --watch` running in the tree', ms(median(warmRuns)), ms(percentile(warmRuns, 95)), vsGrep(warmRuns)],
      ['`grep -ril` (unranked file list)', ms(median(grepRuns)), ms(percentile(grepRuns, 95)), '1×'],
    ]

    const markdown = [
      `${FILES.toLocaleString('en')} memory files (${(indexBytes / 2 ** 20).toFixed(1)} MiB index in \`.nexus/search/index.sqlite\`), ${queries.length} queries × ${ROUNDS} rounds, keyword mode (no embeddings provider). ${grepVersion}.`,
      '',
      table(
        ['step', 'time', 'files re-indexed'],
        [
          ['index build (scan, hash, parse, index, save)', ms(build.ms), String(build.value.indexed)],
          ['first search of a new process (load index, scan)', ms(load.ms), String(load.value.indexed)],
          ['incremental update after editing one file', ms(incremental.ms), String(incremental.value.indexed)],
          ['no-op refresh (scan only)', ms(noop.ms), String(noop.value.indexed)],
        ],
      ),
      '',
      table(['query', 'median', 'p95'], rows),
      '',
      `Whole processes, as a user or an agent's hook runs them (warm index and disk cache, ${PROCESS_QUERIES} queries alternated; the cold row with \`JARVIS_WARM=off\`):`,
      '',
      table(['process', 'median', 'p95', 'vs grep'], processRows),
    ].join('\n')
    return {title: 'Memory-file search (10,000 files)', markdown}
  } finally {
    resetSearchCache()
    await server?.close()
    await rm(dir, {recursive: true, force: true})
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const section = await benchSearch()
  process.stdout.write(`## ${section.title}\n\n${section.markdown}\n`)
}
