import {spawn, type ChildProcess} from 'node:child_process'
import {mkdir, mkdtemp, realpath, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {afterEach} from 'vitest'

import {initTree} from '../../../src/store/index.js'

const made: string[] = []

/** A fresh temp directory (real path), removed after the test. */
export async function tempDir(prefix = 'jarvis-store-'): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)))
  made.push(dir)
  return dir
}

/** A temp directory holding empty `.memory/` and `.nexus/`. */
export async function tempTree(): Promise<string> {
  const root = await tempDir()
  await mkdir(join(root, '.memory'))
  await mkdir(join(root, '.nexus'))
  return root
}

/** A tree as `jarvis init` makes it (no server), in a fresh temp directory removed after the test. */
export async function initTempTree(): Promise<string> {
  return (await initTree(await tempDir(), {})).root
}

afterEach(async () => {
  while (made.length > 0) await rm(made.pop()!, {recursive: true, force: true})
})

export const helpersDir = fileURLToPath(new URL('.', import.meta.url))
export const projectDir = fileURLToPath(new URL('../../../', import.meta.url))

export interface Child {
  proc: ChildProcess
  stdout: () => string
  stderr: () => string
  /** Resolves when stdout contains `text`; rejects if the process exits first. */
  waitFor(text: string): Promise<void>
  exited: Promise<{code: number | null; signal: NodeJS.Signals | null}>
}

/** `node --import tsx test/store/helpers/<script> ...args`, so the child's pid is node's own pid. */
export function spawnHelper(script: string, args: string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(helpersDir, script), ...args], {
    cwd: projectDir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {...process.env, DEBUG: ''},
  })
  let out = ''
  let err = ''
  proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
  const exited = new Promise<{code: number | null; signal: NodeJS.Signals | null}>((resolve) =>
    proc.on('exit', (code, signal) => resolve({code, signal})),
  )
  return {
    proc,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(text) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (out.includes(text)) {
            proc.stdout!.off('data', check)
            resolve()
          }
        }
        proc.stdout!.on('data', check)
        check()
        exited.then(({code, signal}) => {
          if (!out.includes(text)) reject(new Error(`${script} exited (${code ?? signal}) before printing ${text}: ${err}`))
        })
      })
    },
  }
}
