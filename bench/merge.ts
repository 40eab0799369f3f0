import {execFile} from 'node:child_process'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {cpus, tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {diff3Merge} from 'node-diff3'
import {mergeText, splitLines} from '../src/merge/markdown.js'
import {mergeTranscript} from '../src/merge/transcript.js'
import type {UniversalMessage} from '../src/merge/types.js'

export type {BenchSection} from './stats.js'
import type {BenchSection} from './stats.js'

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..')

/**
 * The seed 002 `computeAppendOnlyDiff`, kept here only as the baseline: for every source
 * message, `some()` over the whole target — quadratic.
 */
export function seedAppendOnlyDiff(source: UniversalMessage[], target: UniversalMessage[]): {operations: Array<{type: 'insert'; message: UniversalMessage}>; hasChanges: boolean} {
  const operations: Array<{type: 'insert'; message: UniversalMessage}> = []
  for (const sourceMsg of source) {
    const exists = target.some((targetMsg) => sourceMsg.role === targetMsg.role && sourceMsg.content?.text === targetMsg.content?.text)
    if (!exists) operations.push({type: 'insert', message: sourceMsg})
  }
  return {operations, hasChanges: operations.length > 0}
}

/** Deterministic data, so two runs of the benchmark measure the same work. */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = Math.imul(state ^ (state >>> 15), state | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

async function median(runs: number, task: () => unknown): Promise<number> {
  await task()
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    await task()
    times.push(performance.now() - start)
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)]
}

const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1))
const ratio = (slow: number, fast: number) => `${(slow / fast).toFixed(slow / fast < 10 ? 1 : 0)}×`

function conversation(perSide: number): {local: UniversalMessage[]; remote: UniversalMessage[]} {
  const next = random(2)
  const say = (role: string, text: string, provider: string): UniversalMessage => ({role, type: 'message', content: {text}, metadata: {provider}})
  const shared = Array.from({length: Math.round(perSide * 0.8)}, (_, i) => say(i % 2 ? 'assistant' : 'user', next() < 0.05 ? 'continue' : `turn ${i}: ${next()}`, 'claude'))
  const tail = (provider: string) => Array.from({length: perSide - shared.length}, (_, i) => say(i % 2 ? 'assistant' : 'user', `${provider} ${i}: ${next()}`, provider))
  return {local: [...shared, ...tail('claude')], remote: [...shared.map((m) => ({...m, metadata: {provider: 'gemini'}})), ...tail('gemini')]}
}

async function benchTranscripts(): Promise<string> {
  const rows: string[] = []
  for (const [perSide, runs, seedRuns] of [
    [1000, 30, 10],
    [10_000, 15, 3],
  ]) {
    const {local, remote} = conversation(perSide)
    const ours = await median(runs, () => mergeTranscript(local, remote))
    const seed = await median(seedRuns, () => seedAppendOnlyDiff(remote, local))
    rows.push(`| ${perSide.toLocaleString('en-US')} | ${ms(ours)} ms (${runs} runs) | ${ms(seed)} ms (${seedRuns} runs) | ${ratio(seed, ours)} |`)
  }
  return [
    '**Transcript merge** — two sessions with an 80 % shared prefix; each side adds 20 % of its own.',
    '',
    '| messages per side | jarvis `mergeTranscript` (median) | seed 002 `computeAppendOnlyDiff` with `some()` (median) | seed ÷ jarvis |',
    '| ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n')
}

/** A 5,000-line memory file with headings, bullets and many blank lines; 50 edits per side in alternate 100-line bands, so the merge is clean. */
function markdownCase(): {base: string; local: string; remote: string} {
  const next = random(5)
  const pick = (n: number) => Math.floor(next() * n)
  const kinds = [() => '', () => '', () => '', () => `## Section ${pick(200)}`, () => `- item ${pick(500)}`, () => `- item ${pick(500)}`]
  const base = Array.from({length: 5000}, () => (next() < 0.4 ? `Notes on topic ${pick(3000)}: the team agreed to keep it.` : kinds[pick(kinds.length)]()))
  const edit = (band: number) => {
    const lines = [...base]
    const at = Array.from({length: 50}, (_, i) => (2 * i + band) * 50 + pick(40) + 5).sort((a, b) => b - a)
    for (const line of at) {
      const op = pick(3)
      if (op === 0) lines.splice(line, 1)
      else if (op === 1) lines[line] = `edited on side ${band}: ${pick(1e6)}`
      else lines.splice(line, 0, `added on side ${band}: ${pick(1e6)}`)
    }
    return `${lines.join('\n')}\n`
  }
  return {base: `${base.join('\n')}\n`, local: edit(0), remote: edit(1)}
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, {maxBuffer: 64 * 1024 * 1024}, (error, stdout) => {
      const code = (error as {code?: unknown} | null)?.code
      if (error && typeof code !== 'number') reject(error)
      else resolve(stdout)
    })
  })
}

