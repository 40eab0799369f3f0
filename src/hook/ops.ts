/**
 * `jarvis hook <event> --agent <agent>`: the operation behind the command (docs/hooks.md). It takes the
 * agent's stdin as text and returns what to print; it never throws and never asks for a non-zero exit.
 *
 * - session-start: pinned memory, recent events of the agent's scopes and the most relevant memory files, cut
 *   to a token budget, in the agent's format; when the memory cannot be read, ONE line saying so and why. A resumed
 *   conversation that holds the context of the same memory state gets one line saying so (resume.ts).
 * - prompt: the recall for the prompt typed (the context an agent put around it taken out), only hits that pass
 *   the relevance threshold; nothing at all otherwise. The files shown are noted for the session (shown.ts).
 * - pre-compact, stop, session-end: what the session decided, changed and learned recorded as an episode
 *   (episode.ts; nothing for a session that only asked), then synced in the background when `sync.autoSync` is
 *   on; nothing printed.
 *
 * Any failure is a line in `.nexus/hooks.log` (when there is a tree to log in) and exit 0. Modules an event
 * does not use are not loaded.
 */
// The module itself, not the session barrel: the prompt hook loads no session reader.
import {stripInjected} from '../session/injected.js'
import {memoryDir} from '../store/root.js'
import {DEFAULT_MAX_TOKENS, MIN_MAX_TOKENS} from './budget.js'
import {agentIdOf, type HookAgent, type HookEvent, parseHookAgent, parseHookEvent, RECORDING_EVENTS} from './events.js'
import type {PromptRecall} from './context.js'
import {formatAnswer, oneLine, reasonLine, sessionEventTexts, unreadableNotice} from './format.js'
import {findHookTree, type HookInput, parseHookInput} from './input.js'
import {appendHookLog} from './log.js'

export interface RunHookInput {
  /** The `<event>` argument as given. */
  event: string | undefined
  /** The `--agent` flag as given. */
  agent: string | undefined
  /** Everything the agent wrote on stdin. */
  stdin: string
  env: NodeJS.ProcessEnv
  /** The process's working directory (the agent runs hooks in the session's directory). */
  cwd: string
  /** `--dir`: the tree, instead of finding it. */
  dir?: string
  maxTokens?: number
  now?: Date
  /** Starts the background sync (default: a detached `background-sync.js`); tests may replace it. */
  startSync?: (root: string, agent: string, env: NodeJS.ProcessEnv) => Promise<unknown>
}

export interface RunHookResult {
  /** What to print on stdout, exactly ('' for nothing). */
  stdout: string
  /** The tree the hook worked on, if one was found. */
  root?: string
  /** What was written to `.nexus/hooks.log`, one entry per element. */
  logged: string[]
  /** The episode written or updated by a recording event. */
  episode?: string
  /** True when a background sync was started. */
  syncStarted?: boolean
}

/** Lock wait of the session-end hook: Claude Code gives SessionEnd hooks about 1.5 s in all. */
export const SESSION_END_LOCK_MS = 1000

/** Runs one hook; never throws. */
export async function runHook(input: RunHookInput): Promise<RunHookResult> {
  const now = input.now ?? new Date()
  const parsed = parseHookInput(input.stdin)
  const agent = parseHookAgent(input.agent)
  const event = parseHookEvent(input.event)
  const root = findHookTree({dir: input.dir, input: parsed.input, agent, env: input.env, processCwd: input.cwd})
  const result: RunHookResult = {stdout: '', root, logged: []}
  const log = async (reason: string) => {
    if (!root) return
    result.logged.push(reason)
    await appendHookLog(root, {at: new Date().toISOString(), agent: agent ?? input.agent ?? '-', event: event ?? input.event ?? '-', reason}).catch(() => {})
  }
  if (!agent) {
    await log(`unknown agent ${JSON.stringify(input.agent ?? '')}: use --agent claude, gemini, codex or openclaw`)
    return result
  }
  if (!event) {
    await log(`unknown hook event ${JSON.stringify(input.event ?? '')}: use session-start, prompt, pre-compact, stop or session-end`)
    return result
  }
  if (!root) return result // not a jarvis project: nothing to read, nothing to record, nowhere to log
  if (!parsed.ok) await log(parsed.reason)
  try {
    if (event === 'session-start') result.stdout = await sessionStart(root, agent, parsed.input, input, now, log)
    else if (event === 'prompt') result.stdout = await prompt(root, agent, parsed.input, log)
    else if (RECORDING_EVENTS.has(event)) await record(root, agent, event, parsed.input, parsed.ok, input, now, log, result)
  } catch (error) {
    await log(describe(error))
  }
  return result
}

/** An error as one log line: its message, lines joined with `; `, without the snapshot's "nothing is shown" preamble. */
function describe(error: unknown): string {
  const message = error instanceof Error ? error.message || error.name : String(error)
  return oneLine(message.replace(/^the shared memory cannot be read, so nothing is shown: /, '').replace(/\s*\n\s*/g, '; '), 600)
}

