/**
 * `jarvis session sync` (issue 5): a 10,000-message Claude Code session carried to Gemini CLI, then 100 new
 * messages carried incrementally, side by side with the seed 002 quadratic `computeAppendOnlyDiff` on the same
 * data. End to end in-process (read both transcripts, merge, write the checkpoint and the backup, registry and
 * sync state, under the tree lock), against temporary CLAUDE_CONFIG_DIR / GEMINI_CLI_HOME.
 *
 * Standalone: `node --import tsx bench/session.ts [messages] [new]`.
 */
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {mergeTranscript} from '../src/merge/transcript.js'
import {type SyncSettings, syncSettingsSchema, type UniversalMessage} from '../src/schemas/index.js'
import {appendClaudeSession, readClaudeSession, writeClaudeSession} from '../src/session/claude.js'
import {readGeminiSession} from '../src/session/gemini.js'
import {keyedSide, markOf, planCarry, syncSession} from '../src/session/sync.js'
import {initTree} from '../src/store/index.js'
import {seedAppendOnlyDiff} from './merge.js'
import {median, ms, ratio, table, timeRuns, type BenchSection} from './stats.js'

/** Deterministic, so two runs measure the same work. */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = Math.imul(state ^ (state >>> 15), state | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * A realistic conversation: user prompts, assistant replies, and one in four turns a tool call (Bash or Read)
 * with its result. Some prompts repeat ("continue"), as people type them.
 */
function conversation(count: number, start: number, seed: number, sessionId: string): UniversalMessage[] {
  const next = random(seed)
  const out: UniversalMessage[] = []
  let n = start
  const base = Date.parse('2026-05-01T09:00:00Z')
  const message = (role: 'user' | 'assistant', type: UniversalMessage['type'], content: UniversalMessage['content']): UniversalMessage => {
    n++
    return {id: `m${n}`, parentId: null, sessionId, timestamp: new Date(base + n * 1000).toISOString(), role, type, content, metadata: {provider: 'claude'}}
  }
  while (out.length < count) {
    const turn = n
    out.push(message('user', 'message', {text: next() < 0.05 ? 'continue' : `Step ${turn}: please look at module ${Math.floor(next() * 500)} and tell me what it does.`}))
    if (next() < 0.25 && out.length + 3 <= count) {
      const bash = next() < 0.5
      const id = `toolu_${turn}`
      out.push(
        message('assistant', 'tool_use', {
          tool_use: bash
            ? {tool_name: 'Bash', tool_input: {command: `grep -rn "fn${turn}" src`, description: 'Search'}, tool_use_id: id}
            : {tool_name: 'Read', tool_input: {file_path: `/repo/src/m${turn}.ts`}, tool_use_id: id},
        }),
      )
      out.push(message('user', 'tool_result', {tool_result: {output: `src/m${turn}.ts:${Math.floor(next() * 300)}: export function fn${turn}() {}`, tool_use_id: id}}))
    }
    if (out.length < count) out.push(message('assistant', 'message', {text: `Module ${turn} parses the input, ${'validates it and keeps a cache. '.repeat(1 + Math.floor(next() * 4))}`}))
  }
  return out.slice(0, count)
}

async function merges(source: UniversalMessage[], target: UniversalMessage[], carried: number): Promise<{ours: number; full: number; seed: number; seedCarried: number}> {
  // The recorded point as the previous sync left it (what syncSession keeps in .nexus/sync-state.json).
  const previous = {source: markOf(carried, keyedSide(source).key), target: markOf(target.length, keyedSide(target).key), targetOwn: 0}
  const ours = median(await timeRuns(15, () => planCarry({source: keyedSide(source), target: keyedSide(target), previous, incremental: true, deduplicate: true}), 2))
  const full = median(await timeRuns(7, () => mergeTranscript(target, source), 1))
  const seed = median(await timeRuns(3, () => seedAppendOnlyDiff(source, target), 1))
  return {ours, full, seed, seedCarried: seedAppendOnlyDiff(source, target).operations.length}
}

export async function benchSession(size = 10_000, fresh = 100): Promise<BenchSection> {
  const work = await mkdtemp(join(tmpdir(), 'jarvis-bench-session-'))
  try {
    const root = join(work, 'project')
    await initTree(root, {})
    const env = {...process.env, CLAUDE_CONFIG_DIR: join(work, 'claude'), GEMINI_CLI_HOME: join(work, 'gemini-home')}
    const settings: SyncSettings = {...syncSettingsSchema.parse({}), retryDelay: 10}
    const {sessionId, path} = await writeClaudeSession(root, conversation(size, 0, 1, 'bench'), {env, title: 'bench'})
    const sync = () => syncSession({root, settings, ref: sessionId, to: 'gemini', env})

    let first!: Awaited<ReturnType<typeof sync>>
    const initial = (await timeRuns(1, async () => (first = await sync())))[0]
    if (first.added !== size) throw new Error(`bench: the first sync carried ${first.added} of ${size}`)
    const rows: string[][] = []
    const noop = median(await timeRuns(5, sync, 1))

    // What the seed would diff for the same incremental step: the whole source against the whole target.
    const before = await readGeminiSession(first.to.path)
    let round = 0
    const incremental: number[] = []
    let last = first
    for (let i = 0; i < 5; i++) {
      await appendClaudeSession(path, conversation(fresh, size + 10_000 * ++round, 100 + round, sessionId))
      const start = performance.now()
      last = await sync()
      incremental.push(performance.now() - start)
      if (last.mode !== 'incremental' || last.added !== fresh) throw new Error(`bench: expected an incremental sync of ${fresh}, got ${last.mode} +${last.added}`)
    }
    const incMedian = median(incremental)
    const source = (await readClaudeSession(path)).messages
    const target = before.messages
    const step = await merges(source.slice(0, size + fresh), target, size)

    rows.push([`${size.toLocaleString('en-US')} messages`, 'first sync to a new Gemini chat session and checkpoint (one run)', ms(initial), '', ''])
    rows.push([`${size.toLocaleString('en-US')} messages`, 'second sync, nothing new (writes nothing)', ms(noop), '', ''])
    rows.push([`+${fresh} new`, 'incremental sync (end to end)', ms(incMedian), '', ''])
    rows.push([`+${fresh} new`, 'merge step only', ms(step.ours), ms(step.seed), ratio(step.ours, step.seed)])
    rows.push([`+${fresh} new`, 'merge step only, jarvis full merge (`mergeTranscript`, the fallback)', ms(step.full), ms(step.seed), ratio(step.full, step.seed)])

    const markdown = [
      `A Claude Code session of ${size.toLocaleString('en-US')} messages (prompts, replies, and a tool call with its result in one turn of four) carried to Gemini CLI with \`syncSession\` (what \`jarvis session sync <id> --to gemini\` runs, in-process): read the source and both Gemini targets (the chat session \`gemini --resume\` opens and the \`/chat\` checkpoint), merge, write both and \`.nexus/gemini-backup/\`, the registry and the sync state, under the tree lock. Then ${fresh} new messages appended in Claude Code and carried again, five times (median).`,
      '',
      table(['session', 'operation', 'jarvis', 'seed 002 `computeAppendOnlyDiff`', 'jarvis vs seed'], rows),
      '',
      `The merge step of an incremental sync checks the recorded prefix with a few keys and merges only the ${fresh} new messages against what the target got since; the seed compares every source message with \`some()\` over the whole target (${(source.slice(0, size + fresh).length).toLocaleString('en-US')} × ${target.length.toLocaleString('en-US')}). The end-to-end time is dominated by reading and writing the three files, which grows with the session, not with the new messages. ` +
        `The seed keys messages on role and text only, so every tool call and tool result (no text) looks like a copy of the first one: on this data it would carry ${step.seedCarried} of the ${fresh} new messages; jarvis carried ${last.added}.`,
    ].join('\n')
    return {title: 'Session sync: Claude Code → Gemini CLI', markdown}
  } finally {
    await rm(work, {recursive: true, force: true})
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [size, fresh] = process.argv.slice(2).map(Number)
  process.stdout.write(`${(await benchSession(size || undefined, fresh || undefined)).markdown}\n`)
}
