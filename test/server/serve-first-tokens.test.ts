/**
 * The tokens `jarvis serve` makes at its first start live in its tokens file, which is this process's own: on
 * PostgreSQL, where several processes are one server, it says that keys are what every process knows.
 */
import {spawn} from 'node:child_process'
import {join} from 'node:path'

import {afterEach, describe, expect, it} from 'vitest'

import {jarvisBin} from '../helpers/cli.js'
import {freshDatabase} from '../helpers/postgres.js'
import {Cleanup, tempDir} from './helpers.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

/** What `jarvis serve` with no tokens given prints from its start to its stop, stopped by its handle once it printed its tokens. */
async function firstStart(args: string[]): Promise<string> {
  const data = cleanup.dir(await tempDir())
  const child = spawn(process.execPath, [jarvisBin, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', join(data, 'data'), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {...process.env, JARVIS_SERVER_TOKENS: '', NO_COLOR: '1'},
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  cleanup.add(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
  })
  let output = ''
  let errors = ''
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk))
  await new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
      if (/openclaw +JARVIS_TOKEN=/.test(output)) resolve()
    })
    child.once('exit', (code) => reject(new Error(`jarvis serve exited ${code}: ${errors}`)))
  })
  // Stopped, it has printed all it had to say: what follows the tokens is written before it waits for a signal.
  child.kill('SIGTERM')
  await exited
  return output
}

describe('jarvis serve at its first start', () => {
  it('on PostgreSQL says its tokens open this process only, and that keys open every process', async () => {
    const output = await firstStart(['--database', await freshDatabase()])
    expect(output).toContain('these tokens open this process only: for several jarvis serve processes on one database, make keys with `jarvis serve token create`')
  })
})
