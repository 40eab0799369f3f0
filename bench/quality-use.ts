/**
 * Memory under use: the coding-memory set's questions asked again after 10, 100 and 1,000 simulated agent sessions
 * whose episodes the real hooks wrote. Each session is what the hooks of Claude Code, Gemini CLI or Codex CLI (in
 * turn) see of a person asking one of the set's questions:
 *
 * - the prompt hook (`jarvis hook prompt`) answers the prompt with the memory it finds, and the simulated agent
 *   reads the first file it was shown and answers from it (or says it found nothing) — so what the hook shows
 *   shapes what the next episodes say, as with a real agent;
 * - in some sessions the person then asks for a change, and the agent reads the note and edits a source file;
 * - the transcript is written in the agent's own format (test/hook/helpers.ts: Claude Code JSONL, Gemini CLI JSONL,
 *   Codex rollout), and the recording hooks run as the agent runs them: `stop` after each turn, `session-end` at
 *   the end (Claude Code and Gemini CLI; Codex CLI records at `stop`).
 *
 * Hooks are called in process (`runHook` of src/hook, what `jarvis hook <event> --agent <agent>` runs, with the warm
 * path off and no background sync); a sample of sessions is run through the built `bin/run.js` too and must write
 * the same episodes. Questions repeat: by 1,000 sessions each has been asked about four times, by all three agents.
 */
import {spawn} from 'node:child_process'
import {mkdir, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {performance} from 'node:perf_hooks'

import {runHook} from '../src/hook/index.js'
import {readConfig, writeConfig} from '../src/store/index.js'
import {seededRandom} from '../test/events/fakes.js'
import {claudeTranscript, codexRollout, geminiTranscript, type Turn} from '../test/hook/helpers.js'
import {codingCorpus} from './quality-coding.js'
import {corpusTree, fmt, jarvisRecall, type Question, type Rankings, recallAt} from './quality-measure.js'
import {jarvisBin} from './process.js'
import {table} from './stats.js'

/** After how many sessions the questions are asked again; JARVIS_BENCH_SESSIONS=100 stops earlier, for a quick look. */
const LAST = Number(process.env.JARVIS_BENCH_SESSIONS) > 0 ? Math.floor(Number(process.env.JARVIS_BENCH_SESSIONS)) : 1000
export const CHECKPOINTS = [...[0, 10, 100].filter((n) => n < LAST), LAST]
const AGENTS = ['claude', 'gemini', 'codex'] as const
type Agent = (typeof AGENTS)[number]
/** Sessions also run through the built binary, in a second tree, to check that in process is the same thing. */
const BINARY_SAMPLE = 6
const START = Date.parse('2026-01-05T08:00:00.000Z')
const HOURS = 3_600_000

/** What the hooks of one simulated session are fed. */
interface SessionPlan {
  agent: Agent
  sessionId: string
  start: number
  prompt: string
  /** The follow-up turn asking for a change, when there is one. */
  work?: {prompt: string; file: string; answer: string}
}

const OPENERS = ['', '', '', 'Quick question: ', 'Before I start on this: ', 'Can you check the memory — ', 'Reminder for me: ']
const WORK_ASKS = ['Thanks. Please apply that to {file}.', 'Good, update {file} accordingly.', 'OK, make the change in {file} and keep it small.']
const WORK_ANSWERS = [
  'Done: updated {file} as the note describes. We decided to keep the existing behaviour behind a flag for now.',
  'Changed {file}; tests pass locally. Going with the approach from the notes rather than a new setting.',
  'Edited {file}. The fix is to follow the documented convention; nothing else needed changing.',
]

function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)]
}

/** The sessions, deterministic: questions in a shuffled order, round after round, agents in turn. */
export function sessionPlans(questions: Question[], count: number, seed = 27): SessionPlan[] {
  const next = seededRandom(seed)
  const plans: SessionPlan[] = []
  let order: number[] = []
  for (let i = 0; i < count; i++) {
    if (order.length === 0) order = questions.map((_, q) => q).sort(() => next() - 0.5)
    const question = questions[order.pop()!]
    const agent = AGENTS[i % AGENTS.length]
    const area = question.answers[0].split('/')[0]
    plans.push({
      agent,
      sessionId: `${agent === 'codex' ? '0198c1d2' : 'a1b2c3d4'}-0000-4000-8000-${String(i + 1).padStart(12, '0')}`,
      start: START + i * 4 * HOURS,
      prompt: `${pick(next, OPENERS)}${question.query}`,
      ...(next() < 0.3 ? {work: {prompt: pick(next, WORK_ASKS), file: `services/${area}/src/${pick(next, ['config', 'handler', 'client', 'worker'])}.ts`, answer: pick(next, WORK_ANSWERS)}} : {}),
    })
  }
  return plans
}

