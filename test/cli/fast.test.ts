/**
 * The doors that skip oclif (bin/run.js → src/cli/fast.ts) answer exactly as oclif would: `--version` prints
 * oclif's own line, and `jarvis hook` with anything unusual (help) still reaches oclif.
 */
import {execFile} from 'node:child_process'
import {promisify} from 'node:util'

import {beforeAll, describe, expect, it} from 'vitest'

import {assertBuilt, runJs} from '../hook/helpers.js'

const run = promisify(execFile)

beforeAll(() => assertBuilt())

describe('fast doors', () => {
  it('--version is the line oclif prints', async () => {
    const fast = await run(process.execPath, [runJs, '--version'])
    const oclif = await run(process.execPath, ['--input-type=module', '-e', `import {execute} from '@oclif/core'; await execute({dir: ${JSON.stringify(`file://${runJs}`)}, args: ['--version']})`], {cwd: new URL('../..', import.meta.url).pathname})
    expect(fast.stdout).toMatch(/^jarvis-memory\/\d+\.\d+\.\d+ \S+ node-v\d+/)
    expect(fast.stdout).toBe(oclif.stdout)
  })

  it('hook --help is oclif’s help, not a hook run', async () => {
    const help = await run(process.execPath, [runJs, 'hook', '--help'])
    expect(help.stdout).toContain('USAGE')
    expect(help.stdout).toContain('--max-tokens')
  })
})
