/**
 * Child process for the kill -9 test: writes the two contents A and B to the target in turn with
 * writeFileAtomic, forever, and prints "ready" once the first complete version is on disk.
 * Usage: node --import tsx atomic-writer.ts <target> <bytes>
 */
import {writeFileAtomic} from '../../../src/store/atomic.js'
import {contentA, contentB} from './contents.js'

const [target, bytesArg] = process.argv.slice(2)
const bytes = Number(bytesArg)
const a = contentA(bytes)
const b = contentB(bytes)

await writeFileAtomic(target, a)
process.stdout.write('ready\n')
for (let i = 0; ; i++) await writeFileAtomic(target, i % 2 === 0 ? b : a)
