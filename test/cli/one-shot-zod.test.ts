/** The fast door turns zod's compiled parsers off without loading zod (src/cli/one-shot-zod.ts). */
import {execFileSync} from 'node:child_process'
import {fileURLToPath} from 'node:url'

import {describe, expect, it} from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** What a new process's zod says of `jitless` after `script`, and whether it still rejects bad input in its words. */
function zodIn(script: string): {jitless: unknown; message: string} {
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {cwd: root, encoding: 'utf8'})
  return JSON.parse(out) as {jitless: unknown; message: string}
}

const check = [
  "const {z, config} = await import('zod')",
  "const result = z.looseObject({n: z.number().int()}).safeParse({n: 'x'})",
  'console.log(JSON.stringify({jitless: config().jitless, message: result.error.issues[0].message}))',
].join('\n')

describe('one-shot zod', () => {
  it('is jitless when set before zod loads, as in each bundle of the fast door', () => {
    expect(zodIn(`await import('./src/cli/one-shot-zod.ts')\n${check}`)).toEqual({jitless: true, message: 'Invalid input: expected number, received string'})
  })

  it('is jitless when set after zod loaded', () => {
    expect(zodIn(`await import('zod')\nawait import('./src/cli/one-shot-zod.ts')\n${check}`)).toEqual({jitless: true, message: 'Invalid input: expected number, received string'})
  })

  it('without it, zod compiles its parsers (the setting is what changes)', () => {
    expect(zodIn(check).jitless).toBeUndefined()
  })
})