/** The memory files a prompt hook's answer shows, in order (its `[MEMORY CONTEXT]` block's `- <path>` lines). */
export function shownPaths(stdout: string): string[] {
  let text = stdout
  try {
    const parsed = JSON.parse(stdout) as {hookSpecificOutput?: {additionalContext?: string}; prependContext?: string}
    text = parsed.hookSpecificOutput?.additionalContext ?? parsed.prependContext ?? stdout
  } catch {
    // plain text
  }
  return [...text.matchAll(/^- (\S+\.md)\b/gm)].map((m) => m[1])
}

/** What an agent would say after reading a memory file: its first sentences (an episode: its last answer). */
function answerFrom(path: string, text: string): string {
  const body = text.replace(/^---\n[\s\S]*?\n---\n/, '')
  const last = /^## Last answer\n([\s\S]*?)(?:\n## |$)/m.exec(body)
  const lines = (last ? last[1] : body)
    .split('\n')
    .map((l) => l.replace(/^[-*\d.)\s]+/, '').trim())
    .filter((l) => l && !l.startsWith('#') && !l.startsWith('```') && !l.startsWith('|'))
  const said = lines.join(' ').slice(0, 320).replace(/\s\S*$/, '')
  return `According to the shared memory (${path}): ${said}`
}

const NOTHING = 'I found nothing about this in the shared memory, so I searched the repository instead; nothing conclusive there either.'

const HOOK_EVENT_NAMES: Record<Agent, {stop: string; end?: string; prompt: string}> = {
  claude: {prompt: 'UserPromptSubmit', stop: 'Stop', end: 'SessionEnd'},
  gemini: {prompt: 'BeforeAgent', stop: 'AfterAgent', end: 'SessionEnd'},
  codex: {prompt: 'UserPromptSubmit', stop: 'Stop'},
}

/** One hook call: in process, or through the built binary as the agent runs it. */
type HookRunner = (event: string, agent: Agent, input: Record<string, unknown>, root: string) => Promise<string>

/** An agent's hook environment: no user config, the warm path off, the embeddings settings of this run (if any). */
const hookEnv = (home: string): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('JARVIS_EMBEDDINGS'))),
  PATH: process.env.PATH,
  HOME: home,
  XDG_CONFIG_HOME: join(home, '.config'),
  JARVIS_WARM: 'off',
  NO_COLOR: '1',
  TZ: 'UTC',
})

function inProcess(home: string, now: () => Date): HookRunner {
  return async (event, agent, input, root) =>
    (await runHook({event, agent, stdin: JSON.stringify(input), env: hookEnv(home), cwd: root, now: now(), startSync: async () => undefined})).stdout
}

function builtBinary(home: string): HookRunner {
  return (event, agent, input, root) =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [jarvisBin, 'hook', event, '--agent', agent], {cwd: root, env: hookEnv(home), stdio: ['pipe', 'pipe', 'pipe']})
      let stdout = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
      child.on('error', reject)
      child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`jarvis hook ${event} --agent ${agent} exited ${code}`))))
      child.stdin.end(JSON.stringify(input))
    })
}

function transcriptOf(plan: SessionPlan, cwd: string, turns: Turn[]): string {
  if (plan.agent === 'claude') return claudeTranscript(plan.sessionId, cwd, turns, plan.start)
  if (plan.agent === 'gemini') return geminiTranscript(plan.sessionId, turns, plan.start)
  return codexRollout(plan.sessionId, cwd, turns, plan.start)
}

