/**
 * `jarvis prompt --agent <id>`: the shared-memory instructions for an agent's system prompt (seed 001 §9, in
 * English), naming this installation's real commands.
 */
import {BadInputError, NotATreeError} from '../errors.js'
import {MAX_EVENTS_PER_RUN, RULESET_STAMP} from '../events/index.js'
import {agentIdSchema, eventKindSchema} from '../schemas/index.js'
import {openTree, type TreeContext} from './context.js'
import {readUserConfig, resolveIdentity} from './settings.js'

export interface PromptOptions {
  dir?: string
  server?: string
  agent?: string
  /** The name the CLI is installed under (`this.config.bin`). */
  bin?: string
}

export interface PromptResult {
  agent: string
  text: string
}

/** Where each agent's system prompt lives (seed 001 §9, "Implementation note"): a hint for the person, not the prompt. */
export const PROMPT_PLACEMENT: Record<string, string> = {
  chatgpt: 'Custom Instructions or the system prompt',
  claude: 'the system prompt (API or CLAUDE.md / CLI config)',
  gemini: 'the system instructions (GEMINI.md / CLI config)',
  openclaw: 'config.yaml or its equivalent',
}

export async function agentPrompt(options: PromptOptions): Promise<PromptResult> {
  let tree: TreeContext | undefined
  try {
    tree = await openTree(options.dir)
  } catch (error) {
    if (!(error instanceof NotATreeError) || options.dir !== undefined) throw error
  }
  const identity = resolveIdentity({flags: options, env: process.env, tree: tree?.config, user: await readUserConfig()})
  if (!identity.agentId) throw new BadInputError('which agent is the prompt for? pass --agent (chatgpt, claude, gemini, openclaw)', {field: '--agent'})
  const parsed = agentIdSchema.safeParse(identity.agentId)
  if (!parsed.success) {
    throw new BadInputError(`unknown agent ${JSON.stringify(identity.agentId)}: one of ${agentIdSchema.options.join(', ')}`, {field: '--agent', agent: identity.agentId})
  }
  const agent = parsed.data
  const bin = options.bin ?? 'jarvis'
  const as = `--agent ${agent}`
  const lines = [
    `JARVIS 4-Party Memory Protocol (${RULESET_STAMP}) — you are agent "${agent}":`,
    `- At the start of every run, read the shared memory (MUST-1): \`${bin} memory snapshot ${as}\`. Read the pinned memory first, then the recent events; they are the current rules of the work.`,
    `- At the end of a run, write only what was settled (MUST-2), at most ${MAX_EVENTS_PER_RUN} short events with stable keys:`,
    `  \`${bin} memory append ${as} --kind decision --key <stable_key> --content "<what, why, since when>"\``,
    `  (kinds: ${eventKindSchema.options.filter((kind) => kind !== 'conflict_resolution').join(', ')}; --scope global | project:<slug> | agent:${agent}).`,
    `  The log is append-only: to replace an event, append the new one with \`--supersedes <event_id>\`.`,
    `- Never store secrets, tokens, passwords or personal data such as e-mail addresses and phone numbers (MUST-3); the command refuses them (exit 5).`,
    `- If the memory cannot be read (exit 3), say so, ask the user to restore the connection or the permissions, and stop. Never go on from a guess (MUST-6).`,
  ]
  if (identity.server) lines.push(`- Shared memory server: ${identity.server}; JARVIS_TOKEN must hold ${agent}'s token.`)
  else lines.push(`- Shared memory server: set JARVIS_SERVER (or \`${bin} init --server URL\`) and JARVIS_TOKEN to ${agent}'s token.`)
  lines.push(`- Details: \`${bin} memory --help\`.`)
  return {agent, text: lines.join('\n')}
}
