/**
 * Child process for the lock tests.
 *   hold <root>                 take the tree lock, print "locked", hold it until killed
 *   try <root> <timeoutMs>      try to take it; print {"acquired": true} or the error as JSON; exit with error.exit
 *   count <root> <n>            n times: under the lock, read .memory/counter, pause, write it + 1
 */
import {setTimeout as sleep} from 'node:timers/promises'

import {isJarvisError} from '../../../src/errors.js'
import {readMemoryFile, withTreeLock, writeMemoryFile} from '../../../src/store/index.js'

const [mode, root, arg] = process.argv.slice(2)

if (mode === 'hold') {
  await withTreeLock(root, {timeoutMs: 10_000, command: 'test hold'}, async () => {
    process.stdout.write('locked\n')
    await sleep(120_000)
  })
} else if (mode === 'try') {
  try {
    await withTreeLock(root, {timeoutMs: Number(arg)}, async () => {
      process.stdout.write(JSON.stringify({acquired: true}) + '\n')
    })
  } catch (error) {
    if (!isJarvisError(error)) throw error
    process.stdout.write(JSON.stringify({code: error.code, exit: error.exit, data: error.data, message: error.message}) + '\n')
    process.exitCode = error.exit
  }
} else if (mode === 'count') {
  for (let i = 0; i < Number(arg); i++) {
    await withTreeLock(root, {timeoutMs: 60_000}, async () => {
      const value = Number((await readMemoryFile(root, 'counter')) ?? '0')
      await sleep(Math.floor(Math.random() * 4)) // widen the read-modify-write window
      await writeMemoryFile(root, 'counter', String(value + 1))
    })
  }
  process.stdout.write('done\n')
} else {
  throw new Error(`unknown mode ${mode}`)
}