async function treeSettings(root: string) {
  // The config's own module, not the store's barrel (the tree lock, the sync's files): the prompt hook reads only this.
  const {readConfig} = await import('../store/sync-state.js')
  return readConfig(root)
}

async function sessionStart(root: string, agent: HookAgent, hook: HookInput, input: RunHookInput, now: Date, log: (reason: string) => Promise<void>): Promise<string> {
  const maxTokens = Math.max(MIN_MAX_TOKENS, input.maxTokens ?? DEFAULT_MAX_TOKENS)
  try {
    const config = await treeSettings(root)
    const [{readSessionContext}, {continuesConversation, keepsContextOnResume, readLastContextState}] = await Promise.all([import('./context.js'), import('./resume.js')])
    // A resumed, forked or compacted conversation holds earlier contexts (or a summary of them): this one replaces them.
    const continues = continuesConversation(hook.source)
    const replaces = continues || hook.source === 'compact'
    const context = await readSessionContext({root, agentId: agentIdOf(agent), project: config.project, cwd: hook.cwd, maxTokens, lockTimeoutMs: config.sync.lockTimeout, now, replaces, sessionId: hook.sessionId})
    // Noted for the session's episode: a decision that only restates what the session was told is no news (shown.ts).
    if (hook.sessionId && (context.events.length > 0 || context.files.length > 0)) {
      const {noteSessionStart} = await import('./shown.js')
      await noteSessionStart(root, agentIdOf(agent), hook.sessionId, {events: context.events, listed: context.files}).catch((error: unknown) =>
        log(`what the session start showed was not noted: ${describe(error)}`),
      )
    }
    // A resumed conversation that holds the context of this very memory state gets one line, not the same block again.
    const holds = continues && keepsContextOnResume(agent) && hook.transcriptPath !== undefined && (await readLastContextState(hook.transcriptPath)) === context.state
    return formatAnswer(agent, 'session-start', holds ? context.unchanged : context.text, hook.hookEventName)
  } catch (error) {
    const reason = describe(error)
    await log(`the shared memory could not be read: ${reason}`)
    return formatAnswer(agent, 'session-start', unreadableNotice(shortReason(error)), hook.hookEventName)
  }
}

/** The notice's reason is at most this long: the detail is shortened, never what to do (reasonLine). */
export const NOTICE_REASON_CHARS = 320

/** The reason in the one-line notice: the first line of the cause, without the "to fix" advice of the lines after it. */
function shortReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const first = message
    .split('\n')[0]
    .replace(/^the shared memory cannot be read, so nothing is shown: /, '')
    .replace(/; try again when it has finished$/, '')
  return reasonLine(first, NOTICE_REASON_CHARS)
}

async function prompt(root: string, agent: HookAgent, hook: HookInput, log: (reason: string) => Promise<void>): Promise<string> {
  // What the person typed: Gemini CLI hands the hook its prompt with the session context in front (<hook_context>).
  const typed = stripInjected(hook.prompt ?? '')
  if (typed.trim() === '') return ''
  // Checked: a malformed .nexus/config.json is reported as by every hook (parsed again only when it changed).
  const [{checkConfigOnce, treeProject}, {askWarm}] = await Promise.all([import('./config-check.js'), import('../warm/client.js')])
  await checkConfigOnce(root, () => treeSettings(root))
  // Another project's files are not this session's (relevance.ts ofAnotherProject).
  const project = treeProject(root)
  // A jarvis running in the tree (`jarvis sync --watch`, `jarvis mcp`) answers from its watched index; else this process.
  const warm = await askWarm<PromptRecall>(root, 'prompt-recall', {prompt: typed, ...(project === undefined ? {} : {project})})
  // Nobody answered: in a large tree a watch is started for the prompts to come (warm/demand.ts).
  if (warm === undefined) await (await import('../warm/demand.js')).startWatcherIfNobody(root).catch(() => {})
  const recall = warm ?? (await (await import('./context.js')).readPromptRecall({root, prompt: typed, project}))
  // Noted for the session's episode: the notes it was given are what its answers repeat (shown.ts).
  if (hook.sessionId && recall.files.length > 0) {
    const {noteShown} = await import('./shown.js')
    await noteShown(root, agentIdOf(agent), hook.sessionId, recall.files).catch((error: unknown) => log(`the files shown to the session were not noted: ${describe(error)}`))
  }
  return formatAnswer(agent, 'prompt', recall.block, hook.hookEventName)
}

