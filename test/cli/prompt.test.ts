import {afterAll, describe, expect, it} from 'vitest'

import {initTree} from '../../src/store/index.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {cleanEnv} from './memory-helpers.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

async function dir(): Promise<string> {
  const made = await tempDir('jarvis-prompt-')
  dirs.push(made)
  return made
}

describe('jarvis prompt', () => {
  it('prints the shared-memory instructions for the agent, with this installation’s commands and the configured server', async () => {
    const cwd = await dir()
    await initTree(cwd, {server: 'http://127.0.0.1:8787', agent: 'claude'})
    const run = await runJarvis(['prompt', '--agent', 'gemini'], {cwd, env: cleanEnv(cwd)})
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('JARVIS_RULESET=v1.0')
    expect(run.stdout).toContain('you are agent "gemini"')
    expect(run.stdout).toMatch(/memory_snapshot.*recall.*memory_append/s)
    expect(run.stdout).not.toMatch(/MUST-|seed|§/)
    expect(run.stdout).toContain('`jarvis memory snapshot --agent gemini`')
    expect(run.stdout).toContain('`jarvis memory append --agent gemini --kind decision --key <stable_key> --content')
    expect(run.stdout).toMatch(/at most 7/)
    expect(run.stdout).toMatch(/refuses them \(exit 5\).*stop\. Never go on from a guess/s)
    expect(run.stdout).toContain('http://127.0.0.1:8787')
    expect(run.stderr).toMatch(/system instructions/)
  })

  it('--json gives {agent, text}; without a server it says how to set one', async () => {
    const cwd = await dir()
    const run = await runJarvis(['prompt', '--agent', 'openclaw', '--json'], {cwd, env: cleanEnv(cwd)})
    expect(run.code, run.stderr).toBe(0)
    const {result} = envelope<{agent: string; text: string}>(run)
    expect(Object.keys(result!).sort()).toEqual(['agent', 'text'])
    expect(result!.agent).toBe('openclaw')
    expect(result!.text).toContain('jarvis memory snapshot --agent openclaw')
    expect(result!.text).toMatch(/set JARVIS_SERVER/)
  })

  it("for chatgpt, the short block for ChatGPT's custom instructions: the connector's tools, no command, within the field's 1,500 characters", async () => {
    const cwd = await dir()
    const run = await runJarvis(['prompt', '--agent', 'chatgpt'], {cwd, env: cleanEnv(cwd)})
    expect(run.code, run.stderr).toBe(0)
    const text = run.stdout.trim()
    expect(text.length).toBeLessThanOrEqual(1500)
    expect(text).toContain('"jarvis" connector')
    expect(text).toContain('agent "chatgpt"')
    expect(text).toMatch(/memory_snapshot.*recall or memory_search.*memory_append/s)
    expect(text).toMatch(/Never save secrets.*refuses them/s)
    expect(text).toMatch(/cannot be read.*tell me and stop.*never go on from a guess/s)
    expect(text).not.toMatch(/jarvis memory|JARVIS_|exit \d|MUST-|seed|§/)
    expect(run.stderr).toMatch(/custom instructions/)
  })

  it('an unknown agent, or none, exits 2', async () => {
    const cwd = await dir()
    const unknown = await runJarvis(['prompt', '--agent', 'siri', '--json'], {cwd, env: cleanEnv(cwd)})
    expect(unknown.code).toBe(2)
    expect(envelope(unknown).error!.message).toMatch(/unknown agent "siri": one of chatgpt, claude, gemini, openclaw/)
    const none = await runJarvis(['prompt', '--json'], {cwd, env: cleanEnv(cwd)})
    expect(none.code).toBe(2)
    expect(envelope(none).error!.message).toMatch(/--agent/)
  })
})
