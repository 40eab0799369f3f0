/**
 * `jarvis prompt --agent <id>`: the shared-memory instructions for an agent's system prompt or
 * instruction file (CLAUDE.md, GEMINI.md, AGENTS.md), naming the MCP tools and this installation's commands.
 */
import {BadInputError, NotATreeError} from '../errors.js'
import {MAX_EVENTS_PER_RUN, RULESET_STAMP} from '../events/index.js'
import {agentIdSchema, eventKindSchema} from '../schemas/index.js'
import {openTree, type TreeContext} from './context.js'
import {readUserConfig, resolveIdentity} from './identity.js'

export interface PromptOptions {
  dir?: string
  server?: string
  agent?: string
  /** The name the CLI is installed under (`this.config.bin`). */
  bin?: string
  /**
   * For a person pasting it into a chat app: ChatGPT (the app, through its jarvis connector) gets its own short block
   * for its custom instructions, which names the connector's tools and no command. Codex CLI, also agent chatgpt,
   * keeps the full block in AGENTS.md (jarvis agents install does not set this).
   */
  forApp?: boolean
}

export interface PromptResult {
  agent: string
  text: string
}

/** Where each agent's system prompt lives: a hint for the person, not the prompt. */
export const PROMPT_PLACEMENT: Record<string, string> = {
  chatgpt: "ChatGPT's custom instructions (Settings, Personalization), with its jarvis connector set up",
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
  if (options.forApp && agent === 'chatgpt') return {agent, text: appPrompt(agent)}
  const bin = options.bin ?? 'jarvis'
  const as = `--agent ${agent}`
  const kinds = eventKindSchema.options.filter((kind) => kind !== 'conflict_resolution').join(', ')
  const lines = [
    `Shared memory (jarvis, ${RULESET_STAMP}): you are agent "${agent}". You share one memory with the other agents of this project through the \`jarvis\` MCP server; the same operations exist on the command line.`,
    `- Before you start: read the memory. It is usually given to you when the session starts; if not, call \`memory_snapshot\` (\`${bin} memory snapshot ${as}\`). The pinned memory comes first, then the recent events: they are the current rules of the work.`,
    `- Before you answer about earlier decisions, conventions or set-up, look them up: \`recall\` or \`memory_search\` with the topic.`,
    `- When something is settled, write it down: \`memory_append\` with a kind (${kinds}), a stable key and a short content saying what, why and since when, at most ${MAX_EVENTS_PER_RUN} events per task:`,
    `  \`${bin} memory append ${as} --kind decision --key <stable_key> --content "<what, why, since when>"\` (scope global, project:<slug> or agent:${agent} for notes only you read).`,
    `  The log is append-only: to replace an event, append the new one with \`supersedes\` set to the old event_id. Longer notes go to memory files (\`memory_write\`, \`memory_edit\`).`,
    `- Never store secrets, tokens, passwords or personal data such as e-mail addresses and phone numbers: the memory refuses them (exit 5).`,
    `- If the memory cannot be read (a tool or command says so, exit 3), tell the user, ask them to restore the connection or the permissions, and stop. Never go on from a guess.`,
  ]
  if (identity.server) lines.push(`- Shared memory server: ${identity.server}.`)
  else lines.push(`- No shared memory server is set for this tree yet: set JARVIS_SERVER (or \`${bin} init --server URL\`) and JARVIS_TOKEN to ${agent}'s token.`)
  lines.push(`- Details: \`${bin} memory --help\`.`)
  return {agent, text: lines.join('\n')}
}

/**
 * The short block for ChatGPT's custom instructions (a field of at most 1,500 characters): the app reaches the memory
 * only through its jarvis connector (`jarvis serve`'s /mcp, signed in with OAuth), so it names the tools and no command.
 */
function appPrompt(agent: string): string {
  return [
    `You share one memory with my other AI agents through the "jarvis" connector; there you are agent "${agent}".`,
    '- Start: when a conversation is about my work or my projects, first read the memory with memory_snapshot and follow its pinned rules; before answering about earlier decisions, conventions or set-up, look them up with recall or memory_search.',
    `- End: when something is settled (a decision, a fact, a preference), save it with memory_append: a kind (decision, fact, config, constraint, workflow, todo), a stable key like decision:db_choice, and a short content saying what, why and since when. Only settled things, at most ${MAX_EVENTS_PER_RUN} per conversation; scope agent:${agent} for notes only you read.`,
    '- Never save secrets, passwords, tokens or personal data such as e-mail addresses and phone numbers: the memory refuses them.',
    '- If the memory cannot be read (a jarvis tool fails, or the connector is signed out), tell me and stop there: never go on from a guess.',
  ].join('\n')
}
