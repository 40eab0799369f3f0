/**
 * Whole processes, as a user, a git hook or an agent's hook runs them: how long each takes, and for jarvis the
 * peak resident memory (`process.resourceUsage().maxRSS`, written at exit by bench/peak-rss.cjs).
 */
import {spawn} from 'node:child_process'
import {readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

export const jarvisBin = fileURLToPath(new URL('../bin/run.js', import.meta.url))
/** `jarvis` as npm installs it (package.json's bin): bin/run.js, or the call handed whole to a watch of the tree. */
export const installedJarvis = fileURLToPath(new URL('../bin/jarvis', import.meta.url))
const peakPreload = fileURLToPath(new URL('peak-rss.cjs', import.meta.url))
let peakFiles = 0

export interface ProcessRun {
  ms: number
  /** Peak resident memory in MiB (jarvis processes only). */
  peakMiB?: number
}

export interface RunOptions {
  cwd: string
  env?: NodeJS.ProcessEnv
  input?: string
  /** Exit codes that are not a failure besides 0 (grep: 1 is "nothing found"). */
  alsoFine?: number[]
}

/** One process to its end; fails loudly on a non-zero exit. */
export function runProcess(command: string, args: string[], options: RunOptions): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const start = performance.now()
    const child = spawn(command, args, {cwd: options.cwd, env: options.env ?? process.env, stdio: ['pipe', 'ignore', 'pipe']})
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 || options.alsoFine?.includes(code ?? -1) ? resolve({ms: performance.now() - start}) : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr}`))))
    child.stdin.end(options.input ?? '')
  })
}

/** `jarvis <args>` with the built bin/run.js, its duration and peak memory. */
export async function runJarvis(args: string[], options: RunOptions): Promise<ProcessRun> {
  const peakFile = join(tmpdir(), `jarvis-bench-peak-${process.pid}-${++peakFiles}`)
  try {
    const run = await runProcess(process.execPath, ['--require', peakPreload, jarvisBin, ...args], {...options, env: {...(options.env ?? process.env), JARVIS_BENCH_PEAK_FILE: peakFile}})
    return {...run, peakMiB: Number(readFileSync(peakFile, 'utf8')) / 1024}
  } finally {
    rmSync(peakFile, {force: true})
  }
}

/** `jarvis <args>` as a shell runs the installed command: its duration only (the peak needs Node's own flags). */
export function runInstalledJarvis(args: string[], options: RunOptions): Promise<ProcessRun> {
  return runProcess(installedJarvis, args, options)
}

/** A `jarvis sync --watch` running in the tree (it answers the warm path's calls), until `stop()`. */
export async function startSyncWatch(root: string, env: NodeJS.ProcessEnv): Promise<{stop(): Promise<void>}> {
  const child = spawn(process.execPath, [jarvisBin, 'sync', '--watch'], {cwd: root, env, stdio: ['ignore', 'ignore', 'pipe']})
  let stderr = ''
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  await new Promise<void>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
      if (stderr.includes('Ctrl-C to stop')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`jarvis sync --watch exited ${code}: ${stderr}`)))
  })
  return {
    async stop() {
      child.kill('SIGINT')
      await exited
    },
  }
}