/** One session, as its agent's hooks see it; the transcript is written to `transcripts/` beside the tree. */
async function runSession(plan: SessionPlan, root: string, transcripts: string, hook: HookRunner): Promise<void> {
  const day = new Date(plan.start).toISOString().slice(0, 10)
  const name = {claude: `${plan.sessionId}.jsonl`, gemini: `session-${day}T08-00-${plan.sessionId.slice(-8)}.jsonl`, codex: `rollout-${day}T08-00-00-${plan.sessionId}.jsonl`}[plan.agent]
  const transcript = join(transcripts, plan.agent, name)
  await mkdir(join(transcripts, plan.agent), {recursive: true})
  const names = HOOK_EVENT_NAMES[plan.agent]
  const base = {session_id: plan.sessionId, transcript_path: transcript, cwd: root}
  const turns: Turn[] = []

  const shown = shownPaths(await hook('prompt', plan.agent, {...base, hook_event_name: names.prompt, prompt: plan.prompt}, root))
  const first = shown[0]
  const read = first === undefined ? null : await readFile(join(root, '.memory', first), 'utf8').catch(() => null)
  turns.push({
    prompt: plan.prompt,
    tools: first === undefined ? [['Bash', {command: 'git grep -n -i "todo"'}]] : [['Read', {file_path: join(root, '.memory', first)}]],
    answer: first === undefined || read === null ? NOTHING : answerFrom(first, read),
  })
  const stop = async () => {
    await writeFile(transcript, transcriptOf(plan, root, turns))
    const last = turns.at(-1)!
    const extra = plan.agent === 'gemini' ? {prompt: last.prompt, prompt_response: last.answer} : {last_assistant_message: last.answer, stop_hook_active: false}
    await hook('stop', plan.agent, {...base, hook_event_name: names.stop, ...extra}, root)
  }
  await stop()
  if (plan.work) {
    const ask = plan.work.prompt.replace('{file}', plan.work.file)
    await hook('prompt', plan.agent, {...base, hook_event_name: names.prompt, prompt: ask}, root)
    turns.push({prompt: ask, tools: [['Read', {file_path: join(root, plan.work.file)}], ['Edit', {file_path: join(root, plan.work.file), old_string: 'a', new_string: 'b'}]], answer: plan.work.answer.replace('{file}', plan.work.file)})
    await stop()
  }
  if (names.end) await hook('session-end', plan.agent, {...base, hook_event_name: names.end, reason: 'exit'}, root)
}

/** A tree holding the set's notes, recording hooks on, no background sync (no server). */
async function usageTree(dir: string, files: Map<string, string>): Promise<string> {
  const root = await corpusTree(dir, files)
  const config = await readConfig(root)
  await writeConfig(root, {...config, project: 'quayside', sync: {...config.sync, autoSync: false}})
  return root
}

async function episodeFiles(root: string): Promise<Map<string, string>> {
  const dir = join(root, '.memory', 'episodes')
  const out = new Map<string, string>()
  for (const day of await readdir(dir).catch(() => [] as string[])) {
    for (const name of await readdir(join(dir, day))) out.set(`episodes/${day}/${name}`, await readFile(join(dir, day, name), 'utf8'))
  }
  return out
}

interface Checkpoint {
  sessions: number
  episodes: number
  keyword: Rankings
  hybrid?: Rankings
  prompt: string[][]
}

async function askAll(root: string, questions: Question[], hybrid: boolean, home: string): Promise<Omit<Checkpoint, 'sessions' | 'episodes'>> {
  const keyword: Rankings = []
  const fused: Rankings = []
  const prompt: string[][] = []
  const hook = inProcess(home, () => new Date())
  for (const [i, {query}] of questions.entries()) {
    keyword.push((await jarvisRecall(root, query, 'keyword')).shown)
    if (hybrid) fused.push((await jarvisRecall(root, query, 'default')).shown)
    const agent = AGENTS[i % AGENTS.length]
    prompt.push(shownPaths(await hook('prompt', agent, {session_id: 'measure', cwd: root, hook_event_name: HOOK_EVENT_NAMES[agent].prompt, prompt: query}, root)))
  }
  return {keyword, ...(hybrid ? {hybrid: fused} : {}), prompt}
}

const isEpisode = (path: string) => path.startsWith('episodes/')

/** The share of questions whose answering note the prompt hook showed (anywhere, or first). */
function promptShare(questions: Question[], shown: string[][], first: boolean): number {
  return questions.filter((q, i) => (first ? q.answers.includes(shown[i][0]) : shown[i].some((p) => q.answers.includes(p)))).length / questions.length
}

/** The share of recall's first 3 places taken by episodes. */
function episodeShare(rankings: Rankings): number {
  const top = rankings.flatMap((r) => r.slice(0, 3))
  return top.length === 0 ? 0 : top.filter(isEpisode).length / top.length
}

export interface UnderUse {
  markdown: string
  /** R@3 at 0 and after the last checkpoint, in the default mode (hybrid when available, else keyword). */
  r3: {first: number; last: number; mode: string}
}

