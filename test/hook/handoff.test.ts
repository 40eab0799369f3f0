/**
 * A conversation handed from tool to tool with `jarvis session sync` (Claude Code → Gemini CLI → Codex CLI → back to
 * Claude Code), each tool's recording hook run as the tool runs it: every session's episode holds what that session
 * did, never what was carried into it — one conversation is not recorded once per tool. The built binary, real
 * session files in each tool's format.
 */
import {appendFile, mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {readTranscriptItems} from '../../src/hook/transcript.js'
import {closedPort} from '../cli/memory-helpers.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {assertBuilt, claudeTranscript, hookEnv, makeProject, type Project, runHook, runJarvisBuilt} from './helpers.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))
beforeAll(() => assertBuilt())

const CLAUDE_SESSION = '11111111-2222-4333-8444-555555555555'
const QUEUE = 'We decided to use RabbitMQ quorum queues for the order service because Kafka is overkill here.'
const RETRIES = 'We decided to retry failed orders three times with exponential backoff.'
const DEAD_LETTERS = 'We decided to move poisoned orders to a dead-letter queue after the last retry.'

/** The decisions of every episode of the tree, by file name. */
async function decisionsByEpisode(project: Project): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {}
  const root = join(project.memory, 'episodes')
  for (const day of await readdir(root).catch(() => [] as string[])) {
    for (const name of await readdir(join(root, day))) {
      const text = await readFile(join(root, day, name), 'utf8')
      const decided = /## Decided\n((?:- .*\n)+)/.exec(text)?.[1] ?? ''
      out[name.replace(/-[0-9a-f-]{36}\.md$|\.md$/, '')] = decided.split('\n').filter(Boolean).map((line) => line.slice(2))
    }
  }
  return out
}

async function sessionSync(project: Project, env: NodeJS.ProcessEnv, args: string[]): Promise<{sessionId: string; path: string}> {
  const run = await runJarvisBuilt(['session', 'sync', ...args, '--force', '--json'], {cwd: project.root, env})
  expect(run.code, run.stderr + run.stdout).toBe(0)
  return (JSON.parse(run.stdout) as {result: {to: {sessionId: string; path: string}}}).result.to
}

describe('a conversation carried from tool to tool', () => {
  it('each tool records what its session did; what was carried in is the episode of the session it came from', async () => {
    const home = await tempDir('jarvis-handoff-home-')
    const project = await makeProject(`http://127.0.0.1:${await closedPort()}`, {autoSync: false, project: 'shop'})
    dirs.push(home, project.root)
    // Each tool's files under this home, as the tools and `jarvis session` find them.
    const env = {...hookEnv(home, 'claude'), HOME: home}
    const stop = (agent: string, input: Record<string, unknown>) => runHook('stop', agent, {cwd: project.root, stop_hook_active: false, ...input}, {cwd: project.root, env})

    // Claude Code decides the queue.
    const claudeDir = join(home, '.claude', 'projects', project.root.replace(/[^A-Za-z0-9]/g, '-'))
    await mkdir(claudeDir, {recursive: true})
    const claudePath = join(claudeDir, `${CLAUDE_SESSION}.jsonl`)
    await writeFile(claudePath, claudeTranscript(CLAUDE_SESSION, project.root, [{prompt: 'Which queue should the order service use?', answer: QUEUE}], Date.parse('2026-12-07T10:00:00.000Z')))
    expect(await stop('claude', {session_id: CLAUDE_SESSION, transcript_path: claudePath})).toMatchObject({code: 0, stdout: '', stderr: ''})

    // Carried into Gemini CLI, where the person only says thanks: no episode, and none repeating Claude's decision.
    const gemini = await sessionSync(project, env, [CLAUDE_SESSION, '--to', 'gemini', '--tag', 'orders'])
    const thanks = await stop('gemini', {session_id: gemini.sessionId, transcript_path: gemini.path, prompt: 'thanks', prompt_response: 'You are welcome.'})
    expect(thanks).toMatchObject({code: 0, stdout: '', stderr: ''})
    expect(await decisionsByEpisode(project)).toEqual({[`claude`]: [QUEUE]})

    // Gemini's own turn decides the retries: its episode holds that, and only that.
    const at = new Date().toISOString()
    await appendFile(gemini.path, `${JSON.stringify({id: 'g-own-1', timestamp: at, type: 'user', content: [{text: 'And failed orders?'}]})}\n${JSON.stringify({id: 'g-own-2', timestamp: at, type: 'gemini', content: RETRIES, thoughts: [], tokens: null, model: 'gemini-2.5-pro'})}\n`)
    await stop('gemini', {session_id: gemini.sessionId, transcript_path: gemini.path, prompt: 'And failed orders?', prompt_response: RETRIES})
    expect(await decisionsByEpisode(project)).toEqual({claude: [QUEUE], gemini: [RETRIES]})

    // On to Codex CLI (from the Gemini session, holding both): a thanks records nothing; its own decision is its episode.
    const codex = await sessionSync(project, env, [gemini.sessionId, '--to', 'codex'])
    await stop('codex', {session_id: codex.sessionId, transcript_path: codex.path, last_assistant_message: 'You are welcome.'})
    expect(await decisionsByEpisode(project)).toEqual({claude: [QUEUE], gemini: [RETRIES]})
    const later = new Date(Date.now() + 1000).toISOString()
    const codexTurn = [
      {timestamp: later, type: 'response_item', payload: {type: 'message', role: 'user', content: [{type: 'input_text', text: 'What about poisoned orders?'}]}},
      {timestamp: later, type: 'response_item', payload: {type: 'message', role: 'assistant', content: [{type: 'output_text', text: DEAD_LETTERS}], phase: 'final_answer'}},
    ]
    await appendFile(codex.path, codexTurn.map((line) => `${JSON.stringify(line)}\n`).join(''))
    await stop('codex', {session_id: codex.sessionId, transcript_path: codex.path, last_assistant_message: DEAD_LETTERS})
    expect(await decisionsByEpisode(project)).toEqual({claude: [QUEUE], gemini: [RETRIES], chatgpt: [DEAD_LETTERS]})

    // Back to Claude Code: it gets Gemini's and Codex's turns; its episode still holds its own decision only, and its
    // own messages, which went out to the others and did not come back, are still its own.
    await sessionSync(project, env, [codex.sessionId, '--to', 'claude'])
    await stop('claude', {session_id: CLAUDE_SESSION, transcript_path: claudePath})
    expect(await decisionsByEpisode(project)).toEqual({claude: [QUEUE], gemini: [RETRIES], chatgpt: [DEAD_LETTERS]})
    const claudeOwn = await readTranscriptItems('claude', claudePath, {root: project.root})
    expect(claudeOwn.items.filter((item) => item.kind === 'answer').map((item) => (item as {text: string}).text)).toEqual([QUEUE])
    expect((await readTranscriptItems('claude', claudePath)).items.filter((item) => item.kind === 'answer').map((item) => (item as {text: string}).text)).toEqual([QUEUE, RETRIES, DEAD_LETTERS])
  }, 60_000)
})
