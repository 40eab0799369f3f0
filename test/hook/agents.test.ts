/**
 * The proof that an agent reads the memory by itself: Claude Code and Gemini CLI, installed from npm, run for
 * real with `-p` in a jarvis project whose hooks run `jarvis hook`, against a stand-in model on 127.0.0.1 that
 * records what the agent sends. The request to the model must carry the pinned memory (session start) and the
 * recall for the prompt (prompt submitted); the session must end up recorded as an episode of what it decided (not
 * of the prompt), naming the memory file it was given.
 */
import {execFile} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {installAgentCli} from '../helpers/agent-clis.js'
import {type ModelStandIn, startModelStandIn} from '../helpers/model-stand-in.js'
import {removeAll, startTestServer, tempDir, type TestServer, TOKENS} from '../helpers/world.js'
import {appendEvent, assertBuilt, makeProject, type Project, repoRoot, runJs, waitForBackgroundSyncs, writeMemory} from './helpers.js'

const exec = promisify(execFile)
const dirs: string[] = []
let server: TestServer
let model: ModelStandIn

const PINNED = 'Deploys go out only on Tuesdays, after the canary has run for an hour.'
const MEMORY_FILE = `---
title: Canary deploy checklist
tags: [deploy]
---
# Canary deploy checklist

Promote the canary to all regions once its error rate stays under 0.1 % for an hour.
`
const PROMPT = 'What does the canary deploy checklist say about promoting to all regions?'

beforeAll(async () => {
  assertBuilt()
  server = await startTestServer()
  model = await startModelStandIn({reply: 'We decided to promote the canary after an hour.'})
  dirs.push(server.dataDir)
  await appendEvent(server.url, 'claude', {kind: 'decision', key: 'deploy-day', content: PINNED, scope: 'global'})
})

afterAll(async () => {
  await model?.close()
  await server?.close()
  await removeAll(dirs)
})

/** The hook command exactly as the installer writes it: `"<node>" "<abs bin/run.js>" hook <event> --agent <agent>`. */
const hookCommand = (event: string, agent: string) => `"${process.execPath}" "${runJs}" hook ${event} --agent ${agent}`

/** The agent's hook wiring: `jarvis agents install` when it is built, else the same entries written here. */
async function wireHooks(agent: 'claude' | 'gemini', project: Project, env: NodeJS.ProcessEnv): Promise<void> {
  if (existsSync(join(repoRoot, 'dist', 'commands', 'agents', 'install.js'))) {
    await exec(process.execPath, [runJs, 'agents', 'install', '--agent', agent], {cwd: project.root, env})
    return
  }
  const events =
    agent === 'claude'
      ? {SessionStart: 'session-start', UserPromptSubmit: 'prompt', PreCompact: 'pre-compact', Stop: 'stop', SessionEnd: 'session-end'}
      : {SessionStart: 'session-start', BeforeAgent: 'prompt', PreCompress: 'pre-compact', AfterAgent: 'stop', SessionEnd: 'session-end'}
  const hooks = Object.fromEntries(
    Object.entries(events).map(([name, event]) => [name, [{hooks: [{type: 'command', command: hookCommand(event, agent), ...(agent === 'gemini' ? {name: `jarvis-${event}`, timeout: 30_000} : {timeout: 30})}]}]]),
  )
  const dir = join(project.root, agent === 'claude' ? '.claude' : '.gemini')
  await mkdir(dir, {recursive: true})
  await writeFile(join(dir, 'settings.json'), JSON.stringify({hooks}, null, 2))
}

async function agentProject(agentId: string): Promise<{project: Project; home: string}> {
  const project = await makeProject(server.url, {autoSync: true, agent: agentId})
  const home = await tempDir(`jarvis-${agentId}-home-`)
  dirs.push(project.root, home)
  await writeMemory(project, 'runbooks/canary-deploy-checklist.md', MEMORY_FILE)
  // The agent's token lives where a user keeps it: the user config file (an agent may strip *TOKEN* variables).
  await mkdir(join(home, '.config', 'jarvis'), {recursive: true})
  await writeFile(join(home, '.config', 'jarvis', 'config.json'), JSON.stringify({token: TOKENS[agentId]}), {mode: 0o600})
  return {project, home}
}