async function record(
  root: string,
  agent: HookAgent,
  event: HookEvent,
  hook: HookInput,
  inputRead: boolean,
  input: RunHookInput,
  now: Date,
  log: (reason: string) => Promise<void>,
  result: RunHookResult,
): Promise<void> {
  const sessionId = hook.sessionId ?? input.env.GEMINI_SESSION_ID ?? input.env.CLAUDE_CODE_SESSION_ID
  if (!sessionId) {
    // Input that could not be read is logged as that, its cause: no second line for the session id it did not give.
    if (inputRead) await log('no session_id in the hook input: the session was not recorded')
    return
  }
  const config = await treeSettings(root)
  const [{readTranscriptItems}, {addsToMemory, digestOf, isEmptyDigest, memoryFilesUsed, memoryTexts, recordEpisode, withoutEchoes}, {forgetShown, readListed, readShown}] = await Promise.all([
    import('./transcript.js'),
    import('./episode.js'),
    import('./shown.js'),
  ])
  let items: Awaited<ReturnType<typeof readTranscriptItems>> = {items: []}
  if (hook.transcriptPath && agent !== 'openclaw') {
    try {
      items = await readTranscriptItems(agent, hook.transcriptPath, {root})
    } catch (error) {
      // A session that ended before writing its transcript (`claude mcp list` starts and ends one) had nothing in it;
      // nor is a missing one at a stop: Claude Code -p can run its Stop hook before its transcript is on disk.
      const missing = ((error as Error).cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'
      if (!missing) await log(`the transcript could not be read (${describe(error)}); the episode holds only what the hook input says`)
    }
  }
  const extra = [
    ...(hook.prompt && event === 'stop' ? [{kind: 'ask' as const, text: stripInjected(hook.prompt)}] : []),
    ...[hook.lastAssistantMessage, hook.promptResponse].filter((t): t is string => Boolean(t)).map((text) => ({kind: 'answer' as const, text})),
  ]
  const all = [...items.items, ...extra]
  const cwd = items.cwd ?? hook.cwd ?? root
  const memory = memoryDir(root)
  const shown = await readShown(root, agentIdOf(agent), sessionId)
  // What the session was told — the memory files it was given, read or listed at its start, the shared events its start
  // showed — it only repeats when it says it again.
  const used = memoryFilesUsed(all, cwd, [...shown, ...(await readListed(root, agentIdOf(agent), sessionId))], memory)
  const told = [...(await memoryTexts(root, used)), ...(await eventsShown(root, agentIdOf(agent), sessionId))]
  const digest = withoutEchoes(digestOf(all, cwd, shown, memory), told)
  if (event === 'session-end') await forgetShown(root, agentIdOf(agent), sessionId, now).catch(() => {})
  if (isEmptyDigest(digest)) return // nothing happened in this session yet
  const startDate = validDate(items.startedAt)
  const lockTimeoutMs = event === 'session-end' ? Math.min(config.sync.lockTimeout, SESSION_END_LOCK_MS) : config.sync.lockTimeout
  const adds = addsToMemory(digest, all, cwd, memory)
  const written = await recordEpisode(root, {agent, agentId: agentIdOf(agent), sessionId, digest, adds, startDate, now, lockTimeoutMs, project: config.project})
  // Episodes of earlier hooks that had found the tree locked, written first.
  for (const earlier of written.earlier ?? []) if (earlier.refused) await log(earlier.refused)
  const startSync = async () => {
    await (input.startSync ?? (await import('./background-sync.js')).startBackgroundSync)(root, agent, input.env)
    result.syncStarted = true
  }
  if (written.kept) {
    if (written.leftOut) await log(`${written.path}: ${written.leftOut}`)
    await log(written.kept)
    // The background sync waits for the tree, writes the episode, and syncs it when autoSync is on.
    await startSync()
    return
  }
  const changed = written.changed || (written.earlier ?? []).some((earlier) => earlier.changed)
  // Skipped: the session only asked and was told, nothing to record.
  if (!written.skipped) {
    result.episode = written.path
    if (written.leftOut) await log(`${written.path}: ${written.leftOut}`)
    if (written.refused) await log(written.refused)
  }
  if (changed && config.sync.enabled && config.sync.autoSync) await startSync()
}

/**
 * The texts of the shared events the session was shown at its start (noted by the session-start hook); for a session
 * whose start noted none (it began before this version, or without a session id), those of the tree's last snapshot
 * of the agent's memory, which every session start of the agent shows.
 */
async function eventsShown(root: string, agentId: string, sessionId: string): Promise<string[]> {
  const {readShownEvents} = await import('./shown.js')
  const noted = await readShownEvents(root, agentId, sessionId)
  if (noted.length > 0) return noted
  const {readSnapshotCache} = await import('../ops/events/snapshot.js')
  const cached = await readSnapshotCache(root).catch(() => undefined)
  return cached && cached.agent_id === agentId ? sessionEventTexts({pinnedMd: cached.snapshot.pinned_md, recent: cached.snapshot.recent_events}) : []
}

function validDate(iso: string | undefined): string | undefined {
  if (!iso) return undefined
  const time = Date.parse(iso)
  return Number.isNaN(time) ? undefined : new Date(time).toISOString().slice(0, 10)
}

/** Logs a failure that happened before the hook could run (bad arguments): in the tree of the working directory, if any. */
export async function logHookFailure(options: {env: NodeJS.ProcessEnv; cwd: string; reason: string}): Promise<void> {
  const root = findHookTree({input: {}, env: options.env, processCwd: options.cwd})
  if (!root) return
  await appendHookLog(root, {at: new Date().toISOString(), agent: '-', event: '-', reason: oneLine(options.reason, 600)}).catch(() => {})
}
