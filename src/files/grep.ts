/**
 * Grep over memory file texts: one matcher for `jarvis memory grep`, `memory_grep` in `jarvis mcp` and on the
 * server's `/mcp`. On the server the regular expression comes from a client, and a pattern that backtracks without
 * end (`(a+)+$`) would stall every request of the team: there it runs in a worker thread that is stopped after a
 * time limit.
 */
import {Worker} from 'node:worker_threads'

import {BadInputError} from '../errors.js'

export interface GrepHit {
  path: string
  line: number
  text: string
}

export interface GrepFile {
  path: string
  text: string
}

/** How long a regular expression sent to the server may run over the memory files before it is stopped. */
export const GREP_TIME_LIMIT_MS = 2000

/** The regular expression (JavaScript syntax), or BadInputError (exit 2) naming what is wrong with it. */
export function compileGrep(regex: string, ignoreCase = false): RegExp {
  try {
    return new RegExp(regex, ignoreCase ? 'i' : '')
  } catch (error) {
    throw new BadInputError(`bad regular expression ${JSON.stringify(regex)}: ${(error as Error).message}`, {regex})
  }
}

/**
 * The matching lines of `files`, in their order, at most `max`. Self-contained on purpose (no import, no closure):
 * its source is also what the worker thread of grepGuarded runs.
 */
export function grepLines(files: GrepFile[], source: string, flags: string, max: number): GrepHit[] {
  const pattern = new RegExp(source, flags)
  const hits: GrepHit[] = []
  for (const file of files) {
    const lines = file.text.split('\n')
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].replace(/\r$/, '')
      if (!pattern.test(line)) continue
      hits.push({path: file.path, line: i + 1, text: line})
      if (hits.length >= max) return hits
    }
  }
  return hits
}

const WORKER_SOURCE = `const {parentPort, workerData} = require('node:worker_threads')
const grepLines = ${grepLines.toString()}
parentPort.postMessage(grepLines(workerData.files, workerData.source, workerData.flags, workerData.max))`

/** grepLines in a worker thread, stopped after `timeLimitMs` with BadInputError (exit 2) saying why. */
export function grepGuarded(files: GrepFile[], pattern: RegExp, max: number, timeLimitMs = GREP_TIME_LIMIT_MS): Promise<GrepHit[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, {eval: true, workerData: {files, source: pattern.source, flags: pattern.flags, max}})
    const timer = setTimeout(() => {
      void worker.terminate()
      reject(
        new BadInputError(
          `the regular expression ${JSON.stringify(pattern.source)} ran longer than ${timeLimitMs / 1000} s over the memory files and was stopped: make it simpler (nested repetition such as (a+)+ can backtrack without end)`,
          {regex: pattern.source},
        ),
      )
    }, timeLimitMs)
    const settle = () => clearTimeout(timer)
    worker.once('message', (hits: GrepHit[]) => {
      settle()
      resolve(hits)
      void worker.terminate()
    })
    worker.once('error', (error) => {
      settle()
      reject(error)
    })
  })
}
