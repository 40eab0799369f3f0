import {spawn} from 'node:child_process'
import {fileURLToPath} from 'node:url'

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

/** CI runs after `npm run build`, so it tests the built binary; a developer's run uses the sources. */
export const jarvisBin = process.env.CI ? `${repoRoot}bin/run.js` : `${repoRoot}bin/dev.js`

export interface CliRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Runs the real jarvis binary as a child process, as a user or a git hook would (`uid`/`gid`: as another user, when the test runs as root). */
export function runJarvis(args: string[], options: {cwd?: string; env?: NodeJS.ProcessEnv; input?: string | Buffer; uid?: number; gid?: number} = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [jarvisBin, ...args], {
      cwd: options.cwd,
      ...(options.uid === undefined ? {} : {uid: options.uid}),
      ...(options.gid === undefined ? {} : {gid: options.gid}),
      env: {...process.env, NO_COLOR: '1', ...options.env},
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({code, signal, stdout, stderr}))
    child.stdin.end(options.input ?? '')
  })
}

/** Parses the `--json` envelope a command printed. */
export function envelope<T = unknown>(run: CliRun): {status: number; result?: T; error?: {code: string; message: string; data?: Record<string, unknown>}; warnings: string[]} {
  try {
    return JSON.parse(run.stdout)
  } catch {
    throw new Error(`stdout is not one JSON object (exit ${run.code}):\n${run.stdout}\nstderr:\n${run.stderr}`)
  }
}
