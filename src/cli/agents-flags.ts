import {Flags} from '@oclif/core'

import {BadInputError} from '../errors.js'
import {HOOK_AGENTS, type HookAgent, parseHookAgent} from '../hook/events.js'

export const agentFlag = Flags.string({
  description: 'Which agent: claude, gemini, codex, openclaw or all.',
  default: 'all',
})

/** `all` → every agent; `chatgpt` is Codex. */
export function agentsOf(flag: string): HookAgent[] {
  if (flag === 'all') return [...HOOK_AGENTS]
  const agent = parseHookAgent(flag)
  if (!agent) throw new BadInputError(`unknown agent ${JSON.stringify(flag)} for --agent: use claude, gemini, codex, openclaw or all`, {field: '--agent'})
  return [agent]
}
