/**
 * The hook events and agents `jarvis hook <event> --agent <agent>` knows, and the name each agent gives an event.
 * PURE: names only.
 */
import type {AgentId} from '../schemas/index.js'

export const HOOK_EVENTS = ['session-start', 'prompt', 'pre-compact', 'stop', 'session-end'] as const
export type HookEvent = (typeof HOOK_EVENTS)[number]

export const HOOK_AGENTS = ['claude', 'gemini', 'codex', 'openclaw'] as const
export type HookAgent = (typeof HOOK_AGENTS)[number]

/** The events that record the session as an episode. */
export const RECORDING_EVENTS: ReadonlySet<HookEvent> = new Set(['pre-compact', 'stop', 'session-end'])

/**
 * The events a watch of the tree runs whole (bin/jarvis lists them too): the ones an agent waits for at every prompt
 * and every turn. Not session-start, which asks the server, once a session.
 */
export const WATCHED_HOOK_EVENTS: ReadonlySet<HookEvent> = new Set(['prompt', ...RECORDING_EVENTS])

/**
 * Each agent's own name for our events (agent-wiring research): Claude Code and Codex share one set, Gemini CLI
 * has its own, OpenClaw's plugin hooks have theirs. Also accepted as the `<event>` argument.
 */
const NATIVE: Record<HookEvent, string[]> = {
  'session-start': ['SessionStart', 'session_start'],
  prompt: ['UserPromptSubmit', 'BeforeAgent', 'before_prompt_build', 'user-prompt-submit'],
  'pre-compact': ['PreCompact', 'PreCompress', 'before_compaction'],
  stop: ['Stop', 'AfterAgent', 'agent_end'],
  'session-end': ['SessionEnd', 'session_end'],
}

/** `session-start`, or any agent's own name for it (`SessionStart`, `BeforeAgent`, …); undefined when unknown. */
export function parseHookEvent(name: string | undefined): HookEvent | undefined {
  if (!name) return undefined
  const lower = name.trim().toLowerCase()
  for (const event of HOOK_EVENTS) {
    if (event === lower || NATIVE[event].some((alias) => alias.toLowerCase() === lower)) return event
  }
  return undefined
}

/** `claude`, `gemini`, `codex` (also `chatgpt`), `openclaw`; undefined when unknown. */
export function parseHookAgent(name: string | undefined): HookAgent | undefined {
  const lower = name?.trim().toLowerCase()
  if (lower === 'chatgpt') return 'codex'
  return HOOK_AGENTS.find((agent) => agent === lower)
}

/** The jarvis agent id behind an agent: Codex writes as `chatgpt`. */
export function agentIdOf(agent: HookAgent): AgentId {
  return agent === 'codex' ? 'chatgpt' : agent
}

/** The event names whose answer may carry `hookSpecificOutput.additionalContext`, per agent. */
const CONTEXT_EVENTS: Record<'claude' | 'codex' | 'gemini', Record<'session-start' | 'prompt', string>> = {
  claude: {'session-start': 'SessionStart', prompt: 'UserPromptSubmit'},
  codex: {'session-start': 'SessionStart', prompt: 'UserPromptSubmit'},
  gemini: {'session-start': 'SessionStart', prompt: 'BeforeAgent'},
}

/**
 * The `hookEventName` of an answer. Claude Code refuses an answer whose name is not the event that ran, so
 * the name the agent itself sent (`hook_event_name`) wins when it is one that takes context; else our mapping.
 */
export function answerEventName(agent: 'claude' | 'codex' | 'gemini', event: 'session-start' | 'prompt', sent?: string): string {
  const names = Object.values(CONTEXT_EVENTS[agent])
  if (sent && names.includes(sent)) return sent
  return CONTEXT_EVENTS[agent][event]
}