export async function measureUnderUse(work: string): Promise<UnderUse> {
  const started = performance.now()
  const corpus = codingCorpus()
  const {questions} = corpus
  const home = join(work, 'home')
  const root = await usageTree(join(work, 'tree'), corpus.files)
  // The default mode on one question first: hybrid when the code has an embedding model that answers.
  const hybrid = (await jarvisRecall(root, questions[0].query, 'default')).mode === 'hybrid'
  const plans = sessionPlans(questions, CHECKPOINTS.at(-1)!)
  let clock = START
  const hook = inProcess(home, () => new Date(clock))
  const checkpoints: Checkpoint[] = []
  let done = 0
  let sessionMs = 0
  for (const target of CHECKPOINTS) {
    const t = performance.now()
    for (; done < target; done++) {
      clock = plans[done].start + 20 * 60_000
      await runSession(plans[done], root, join(work, 'transcripts'), hook)
    }
    sessionMs += performance.now() - t
    checkpoints.push({sessions: target, episodes: (await episodeFiles(root)).size, ...(await askAll(root, questions, hybrid, home))})
  }

  // The same first sessions through the built binary, in a second tree: the episodes must be the same files.
  const sampleRoot = await usageTree(join(work, 'sample'), corpus.files)
  for (const plan of plans.slice(0, BINARY_SAMPLE)) await runSession(plan, sampleRoot, join(work, 'sample-transcripts'), builtBinary(home))
  const inProcessTree = await usageTree(join(work, 'sample-in-process'), corpus.files)
  for (const plan of plans.slice(0, BINARY_SAMPLE)) {
    clock = plan.start + 20 * 60_000
    await runSession(plan, inProcessTree, join(work, 'sample-transcripts'), hook)
  }
  const [viaBinary, viaProcess] = [await episodeFiles(sampleRoot), await episodeFiles(inProcessTree)]
  const same = viaBinary.size === viaProcess.size && [...viaBinary].every(([path, text]) => stripDates(viaProcess.get(path)) === stripDates(text))
  await Promise.all([sampleRoot, inProcessTree].map((dir) => rm(dir, {recursive: true, force: true})))

  const modeRows = (name: string, get: (c: Checkpoint) => Rankings | undefined) =>
    checkpoints.map((c) => {
      const r = get(c)
      return [c.sessions.toLocaleString('en'), String(c.episodes), name, ...(r ? [1, 3, 5].map((k) => fmt(recallAt(questions, r, k))) : ['not available', '—', '—']), r ? `${(episodeShare(r) * 100).toFixed(0)} %` : '—']
    })
  const rows = [...modeRows('keyword only', (c) => c.keyword), ...(hybrid ? modeRows('hybrid', (c) => c.hybrid) : [])]
  const promptRows = checkpoints.map((c) => [c.sessions.toLocaleString('en'), fmt(promptShare(questions, c.prompt, false)), fmt(promptShare(questions, c.prompt, true)), (c.prompt.reduce((n, s) => n + s.length, 0) / questions.length).toFixed(1), `${((c.prompt.flat().filter(isEpisode).length / Math.max(1, c.prompt.flat().length)) * 100).toFixed(0)} %`])
  const main = (c: Checkpoint) => (hybrid ? c.hybrid! : c.keyword)
  const r3 = {first: recallAt(questions, main(checkpoints[0]), 3), last: recallAt(questions, main(checkpoints.at(-1)!), 3), mode: hybrid ? 'hybrid' : 'keyword only'}
  const markdown = [
    `**Memory under use** (the coding-memory set's ${questions.length} questions asked again after ${CHECKPOINTS.slice(1).map((n) => n.toLocaleString('en')).join(', ')} simulated agent sessions): each session a person asks one of the set's questions of Claude Code, Gemini CLI or Codex CLI in turn (sometimes with an opener, "Quick question: …"), the prompt hook answers with the memory it finds, the agent reads the first file shown and answers from it (or says it found nothing), and in 3 of 10 sessions the person then asks for a change and the agent edits a file. Transcripts in each agent's own format; the hooks run as the agent runs them (prompt, stop after each turn, session-end), in process through \`runHook\` (src/hook); the first ${BINARY_SAMPLE} sessions again through the built \`bin/run.js hook\` in another tree: ${same ? 'the same episodes' : '**different episodes** than in process'}. By ${CHECKPOINTS.at(-1)!.toLocaleString('en')} sessions each question was asked about ${(CHECKPOINTS.at(-1)! / questions.length).toFixed(1)} times. Sessions took ${(sessionMs / 1000).toFixed(0)} s in all, the whole row ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    '',
    table(['sessions', 'episodes', '`recall`', 'R@1', 'R@3', 'R@5', 'episodes among the first 3'], rows),
    '',
    'What the prompt hook shows for the same questions (the files of its block):',
    '',
    table(['sessions', 'an answering note shown', 'an answering note first', 'files shown (mean)', 'of them episodes'], promptRows),
    '',
    'Target:',
    `- ${r3.last >= r3.first ? '✓' : '✗'} \`recall\` (${r3.mode}): R@3 after ${CHECKPOINTS.at(-1)!.toLocaleString('en')} sessions ≥ R@3 at 0 sessions (${fmt(r3.last)} against ${fmt(r3.first)})`,
  ].join('\n')
  return {markdown, r3}
}

/** Episodes written by a process and in process at other wall-clock times differ only in their `updated` stamps. */
function stripDates(text: string | undefined): string | undefined {
  return text?.replace(/^(updated|created|last_accessed):.*$/gm, '$1:')
}

