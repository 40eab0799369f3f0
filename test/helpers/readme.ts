/**
 * Runs a block of README.md as a person pastes it into bash, and splits what they saw into steps. The block is
 * found by an HTML comment right above it (`<!-- readme-test: NAME -->`), so the README keeps its own words.
 */
import {spawn} from 'node:child_process'
import {closeSync, openSync} from 'node:fs'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

/** The shell commands of the fenced block right after `<!-- readme-test: NAME -->`, as written. */
export function readmeBlock(readme: string, name: string): string {
  const marker = `<!-- readme-test: ${name} -->`
  const at = readme.indexOf(marker)
  if (at < 0) throw new Error(`README.md has no ${marker}`)
  if (readme.indexOf(marker, at + 1) >= 0) throw new Error(`README.md has ${marker} twice`)
  const block = /^\s*```(?:sh|bash)\n([\s\S]*?)\n```/.exec(readme.slice(at + marker.length))
  if (!block) throw new Error(`${marker} is not followed by a \`\`\`sh block`)
  return block[1]
}

/** What an interactive bash does for the pasted block, plus: a failing command stops it, each command is traced. */
const PRELUDE = `shopt -s expand_aliases
set -eu
PS4='+readme> '
set -x
`

export interface Step {
  /** The command as bash ran it: aliases expanded, variables substituted. */
  command: string
  /** What it printed, stdout and stderr in the order a terminal shows them. */
  output: string
}

export interface ShellRun {
  code: number | null
  signal: NodeJS.Signals | null
  /** Everything printed, trace lines included. */
  transcript: string
  /** The top-level commands and what each printed (command substitutions are not steps). */
  steps: Step[]
}

export interface ShellProcess {
  /** The process group of bash and everything it started: the handle to stop them by. */
  group: number
  done: Promise<ShellRun>
}

/**
 * Starts `bash` on `script` in its own process group, stdout and stderr into one file so that the order is the
 * terminal's. Whatever the script leaves running in the background stays in that group (a script has no job
 * control), so `stopGroup(group)` reaches it without knowing its name.
 */
export async function startBash(script: string, options: {cwd: string; env: NodeJS.ProcessEnv; dir: string}): Promise<ShellProcess> {
  const file = join(options.dir, 'script.sh')
  const out = join(options.dir, 'transcript.txt')
  await writeFile(file, PRELUDE + script + '\n')
  const fd = openSync(out, 'w')
  const child = spawn('bash', [file], {cwd: options.cwd, env: options.env, stdio: ['ignore', fd, fd], detached: true})
  closeSync(fd)
  const done = new Promise<ShellRun>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code, signal) => {
      readFile(out, 'utf8').then((transcript) => resolve({code, signal, transcript, steps: stepsOf(transcript)}), reject)
    })
  })
  return {group: child.pid!, done}
}

/** Splits a traced transcript into its top-level commands (`+readme> …`) and what each printed. */
export function stepsOf(transcript: string): Step[] {
  const steps: Step[] = []
  for (const line of transcript.split('\n')) {
    const trace = /^(\++)readme> (.*)$/.exec(line)
    if (trace) {
      if (trace[1].length === 1) steps.push({command: trace[2], output: ''})
      continue
    }
    const last = steps.at(-1)
    if (last) last.output += `${line}\n`
  }
  return steps
}

/** True while any process of the group is alive. */
export function groupAlive(group: number): boolean {
  try {
    process.kill(-group, 0)
    return true
  } catch {
    return false
  }
}

/** Waits up to `ms` for every process of the group to end by itself; true when they have. */
export async function groupEnded(group: number, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (!groupAlive(group)) return true
  }
  return !groupAlive(group)
}

/** Stops what is left of the group: SIGTERM (the server finishes its writes), then SIGKILL after 5 s. */
export async function stopGroup(group: number): Promise<void> {
  if (!groupAlive(group)) return
  process.kill(-group, 'SIGTERM')
  if (await groupEnded(group, 5000)) return
  if (groupAlive(group)) process.kill(-group, 'SIGKILL')
}
