/**
 * The calls a user (or a git hook, or an agent's hook) makes most, each as a whole process of the built clone
 * (`bin/jarvis`, the command npm installs), side by side in one run with and without a watch of the tree, against
 * what a user would run instead: `node -e 0` (the floor of any Node command), git over `git daemon`, `grep -ril`.
 *
 * "Without a watch": a tree where none runs (`JARVIS_WATCHER=off`: no call starts one), so each call looks at every
 * file. "With a watch": the watch a call starts on demand in a tree of 500+ files (src/warm/demand.ts), once it
 * answers. Each kind has its own trees (and server): a sync without a watch keeps no watch clock, and would make the
 * next watched sync look at every file. Standalone: `node --import tsx bench/user.ts`.
 */
import {type ChildProcess} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {mkdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {readScanHints} from '../src/store/index.js'
import {askWarm} from '../src/warm/client.js'
import {claudeTranscript, type Turn} from '../test/hook/helpers.js'
import {jarvisBin, runInstalledJarvis, runJarvis, runProcess, type ProcessRun} from './process.js'
import {median, ms, table, timeRuns, type BenchSection} from './stats.js'
import {editTen, git, LARGE_FILE_BYTES, LARGE_FILES, newPair, type Pair, startGitDaemon, TOKEN, treeDigest} from './sync.js'

/** Whether the process is gone (or a zombie nobody reaps: a watch outlives the call that started it). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z'
  } catch {
    return true
  }
}

/** Polls `probe` until it gives a value (a condition the bench waits on), failing after `attempts` tries. */
async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, attempts = 200): Promise<T> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const value = await probe()
    if (value !== undefined && value !== false) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`bench: gave up waiting for ${what}`)
}

/** The watch started on demand in a tree, by `.nexus/watcher.json`. */
function watchOf(root: string): number | undefined {
  try {
    return (JSON.parse(readFileSync(join(root, '.nexus', 'watcher.json'), 'utf8')) as {pid: number}).pid
  } catch {
    return undefined
  }
}

/** Each run of `steps`, alternated run by run (a busy moment of the shared machine falls on all); medians. */
async function sideBySide(times: number, steps: Array<() => Promise<unknown>>, warmup = 1): Promise<number[]> {
  const runs: number[][] = steps.map(() => [])
  for (let i = 0; i < warmup + times; i++) {
    for (const [at, step] of steps.entries()) {
      const [took] = await timeRuns(1, step)
      if (i >= warmup) runs[at].push(took)
    }
  }
  return runs.map(median)
}

const times = (ours: number, theirs: number) => `${(ours / theirs).toFixed(2)}×`

