/**
 * docs/commands.md and docs/commands/*.md are generated from the commands (`npm run docs:commands`): generated
 * again here, they must be what is committed, so the reference never says other than `--help`.
 */
import {execFileSync} from 'node:child_process'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {afterAll, describe, expect, it} from 'vitest'

import {assertBuilt} from '../hook/helpers.js'
import {removeAll, tempDir} from '../helpers/world.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const dirs: string[] = []
afterAll(async () => removeAll(dirs))

describe('the command reference', () => {
  it('is what the commands say today (run npm run docs:commands after changing a command)', async () => {
    assertBuilt()
    const out = await tempDir('jarvis-command-docs-')
    dirs.push(out)
    execFileSync(process.execPath, [join(root, 'scripts', 'command-docs.mjs'), out], {stdio: ['ignore', 'ignore', 'pipe']})
    const read = (base: string) => Object.fromEntries([['commands.md', readFileSync(join(base, 'docs', 'commands.md'), 'utf8')], ...readdirSync(join(base, 'docs', 'commands')).map((name) => [name, readFileSync(join(base, 'docs', 'commands', name), 'utf8')])])
    expect(read(out)).toEqual(read(root))
  })
})