/** Our merge as a stand-alone script (bundled with esbuild), so its whole-process time compares fairly with git's. */
async function bundleMerge(dir: string): Promise<string | null> {
  try {
    const {build} = await import('esbuild')
    const outfile = join(dir, 'merge.mjs')
    const contents = [
      `import {readFileSync} from 'node:fs'`,
      `import {mergeText} from './src/merge/markdown.ts'`,
      `const [base, local, remote] = process.argv.slice(2).map((file) => readFileSync(file, 'utf8'))`,
      `process.stdout.write(mergeText(base, local, remote).merged)`,
    ].join('\n')
    await build({stdin: {contents, resolveDir: repoRoot, loader: 'ts'}, bundle: true, platform: 'node', format: 'esm', outfile, logLevel: 'silent'})
    return outfile
  } catch {
    return null
  }
}

async function benchMarkdown(): Promise<string> {
  const {base, local, remote} = markdownCase()
  const dir = await mkdtemp(join(tmpdir(), 'jarvis-bench-'))
  try {
    const files = {base: join(dir, 'base.md'), local: join(dir, 'local.md'), remote: join(dir, 'remote.md')}
    await Promise.all([writeFile(files.base, base), writeFile(files.local, local), writeFile(files.remote, remote)])
    const ours = mergeText(base, local, remote)
    const gitArgs = ['merge-file', '-p', files.local, files.base, files.remote]
    const git = await run('git', gitArgs).catch(() => null)
    const inProcess = await median(20, () => mergeText(base, local, remote))
    const gitProcess = git === null ? Number.NaN : await median(10, () => run('git', gitArgs))
    const nodeStart = await median(10, () => run(process.execPath, ['-e', '']))
    const bundle = await bundleMerge(dir)
    const ourProcess = bundle ? await median(10, () => run(process.execPath, [bundle, files.base, files.local, files.remote])) : null
    const lines = [splitLines(local), splitLines(base), splitLines(remote)] as const
    const start = performance.now()
    diff3Merge(...lines)
    const nodeDiff3 = performance.now() - start
    const rows = [
      `| jarvis \`mergeText\`, in process | ${ms(inProcess)} ms | 20 |`,
      ourProcess === null
        ? '| jarvis `mergeText`, whole process | (esbuild not available) | – |'
        : `| jarvis \`mergeText\`, whole process (\`node merge.mjs\`, bundled) | ${ms(ourProcess)} ms | 10 |`,
      `| \`node -e ""\` alone (Node start-up) | ${ms(nodeStart)} ms | 10 |`,
      git === null ? '| `git merge-file -p`, whole process | (git not installed) | – |' : `| \`git merge-file -p\`, whole process | ${ms(gitProcess)} ms | 10 |`,
      `| node-diff3 \`diff3Merge\` on the same lines, in process | ${ms(nodeDiff3)} ms | 1 |`,
    ]
    const verdict =
      git === null ? 'git not installed' : ours.conflicts.length === 0 && ours.merged === git ? 'both clean, byte-identical results' : 'results differ (investigate)'
    return [
      `**Markdown three-way merge** — ${splitLines(base).length.toLocaleString('en-US')} lines (40 % prose, 30 % blank), 50 scattered edits per side; ${verdict}.`,
      '',
      '| measurement | median | runs |',
      '| --- | ---: | ---: |',
      ...rows,
      '',
      `git's figure includes its process start-up. As whole processes, jarvis takes ${ourProcess === null ? 'n/a' : ratio(ourProcess, gitProcess)} git's time, ` +
        `of which Node's own start-up is ${ms(nodeStart)} ms; the merge itself (in process) takes ${ratio(inProcess, gitProcess)} git's whole-process time. ` +
        `node-diff3's LCS takes ${ratio(nodeDiff3, inProcess)} jarvis's in-process time on this file (blank lines form huge equivalence classes).`,
    ].join('\n')
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
}

export async function benchMerge(): Promise<BenchSection> {
  const transcripts = await benchTranscripts()
  const markdown = await benchMarkdown()
  const machine = `Node ${process.version}, ${cpus().length} CPU(s), medians after one warm-up run, timed with \`performance.now()\`.`
  return {title: 'Merge rules', markdown: [machine, '', transcripts, '', markdown].join('\n')}
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const section = await benchMerge()
  process.stdout.write(`## ${section.title}\n\n${section.markdown}\n`)
}