export async function benchUser(): Promise<BenchSection> {
  const work = join(process.env.TMPDIR ?? '/tmp', `jarvis-bench-user-${process.pid}`)
  await rm(work, {recursive: true, force: true})
  await mkdir(work, {recursive: true})
  const base = {...process.env, JARVIS_TOKEN: TOKEN, JARVIS_WARM: '', JARVIS_WATCHER_MIN_FILES: '', NO_COLOR: '1', DEBUG: ''}
  const coldEnv = {...base, JARVIS_WATCHER: 'off'}
  const watchedEnv = {...base, JARVIS_WATCHER: ''}
  const jarvis = (cwd: string, env: NodeJS.ProcessEnv, ...args: string[]): Promise<ProcessRun> => runInstalledJarvis(args, {cwd, env})
  const servers: Array<{close(): Promise<void>}> = []
  const watched: string[] = []
  const rows: string[][] = []
  let daemon: {url: string; child: ChildProcess} | undefined
  try {
    daemon = await startGitDaemon(work)
    const url = daemon.url
    /** A pair of trees synced once (A pushed its files, B pulled them), and its git twin when `withGit`. */
    const syncedPair = async (size: number, kind: 'cold' | 'watched', withGit: boolean): Promise<Pair> => {
      const pair = await newPair(work, url, size, kind)
      servers.push(pair.server)
      const env = kind === 'cold' ? coldEnv : watchedEnv
      await jarvis(pair.ja, env, 'sync', '--quiet')
      await jarvis(pair.jb, env, 'sync', '--quiet')
      if (withGit) {
        await git(pair.ga, 'add', '-A')
        await git(pair.ga, 'commit', '-q', '-m', 'initial')
        await git(pair.ga, 'push', '-q', 'origin', 'main')
        await git(pair.gb, 'pull', '-q', 'origin', 'main')
      }
      if (kind === 'watched') {
        // Ready when each tree's watch runs and a sync kept its clock: the next sync asks it what changed.
        for (const root of [pair.ja, pair.jb]) {
          watched.push(root)
          // A sync that finds no watch in a tree of 500+ files starts one (B's first found none: it pulled them).
          await until(`the watch of ${root} to answer a sync`, async () => {
            await jarvis(root, watchedEnv, 'sync', '--quiet')
            return watchOf(root) !== undefined && (await askWarm(root, 'changes', {}, {env: watchedEnv})) !== undefined && (await readScanHints(root)).watch
          })
        }
      }
      return pair
    }
    const noOpSync = async (cold: Pair, warm: Pair, size: number) => {
      const [c, w, g] = await sideBySide(7, [
        () => jarvis(cold.ja, coldEnv, 'sync', '--quiet'),
        () => jarvis(warm.ja, watchedEnv, 'sync', '--quiet'),
        async () => {
          await git(cold.ga, 'pull', '-q', 'origin', 'main')
          await git(cold.ga, 'push', '-q', 'origin', 'main')
        },
      ])
      rows.push([`no-op \`sync\`, ${size.toLocaleString('en')} files`, ms(c), ms(w), `${ms(g)} (\`git pull && git push\`)`, times(c, g), times(w, g), '≤ 2×, ≤ 1×'])
    }

    // 1,000 files: `memory ls`, a no-op sync, 10 files changed.
    {
      const cold = await syncedPair(1000, 'cold', true)
      const warm = await syncedPair(1000, 'watched', false)
      await until('the watch to list the files', () => askWarm(warm.ja, 'memory-ls', {limit: 1}, {env: watchedEnv}))
      const [c, w, n] = await sideBySide(15, [
        () => jarvis(cold.ja, coldEnv, 'memory', 'ls'),
        () => jarvis(warm.ja, watchedEnv, 'memory', 'ls'),
        () => runProcess(process.execPath, ['-e', '0'], {cwd: cold.ja}),
      ])
      rows.push(['`memory ls`, 1,000 files', ms(c), ms(w), `${ms(n)} (\`node -e 0\`)`, times(c, n), times(w, n), '≤ 2×, ≤ 1×'])
      await noOpSync(cold, warm, 1000)
      const round = {cold: 0, warm: 0, git: 0}
      const [tc, tw, tg] = await sideBySide(5, [
        async () => {
          await editTen(join(cold.ja, '.memory'), 1000, ++round.cold)
          await jarvis(cold.ja, coldEnv, 'sync', '--quiet')
          await jarvis(cold.jb, coldEnv, 'sync', '--quiet')
        },
        async () => {
          await editTen(join(warm.ja, '.memory'), 1000, ++round.warm)
          await jarvis(warm.ja, watchedEnv, 'sync', '--quiet')
          await jarvis(warm.jb, watchedEnv, 'sync', '--quiet')
        },
        async () => {
          await editTen(cold.ga, 1000, ++round.git)
          await git(cold.ga, 'add', '-A')
          await git(cold.ga, 'commit', '-q', '-m', `round ${round.git}`)
          await git(cold.ga, 'push', '-q', 'origin', 'main')
          await git(cold.gb, 'pull', '-q', 'origin', 'main')
        },
      ])
      for (const pair of [cold, warm]) {
        if ((await treeDigest(join(pair.ja, '.memory'))) !== (await treeDigest(join(pair.jb, '.memory')))) throw new Error(`bench: B's tree differs from A's after the 10-file round trips (${pair.ja})`)
      }
      rows.push(['10 files changed (A syncs, B syncs), 1,000 files', ms(tc), ms(tw), `${ms(tg)} (git commit, push; pull)`, times(tc, tg), times(tw, tg), '≤ 1.5×'])
    }

    // 10,000 files: a no-op sync, `memory search`, `recall`.
    {
      const cold = await syncedPair(10_000, 'cold', true)
      const warm = await syncedPair(10_000, 'watched', false)
      await noOpSync(cold, warm, 10_000)
      const queries = ['decided keep', 'owner agent-3', 'realistic words', 'revision', 'status active memory', 'note 4242', 'item 777', 'tags t5']
      // The first search of each tree builds its index: not measured.
      await jarvis(cold.ja, coldEnv, 'memory', 'search', queries[0])
      await jarvis(warm.ja, watchedEnv, 'memory', 'search', queries[0])
      await until('the watch to search', () => askWarm(warm.ja, 'memory-search-files', {query: queries[0]}, {env: watchedEnv}))
      // `memory search` (memory files and the server's event log) and `recall` (memory files only), each against grep.
      for (const command of [['memory', 'search'], ['recall']]) {
        const runs: number[][] = [[], [], []]
        for (let round = 0; round < 2; round++) {
          for (const query of queries) {
            runs[0].push((await jarvis(cold.ja, coldEnv, ...command, query)).ms)
            runs[1].push((await jarvis(warm.ja, watchedEnv, ...command, query)).ms)
            runs[2].push((await runProcess('grep', ['-ril', '-F', ...query.split(' ').flatMap((word) => ['-e', word]), join(cold.ja, '.memory')], {cwd: cold.ja, alsoFine: [1]})).ms)
          }
        }
        const [c, w, g] = runs.map(median)
        rows.push([`\`${command.join(' ')}\`, 10,000 files (${queries.length} queries × 2)`, ms(c), ms(w), `${ms(g)} (\`grep -ril\`)`, times(c, g), times(w, g), command[0] === 'recall' ? '—, ≤ 1×' : '≤ 2×, ≤ 1×'])
      }
      // An agent's prompt hook, its input on stdin as the agent writes it, beside `node -e 0` (the floor of a hook run
      // by Node). With a watch, bin/jarvis hands it whole to the watch, as `jarvis agents install` wires it.
      // Also the watched hook as it was wired before (`node bin/run.js hook …`): a Node process that asks the watch.
      const hookRuns: number[][] = [[], [], [], []]
      const hookArgs = ['hook', 'prompt', '--agent', 'claude']
      const hookInput = (root: string, query: string) => JSON.stringify({session_id: 'bench', hook_event_name: 'UserPromptSubmit', cwd: root, prompt: `What do we know about ${query}?`})
      for (let round = 0; round < 2; round++) {
        for (const query of queries) {
          hookRuns[0].push((await runInstalledJarvis(hookArgs, {cwd: cold.ja, env: coldEnv, input: hookInput(cold.ja, query)})).ms)
          hookRuns[1].push((await runInstalledJarvis(hookArgs, {cwd: warm.ja, env: watchedEnv, input: hookInput(warm.ja, query)})).ms)
          hookRuns[2].push((await runProcess(process.execPath, [jarvisBin, ...hookArgs], {cwd: warm.ja, env: watchedEnv, input: hookInput(warm.ja, query)})).ms)
          hookRuns[3].push((await runProcess(process.execPath, ['-e', '0'], {cwd: cold.ja})).ms)
        }
      }
      const [hc, hw, hNode, hn] = hookRuns.map(median)
      rows.push([`\`hook prompt\` (an agent's prompt on stdin), 10,000 files (${queries.length} prompts × 2; watched through \`node bin/run.js\`: ${ms(hNode)})`, ms(hc), ms(hw), `${ms(hn)} (\`node -e 0\`)`, times(hc, hn), times(hw, hn), '—'])

      // Claude Code's stop hook at the end of a turn of a 60-turn session: the episode read from its transcript (the
      // first run of each tree writes it; the runs measured find it written).
      const turns: Turn[] = Array.from({length: 60}, (_, i) => ({
        prompt: `Change the retry policy of service ${i}, and say why`,
        tools: [['Read', {file_path: `src/service-${i}.ts`}], ['Edit', {file_path: `src/service-${i}.ts`, old_string: 'retry(3)', new_string: 'retry(5)'}]],
        answer: `Done: service ${i} now retries five times. We decided on exponential backoff with jitter, because the upstream throttles bursts. `.repeat(3),
      }))
      const stopOf = async (root: string) => {
        const transcript = join(root, '..', `${root.split('/').at(-1)}-session.jsonl`)
        await writeFile(transcript, claudeTranscript('bench-stop', root, turns))
        return JSON.stringify({session_id: 'bench-stop', hook_event_name: 'Stop', cwd: root, transcript_path: transcript, stop_hook_active: false})
      }
      const stopArgs = ['hook', 'stop', '--agent', 'claude']
      const [coldStop, warmStop] = [await stopOf(cold.ja), await stopOf(warm.ja)]
      const [sc, sw, sNode, sn] = await sideBySide(12, [
        () => runInstalledJarvis(stopArgs, {cwd: cold.ja, env: coldEnv, input: coldStop}),
        () => runInstalledJarvis(stopArgs, {cwd: warm.ja, env: watchedEnv, input: warmStop}),
        () => runProcess(process.execPath, [jarvisBin, ...stopArgs], {cwd: warm.ja, env: watchedEnv, input: warmStop}),
        () => runProcess(process.execPath, ['-e', '0'], {cwd: cold.ja}),
      ])
      rows.push([`\`hook stop\` (a turn's end; a 60-turn Claude Code transcript), 10,000 files (median of 12; watched through \`node bin/run.js\`: ${ms(sNode)})`, ms(sc), ms(sw), `${ms(sn)} (\`node -e 0\`)`, times(sc, sn), times(sw, sn), '—'])
    }

    // 96 MiB: A's tree to B, each from nothing (a new server, trees and repository per run).
    {
      const runs: number[][] = [[], []]
      let peak = 0
      for (let run = 0; run < 3; run++) {
        const pair = await newPair(work, url, 'large', `user-${run}`)
        servers.push(pair.server)
        const [j] = await timeRuns(1, async () => {
          // bin/run.js itself here: the client's peak memory is read through Node's --require.
          for (const root of [pair.ja, pair.jb]) peak = Math.max(peak, (await runJarvis(['sync', '--quiet'], {cwd: root, env: coldEnv})).peakMiB ?? 0)
        })
        const [g] = await timeRuns(1, async () => {
          await git(pair.ga, 'add', '-A')
          await git(pair.ga, 'commit', '-q', '-m', 'initial')
          await git(pair.ga, 'push', '-q', 'origin', 'main')
          await git(join(pair.ga, '..'), 'clone', '-q', `${url}/large-user-${run}/bare.git`, 'git-clone')
        })
        if ((await treeDigest(join(pair.ja, '.memory'))) !== (await treeDigest(join(pair.jb, '.memory')))) throw new Error("bench: B's 96 MiB tree differs from A's")
        runs[0].push(j)
        runs[1].push(g)
        await pair.server.close()
        servers.splice(servers.indexOf(pair.server), 1)
        await rm(join(pair.ja, '..'), {recursive: true, force: true})
      }
      const [j, g] = runs.map(median)
      const size = `${LARGE_FILES} files of ${LARGE_FILE_BYTES / 1024} KiB, ${((LARGE_FILES * LARGE_FILE_BYTES) / 2 ** 20).toFixed(0)} MiB`
      rows.push([`a new tree A → B (${size}; client peak ${peak.toFixed(0)} MiB; median of 3)`, ms(j), '—', `${ms(g)} (git push; clone)`, times(j, g), '—', '≤ 1.5×'])
    }
  } finally {
    // Every watch started here, by its process id; then the servers and the trees.
    const pids = watched.map(watchOf).filter((pid): pid is number => pid !== undefined)
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGTERM')
      } catch {
        // gone already
      }
    }
    await until('the watches to leave', () => pids.every(gone) || undefined).catch(() => undefined)
    daemon?.child.kill()
    for (const server of servers) await server.close()
    await rm(work, {recursive: true, force: true})
  }
  const markdown = [
    'Each call a whole process of the built clone as a user\'s shell runs it (`bin/jarvis`, the command npm installs; the 96 MiB row runs `node bin/run.js` itself, to read its peak memory), alternated run by run with the other columns; every figure is a median. Without a watch: `JARVIS_WATCHER=off`, no watch runs in the tree, each call looks at every file (`bin/jarvis` runs `node bin/run.js`). With a watch: the watch a call starts on demand in a tree of 500+ files, once it answers (its own trees and server); `bin/jarvis` hands it the call whole (bin/warm-call.pl), no Node process starts. jarvis talks to a real `jarvis serve` on 127.0.0.1, git to `git daemon` on 127.0.0.1.',
    '',
    table(['call', 'jarvis, no watch', 'jarvis, watched', 'what a user would run instead', 'no watch vs it', 'watched vs it', 'target'], rows),
  ].join('\n')
  return {title: 'As a user runs them: with and without a watch', markdown}
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const section = await benchUser()
  process.stdout.write(`## ${section.title}\n\n${section.markdown}\n`)
}
