/**
 * The README's "Your first hour", run exactly as written: bash in a throw-away HOME, a real `jarvis serve` on a
 * free port of 127.0.0.1, two trees, a conflict, `jarvis resolve`, and what a person would notice at each step.
 * The commands run this checkout's built bin/run.js (the block's own first line says so).
 */
import {existsSync} from 'node:fs'
import {mkdir, readdir, readFile} from 'node:fs/promises'
import {delimiter, dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {afterAll, describe, expect, it} from 'vitest'

import {groupEnded, readmeBlock, type ShellRun, startBash, type Step, stopGroup} from './helpers/readme.js'
import {removeAll, tempDir} from './helpers/world.js'

const repoRoot = fileURLToPath(new URL('..', import.meta.url))
const builtBin = join(repoRoot, 'bin', 'run.js')
const dirs: string[] = []
const groups: number[] = []

afterAll(async () => {
  // A walk-through that failed half-way may have left its server running: stop it by the group this test started.
  await Promise.all(groups.map((group) => stopGroup(group)))
  await removeAll(dirs)
})

/** dist/ is rebuilt now and then by `npm run build` (which starts with rm -rf dist): wait for it to be back. */
async function builtCommand(): Promise<void> {
  const needed = ['dist/cli/code-cache.js', 'dist/fast/sync.cjs', 'dist/commands/serve.js', 'dist/commands/sync.js'].map((path) => join(repoRoot, path))
  for (const end = Date.now() + 120_000; !needed.every((path) => existsSync(path)); ) {
    if (Date.now() > end) throw new Error('dist/ is missing: run npm run build')
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

/** A failure that says the build vanished under the run, not that the README is wrong. */
const buildVanished = (run: ShellRun) => /ERR_MODULE_NOT_FOUND|Cannot find module[^\n]*\/dist\//.test(run.transcript)

interface Walk {
  run: ShellRun
  /** The throw-away directory the block made and worked in. */
  play: string
  home: string
  /** Whether every process the block started had ended a little after it. */
  ended: boolean
}

/** Runs the block in a fresh temp dir; bash starts in the clone, as the README says. */
async function walk(block: string): Promise<Walk> {
  const dir = await tempDir('jarvis-readme-')
  dirs.push(dir)
  const home = join(dir, 'home')
  const tmp = join(dir, 'tmp')
  await mkdir(home)
  await mkdir(tmp)
  // Nothing of the developer's shell leaks in: no JARVIS_* variable, no DEBUG, no user config, no data dir.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('JARVIS_') && name !== 'DEBUG'))
  Object.assign(env, {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    TMPDIR: tmp,
    NO_COLOR: '1',
    // `node` in the block is the node running this test.
    PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
  })
  await builtCommand()
  const bash = await startBash(block, {cwd: repoRoot, env, dir})
  groups.push(bash.group)
  const run = await bash.done
  // The block stops its server itself (`kill $SERVER_PID`); whatever is still running after it is a finding. A block
  // that stopped half-way has not reached that line: afterAll stops what it left.
  const ended = run.code === 0 && (await groupEnded(bash.group, 15_000))
  // The block's `cd "$(mktemp -d)"`: the one directory under TMPDIR holding the server's log.
  const play = (await readdir(tmp)).map((name) => join(tmp, name)).find((path) => existsSync(join(path, 'server.log')))
  if (!play) throw new Error(`the walk-through made no directory with a server.log under TMPDIR:\n${run.transcript}`)
  return {run, play, home, ended}
}

interface JarvisStep extends Step {
  bin: string
  args: string
  /** laptop or desktop: the tree the command ran in. */
  machine: string
  /** The step's index in run.steps. */
  at: number
}

/** The jarvis commands of the walk-through (the alias expanded to `node …/bin/run.js`), with the tree of each. */
function jarvisSteps(steps: Step[]): JarvisStep[] {
  const found: JarvisStep[] = []
  let machine = ''
  for (const [at, step] of steps.entries()) {
    const cd = /^cd (?:\.\.\/)?(laptop|desktop)$/.exec(step.command)
    if (cd) machine = cd[1]
    const jarvis = /^node (\S+) (.*)$/.exec(step.command)
    if (jarvis) found.push({...step, bin: jarvis[1], args: jarvis[2], machine, at})
  }
  return found
}

describe('README: your first hour', () => {
  it('runs as written: two trees converge, a conflict exits 4 naming the backup, status shows it, resolve settles it', {timeout: 300_000}, async ({onTestFailed}) => {
    const block = readmeBlock(await readFile(join(repoRoot, 'README.md'), 'utf8'), 'first-hour')
    let walked: Walk | undefined
    onTestFailed(() => console.log(`--- what the README's first hour printed ---\n${walked?.run.transcript ?? '(nothing: it did not run)'}`))
    walked = await walk(block)
    for (let attempt = 1; attempt < 3 && walked.run.code !== 0 && buildVanished(walked.run); attempt++) walked = await walk(block)
    const {run, play, home, ended} = walked
    expect(run.code, 'a command of the walk-through failed: bash stopped there (the transcript is printed below)').toBe(0)
    expect(ended, 'the walk-through left a process running').toBe(true)

    const steps = jarvisSteps(run.steps)
    expect(steps.length).toBeGreaterThan(10)
    for (const step of steps) expect(step.bin, step.command).toBe(builtBin)
    const named = (args: string, machine?: string) => steps.filter((step) => step.args === args && (!machine || step.machine === machine))

    // The server: on 127.0.0.1, a port the OS picked, one token per agent printed once, stopped by the block.
    const serverLog = await readFile(join(play, 'server.log'), 'utf8')
    const url = /listening on (http:\/\/\S+)/.exec(serverLog)?.[1]
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(Number(new URL(url!).port)).toBeGreaterThan(0)
    expect(serverLog).toMatch(/^ {2}claude +JARVIS_TOKEN=\S+ jarvis sync --server/m)
    expect(serverLog).toMatch(/^ {2}gemini +JARVIS_TOKEN=\S+ jarvis sync --server/m)
    expect(serverLog).toContain('jarvis serve stopped (SIGTERM)')

    // Two trees, and the laptop's file reaches the desktop.
    expect(named('init --server ' + url + ' --agent claude --project first-hour', 'laptop')).toHaveLength(1)
    expect(named('init --server ' + url + ' --agent gemini --project first-hour', 'desktop')).toHaveLength(1)
    const [laptopFirst] = named('sync', 'laptop')
    const [desktopFirst] = named('sync', 'desktop')
    expect(laptopFirst.output).toMatch(/pushed 1:\s+PROJECT_MEMORY\.md/)
    expect(desktopFirst.output).toMatch(/pulled 1:\s+PROJECT_MEMORY\.md/)

    // The same line changed on both machines: the desktop's sync exits 4 and names the backup.
    const conflicted = steps.filter((step) => step.args === 'sync' && run.steps[step.at + 1]?.command === "echo 'exit 4'")
    expect(conflicted, 'no `jarvis sync` exited 4').toHaveLength(1)
    const [conflict] = conflicted
    expect(conflict.machine).toBe('desktop')
    expect(conflict.output).toContain("PROJECT_MEMORY.md: the server's version is in the file, yours in .memory/PROJECT_MEMORY.local.bak")
    expect(conflict.output).toContain('jarvis resolve <file> --keep server')
    const shown = run.steps.find((step, at) => at > conflict.at && step.command.startsWith('cat .memory/PROJECT_MEMORY.md'))
    expect(shown?.output).toBe('Release day: Monday\nRelease day: Tuesday\n')

    // status names the conflict waiting; resolve --keep local puts the desktop's line back.
    const after = (step: JarvisStep) => steps.filter((other) => other.at > step.at)
    const waiting = after(conflict).find((step) => step.args === 'status')
    expect(waiting?.machine).toBe('desktop')
    expect(waiting?.output).toContain('Conflicts waiting for you (1)')
    expect(waiting?.output).toContain('.memory/PROJECT_MEMORY.local.bak')
    // …and does not read as clean while it waits.
    expect(waiting?.output).not.toContain('No local changes since the last sync.')
    const resolved = after(conflict).find((step) => step.args.startsWith('resolve '))
    expect(resolved?.args).toBe('resolve PROJECT_MEMORY.md --keep local')
    expect(resolved?.output).toContain('your version is back in .memory/PROJECT_MEMORY.md where the two sides disagreed')
    expect(resolved?.output).toContain('(the next jarvis sync pushes it)')

    // After resolve and a sync on each side, every status is clean, on both machines.
    const clean = after(resolved!).filter((step) => step.args === 'status')
    expect(clean.map((step) => step.machine).sort()).toEqual(['desktop', 'laptop'])
    for (const step of clean) {
      expect(step.output).toContain('No local changes since the last sync.')
      expect(step.output).not.toContain('Conflicts waiting')
    }

    // The two trees converged on the side resolve kept, and no backup is left.
    for (const machine of ['laptop', 'desktop']) {
      const memory = join(play, machine, '.memory')
      expect(await readFile(join(memory, 'PROJECT_MEMORY.md'), 'utf8'), machine).toBe('Release day: Tuesday\n')
      expect((await readdir(memory)).filter((name) => name.endsWith('.bak')), machine).toEqual([])
    }

    // agents install --dry-run shows diffs and writes nothing, in the tree or in HOME.
    const [dryRun] = named('agents install --dry-run', 'laptop')
    expect(dryRun.output).toMatch(/^\+\+\+ .*laptop\/CLAUDE\.md$/m)
    expect(dryRun.output).toContain('<!-- jarvis:begin -->')
    for (const path of ['CLAUDE.md', '.mcp.json', '.claude', 'GEMINI.md', '.gemini', 'AGENTS.md', '.codex']) expect(existsSync(join(play, 'laptop', path)), path).toBe(false)
    for (const path of ['.claude.json', '.claude', '.gemini', '.codex', '.openclaw']) expect(existsSync(join(home, path)), `~/${path}`).toBe(false)
  })
})
