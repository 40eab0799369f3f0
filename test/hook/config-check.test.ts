/**
 * The prompt hook parses the tree's config only when it changed since a prompt found it good; a config broken
 * since is still reported, by the real hook process.
 */
import {readFile, utimes, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {checkConfigOnce} from '../../src/hook/config-check.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {assertBuilt, hookEnv, hooksLog, runHook} from './helpers.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))
beforeAll(() => assertBuilt())

const DAY_AGO = new Date(Date.now() - 86_400_000)

async function tree() {
  const dir = await tempDir('jarvis-hook-config-')
  dirs.push(dir)
  const {root} = await initTree(dir, {agent: 'claude', project: 'atlas'})
  const config = join(root, '.nexus', 'config.json')
  await utimes(config, DAY_AGO, DAY_AGO)
  return {root, config}
}

describe('the config check of the prompt hook', () => {
  it('parses the config once while it stays the same, and again when it changes', async () => {
    const {root, config} = await tree()
    let checks = 0
    const check = async () => void checks++
    await checkConfigOnce(root, check)
    await checkConfigOnce(root, check)
    await checkConfigOnce(root, check)
    expect(checks).toBe(1)
    await writeFile(config, (await readFile(config, 'utf8')).replace('atlas', 'orion'))
    await checkConfigOnce(root, check)
    expect(checks).toBe(2)
    // Changed just now: its mtime is within the racy window of the check, so it is not trusted yet.
    await checkConfigOnce(root, check)
    expect(checks).toBe(3)
  })

  it('notes nothing for a config found broken: every prompt checks it again', async () => {
    const {root} = await tree()
    let checks = 0
    const broken = async () => {
      checks++
      throw new Error('broken')
    }
    await expect(checkConfigOnce(root, broken)).rejects.toThrow('broken')
    await expect(checkConfigOnce(root, broken)).rejects.toThrow('broken')
    expect(checks).toBe(2)
  })

  it('a config broken after prompts found it good is reported by the next prompt (hooks.log), and the hook exits 0', async () => {
    const {root, config} = await tree()
    const home = await tempDir('jarvis-hook-config-home-')
    dirs.push(home)
    const env = hookEnv(home, 'claude')
    const input = {session_id: 's1', cwd: root, hook_event_name: 'UserPromptSubmit', prompt: 'how do we roll out pgbouncer?'}
    for (let i = 0; i < 2; i++) expect((await runHook('prompt', 'claude', input, {cwd: root, env})).code).toBe(0)
    expect(await hooksLog(root)).not.toMatch(/config/)
    await writeFile(config, '{"sync": {"lockTimeout": "soon"}, ')
    const run = await runHook('prompt', 'claude', input, {cwd: root, env})
    expect(run.code).toBe(0)
    expect(await hooksLog(root)).toMatch(/config\.json/)
  })
})
