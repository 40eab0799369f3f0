/**
 * Start-up (issue 11): each hot command as a whole process, as a user, a git hook or an agent's hook runs it,
 * beside `node -e 0` — the floor every Node program pays — alternated in one run so that both see the same
 * machine. A tree of 1,000 memory files synced with a real `jarvis serve` on 127.0.0.1.
 * Standalone: `node --import tsx bench/startup.ts`.
 */
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {startServer} from '../src/server/start.js'
import {initTree} from '../src/store/index.js'
import {largeCorpus, writeCorpusFast} from '../test/search/corpus.js'
import {jarvisBin, runProcess, startSyncWatch} from './process.js'
import {median, ms, table, type BenchSection} from './stats.js'

const FILES = 1_000
const RUNS = 15
const TOKEN = `bench-startup-${process.pid}-${Date.now()}`
const bin = jarvisBin
/** The calls a running `jarvis sync --watch` answers (by their labels below). */
const WARM_CALLS = new Set(['`jarvis memory ls`', '`jarvis recall`', '`jarvis hook prompt` (an agent, every prompt)'])

async function timedProcess(args: string[], cwd: string, env: NodeJS.ProcessEnv, input = ''): Promise<number> {
  return (await runProcess(process.execPath, args, {cwd, env, input})).ms
}

export async function benchStartup(): Promise<BenchSection> {
  const work = await mkdtemp(join(tmpdir(), 'jarvis-bench-startup-'))
  const server = await startServer({host: '127.0.0.1', port: 0, dataDir: join(work, 'server'), tokens: {[TOKEN]: 'claude'}, logLevel: 'silent'})
  try {
    const {root} = await initTree(join(work, 'tree'), {server: server.url, agent: 'claude', project: 'bench'})
    await writeCorpusFast(join(root, '.memory'), largeCorpus(FILES))
    const env: NodeJS.ProcessEnv = {...process.env, JARVIS_TOKEN: TOKEN, JARVIS_AGENT: 'claude', JARVIS_SERVER: '', JARVIS_DIR: '', XDG_CONFIG_HOME: join(work, 'xdg'), NO_COLOR: '1', DEBUG: ''}
    const prompt = JSON.stringify({session_id: 'bench', cwd: root, hook_event_name: 'UserPromptSubmit', prompt: 'how do we roll out pgbouncer?'})
    const cases: Array<{label: string; args: string[]; input?: string}> = [
      {label: '`jarvis --version`', args: [bin, '--version']},
      {label: '`jarvis memory ls`', args: [bin, 'memory', 'ls']},
      {label: '`jarvis memory snapshot` (online)', args: [bin, 'memory', 'snapshot']},
      {label: '`jarvis memory append` (online)', args: [bin, 'memory', 'append', '--kind', 'log', '--key', 'log:bench', '--content', 'A benchmark event.']},
      {label: '`jarvis recall`', args: [bin, 'recall', 'pgbouncer rollout']},
      {label: '`jarvis hook prompt` (an agent, every prompt)', args: [bin, 'hook', 'prompt', '--agent', 'claude'], input: prompt},
      {label: 'no-op `jarvis sync`', args: [bin, 'sync', '--quiet']},
    ]
    // Warm the disk cache, the search index and the first sync once, unmeasured.
    for (const c of cases) await timedProcess(c.args, root, env, c.input)
    /** One row: the call with `env`, `node -e 0` and the call with `other`, alternated, RUNS times (medians). */
    async function row(c: (typeof cases)[number], other: NodeJS.ProcessEnv): Promise<string[]> {
      const ours: number[] = []
      const floor: number[] = []
      const without: number[] = []
      for (let i = 0; i < RUNS; i++) {
        floor.push(await timedProcess(['-e', '0'], root, env))
        ours.push(await timedProcess(c.args, root, env, c.input))
        without.push(await timedProcess(c.args, root, other, c.input))
      }
      return [c.label, ms(median(ours)), ms(median(floor)), `${(median(ours) / median(floor)).toFixed(2)}×`, ms(median(without))]
    }
    const rows: string[][] = []
    for (const c of cases) rows.push(await row(c, {...env, JARVIS_CODE_CACHE: 'off'}))
    // The calls the warm path answers, with a `jarvis sync --watch` running in the tree (docs/decisions/warm-path.md),
    // beside the same calls without it (JARVIS_WARM=off) and `node -e 0`.
    const warmRows: string[][] = []
    const watch = await startSyncWatch(root, env)
    try {
      for (const c of cases.filter((c) => WARM_CALLS.has(c.label))) {
        await timedProcess(c.args, root, env, c.input)
        warmRows.push(await row(c, {...env, JARVIS_WARM: 'off'}))
      }
    } finally {
      await watch.stop()
    }
    return {
      title: 'Start-up: hot commands against `node -e 0`',
      markdown: [
        `Each command as a whole process in a tree of ${FILES.toLocaleString('en')} memory files, synced with \`jarvis serve\` on 127.0.0.1; ${RUNS} runs of each, alternated with \`node -e 0\` (medians).`,
        'Every call below is answered without loading oclif (src/cli/fast.ts), from its own bundle through V8\'s code cache (src/cli/code-cache.ts); the last column is the same call with `JARVIS_CODE_CACHE=off`, compiled from scratch. See docs/decisions/startup.md.',
        '',
        table(['process', 'jarvis', '`node -e 0`', 'ratio', 'without the code cache'], rows),
        '',
        `The same calls with \`jarvis sync --watch\` running in the tree, which answers them from its watched index over a local socket (the warm path); the last column is the same call with \`JARVIS_WARM=off\`:`,
        '',
        table(['process', 'jarvis (warm path)', '`node -e 0`', 'ratio', 'without the warm path'], warmRows),
      ].join('\n'),
    }
  } finally {
    await server.close()
    await rm(work, {recursive: true, force: true})
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const section = await benchStartup()
  process.stdout.write(`## ${section.title}\n\n${section.markdown}\n`)
}
