/** hook/: `jarvis hook <event> --agent <agent>`, what the agents' lifecycle hooks run (docs/hooks.md). */
export {DEFAULT_MAX_TOKENS, estimateTokens, fitToBudget, MIN_MAX_TOKENS} from './budget.js'
export {agentIdOf, HOOK_AGENTS, HOOK_EVENTS, type HookAgent, type HookEvent, parseHookAgent, parseHookEvent} from './events.js'
export {readHookStdin} from './input.js'
export {HOOK_LOG_FILE, type HookLogEntry, readHookFailures} from './log.js'
export {logHookFailure, runHook, type RunHookInput, type RunHookResult} from './ops.js'