function baseEnv(home: string): NodeJS.ProcessEnv {
  const keep = ['PATH', 'LANG', 'TERM', 'TMPDIR', 'SystemRoot']
  const env: NodeJS.ProcessEnv = Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]))
  return {...env, HOME: home, NO_COLOR: '1', CI: '1'}
}

async function episodesOf(project: Project): Promise<string[]> {
  const out: string[] = []
  const base = join(project.memory, 'episodes')
  for (const day of await readdir(base).catch(() => [] as string[])) for (const name of await readdir(join(base, day))) out.push(await readFile(join(base, day, name), 'utf8'))
  return out
}

describe('real agents read the shared memory through their hooks', () => {
  it('Claude Code -p: the request to the model carries the pinned memory and the recall; the session becomes an episode', async () => {
    const claude = await installAgentCli('claude')
    const {project, home} = await agentProject('claude')
    const env = {
      ...baseEnv(home),
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_API_KEY: 'sk-ant-stand-in',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
    }
    await wireHooks('claude', project, env)
    const before = model.requests.length
    const run = await exec(claude, ['-p', PROMPT, '--output-format', 'json', '--max-turns', '1'], {cwd: project.root, env, timeout: 120_000}).catch((error) => error as {stdout: string; stderr: string; code: number})
    const sent = model.requests
      .slice(before)
      .filter((r) => r.url.startsWith('/v1/messages') && !r.url.includes('count_tokens'))
      .map((r) => r.body)
      .join('\n')
    expect(sent, `claude said:\n${run.stdout}\n${run.stderr}`).toContain(PINNED)
    expect(sent).toContain('[MEMORY CONTEXT]')
    expect(sent).toContain('runbooks/canary-deploy-checklist.md')
    await waitForBackgroundSyncs(project.root)
    const episodes = (await episodesOf(project)).join('\n')
    expect(episodes).toContain('## Decided\n- We decided to promote the canary after an hour.')
    expect(episodes).toContain('## Memory used\n- runbooks/canary-deploy-checklist.md')
    expect(episodes).not.toContain(PROMPT)
    expect(await readFile(join(project.root, '.nexus', 'hooks.log'), 'utf8').catch(() => '')).toBe('')
  }, 300_000)

  it('Gemini CLI -p: the request to the model carries the pinned memory and the recall; the session becomes an episode', async () => {
    const gemini = await installAgentCli('gemini')
    const {project, home} = await agentProject('gemini')
    await mkdir(join(home, '.gemini'), {recursive: true})
    await writeFile(join(home, '.gemini', 'settings.json'), JSON.stringify({security: {auth: {selectedType: 'gemini-api-key'}}, general: {disableAutoUpdate: true}, privacy: {usageStatisticsEnabled: false}}))
    await writeFile(join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({[project.root]: 'TRUST_FOLDER'}))
    const env = {...baseEnv(home), GOOGLE_GEMINI_BASE_URL: model.url, GEMINI_API_KEY: 'stand-in-key'}
    await wireHooks('gemini', project, env)
    const before = model.requests.length
    const run = await exec(gemini, ['-p', PROMPT], {cwd: project.root, env, timeout: 120_000}).catch((error) => error as {stdout: string; stderr: string; code: number})
    const sent = model.requests
      .slice(before)
      .filter((r) => /:(stream)?[gG]enerateContent/.test(r.url) && !/complexity_score/.test(r.body))
      .map((r) => r.body)
      .join('\n')
    expect(sent, `gemini said:\n${run.stdout}\n${run.stderr}`).toContain(PINNED)
    expect(sent).toContain('[MEMORY CONTEXT]')
    expect(sent).toContain('runbooks/canary-deploy-checklist.md')
    await waitForBackgroundSyncs(project.root)
    const episodes = (await episodesOf(project)).join('\n')
    expect(episodes).toContain('## Decided\n- We decided to promote the canary after an hour.')
    expect(episodes).toContain('## Memory used\n- runbooks/canary-deploy-checklist.md')
    // Gemini CLI handed its hooks the prompt with the session context in front: none of it is in the episode.
    expect(episodes).not.toMatch(/hook_context|JARVIS SHARED MEMORY|MEMORY CONTEXT/)
    expect(await readFile(join(project.root, '.nexus', 'hooks.log'), 'utf8').catch(() => '')).toBe('')
  }, 300_000)
})
