/**
 * What `jarvis agents install` writes for each agent, and where (agent-wiring research, read again from the
 * installed programs): the MCP server registration, the lifecycle hooks, the instruction block and, for Claude
 * Code's project servers, the approval. PURE: paths and values only; ops/agents.ts reads and writes the files.
 */
import {join} from 'node:path'

import {agentIdOf, type HookAgent, type HookEvent, WATCHED_HOOK_EVENTS} from '../hook/events.js'
import {type Invocation, shellLine} from '../invocation.js'

export const SERVER_NAME = 'jarvis'

/**
 * Codex CLI runs a hook only once a person trusted it, by a hash jarvis cannot check: said at install, and beside
 * the hooks in `agents status`, since a hook Codex skips leaves no trace anywhere.
 */
export const CODEX_HOOK_TRUST =
  'Codex CLI runs a hook only after you review and trust it, and again after a jarvis upgrade changes it (it skips an untrusted one silently); until then the agent still has the MCP tools and AGENTS.md.'
export type Scope = 'project' | 'user'
export const AGENT_LABELS: Record<HookAgent, string> = {claude: 'Claude Code', gemini: 'Gemini CLI', codex: 'Codex CLI', openclaw: 'OpenClaw'}

export type Change =
  /** The MCP server entry: a JSON path to `jarvis`, or the `[mcp_servers.jarvis]` table of a TOML file. */
  | {kind: 'mcp'; file: string; path: string[]; server: Invocation}
  /**
   * One lifecycle hook: `hook` is jarvis's entry in a group's `hooks` list, and the groups are the agent's
   * `hooks.<native event>` array (each group `{matcher?, hooks: [...]}`).
   */
  | {kind: 'hook'; file: string; event: HookEvent; path: string[]; hook: unknown}
  /** `jarvis` among the project servers Claude Code may start. */
  | {kind: 'approval'; file: string; path: string[]}
  | {kind: 'instructions'; file: string; body: string}

export interface WiringInput {
  agent: HookAgent
  scope: Scope
  /** The jarvis tree's root: project scope needs one; user scope uses it only where the agent has no project files. */
  root?: string
  home: string
  /** `$CODEX_HOME`, default `~/.codex`. */
  codexHome?: string
  jarvis: Invocation
  /** `bin/jarvis` beside `jarvis`, when the hooks may run it (invocation.ts, `shellClientOf`). */
  shellClient?: string
  /** Whether `root` is in a git repository (elsewhere Claude Code honours settings.local.json only in a folder it trusts). */
  gitRepo: boolean
  /** The instruction text (`jarvis prompt`); no block when undefined. */
  instructions?: string
  /** OpenClaw's workspace AGENTS.md exists (OpenClaw writes it at its first run; creating it first would skip its own). */
  openclawWorkspace: boolean
}

export interface Wiring {
  changes: Change[]
  /** What a person should know: approval or trust this agent still needs, what it lacks. */
  notes: string[]
}

/** Each agent's own name for our hook events; timeouts in the agent's own unit. */
const HOOK_EVENTS: Record<'claude' | 'gemini' | 'codex', Array<[HookEvent, string, number]>> = {
  claude: [['session-start', 'SessionStart', 30], ['prompt', 'UserPromptSubmit', 15], ['pre-compact', 'PreCompact', 60], ['stop', 'Stop', 60], ['session-end', 'SessionEnd', 30]],
  // Codex clamps a SessionEnd hook to 3 s (and says so at every start when asked for more).
  codex: [['session-start', 'SessionStart', 30], ['prompt', 'UserPromptSubmit', 15], ['pre-compact', 'PreCompact', 60], ['stop', 'Stop', 60], ['session-end', 'SessionEnd', 3]],
  // Gemini CLI counts hook timeouts in milliseconds.
  gemini: [['session-start', 'SessionStart', 30_000], ['prompt', 'BeforeAgent', 15_000], ['pre-compact', 'PreCompress', 60_000], ['stop', 'AfterAgent', 60_000], ['session-end', 'SessionEnd', 30_000]],
}

const HOOK_TAIL = / hook [a-z-]+ --agent [a-z]+$/

/** A hook entry jarvis wrote (this jarvis or an older one): its command ends in `hook <event> --agent <agent>`. */
export function isJarvisHook(hook: unknown): boolean {
  const command = (hook as {command?: unknown} | null)?.command
  return typeof command === 'string' && HOOK_TAIL.test(command)
}

/** The `hooks` list of a hook group; empty for anything else. */
export function hooksOfGroup(group: unknown): unknown[] {
  const hooks = (group as {hooks?: unknown} | null)?.hooks
  return Array.isArray(hooks) ? hooks : []
}

/** The MCP server as the agent starts it: `<node> <bin/run.js> mcp --agent <id> [--dir <root>]`. */
export function serverInvocation(jarvis: Invocation, agent: HookAgent, root: string | undefined): Invocation {
  return {command: jarvis.command, args: [...jarvis.args, 'mcp', '--agent', agentIdOf(agent), ...(root ? ['--dir', root] : [])]}
}

/**
 * The command of one hook. The hooks the agent waits for at every prompt and every turn (WATCHED_HOOK_EVENTS) run the
 * shell client when there is one: with a watch of the tree running (`jarvis mcp` is one), the watch runs them and
 * no Node starts.
 */
export function hookCommand(jarvis: Invocation, agent: HookAgent, event: HookEvent, shellClient?: string): string {
  const tail = ['hook', event, '--agent', agent]
  return shellLine(WATCHED_HOOK_EVENTS.has(event) && shellClient ? {command: shellClient, args: tail} : {command: jarvis.command, args: [...jarvis.args, ...tail]})
}

function hookChanges(input: WiringInput, agent: 'claude' | 'gemini' | 'codex', file: string): Change[] {
  return HOOK_EVENTS[agent].map(([event, native, timeout]) => {
    const command = hookCommand(input.jarvis, agent, event, input.shellClient)
    const hook = agent === 'gemini' ? {type: 'command', name: `jarvis-${event}`, command, timeout} : {type: 'command', command, timeout}
    return {kind: 'hook', file, event, path: ['hooks', native], hook}
  })
}

export function wiringFor(input: WiringInput): Wiring {
  const {agent, scope, home} = input
  const project = scope === 'project' ? input.root : undefined
  if (scope === 'project' && !project) throw new Error('project scope needs the tree root')
  const instructions = (file: string): Change[] => (input.instructions === undefined ? [] : [{kind: 'instructions', file, body: input.instructions}])
  const notes: string[] = []
  const changes: Change[] = []
  switch (agent) {
    case 'claude': {
      const server = serverInvocation(input.jarvis, agent, project)
      if (project) {
        changes.push({kind: 'mcp', file: join(project, '.mcp.json'), path: ['mcpServers', SERVER_NAME], server})
        // Claude Code starts a project server only once approved; its own dialog writes this key, and Claude moves
        // an approval found in ~/.claude.json here itself (it calls that place legacy).
        const approval: Change = {kind: 'approval', file: join(project, '.claude', 'settings.local.json'), path: ['enabledMcpjsonServers']}
        changes.push(approval, ...hookChanges(input, agent, join(project, '.claude', 'settings.json')), ...instructions(join(project, 'CLAUDE.md')))
        notes.push(`Claude Code starts a project's MCP server only once you approve it: jarvis approved "${SERVER_NAME}" for you in ${approval.file} (what Claude's own approval dialog writes).`)
        if (!input.gitRepo) notes.push('Outside a git repository Claude Code honours that approval once you have accepted its trust dialog for this folder (it asks the first time you start it here).')
      } else {
        changes.push({kind: 'mcp', file: join(home, '.claude.json'), path: ['mcpServers', SERVER_NAME], server})
        changes.push(...hookChanges(input, agent, join(home, '.claude', 'settings.json')), ...instructions(join(home, '.claude', 'CLAUDE.md')))
      }
      break
    }
    case 'gemini': {
      const dir = project ? join(project, '.gemini') : join(home, '.gemini')
      const settings = join(dir, 'settings.json')
      changes.push({kind: 'mcp', file: settings, path: ['mcpServers', SERVER_NAME], server: serverInvocation(input.jarvis, agent, project)})
      changes.push(...hookChanges(input, agent, settings), ...instructions(project ? join(project, 'GEMINI.md') : join(dir, 'GEMINI.md')))
      notes.push('Gemini CLI starts MCP servers and runs project hooks only in a folder you trust (it asks when you start it there, or /permissions); jarvis does not trust folders for you.')
      break
    }
    case 'codex': {
      const dir = project ? join(project, '.codex') : (input.codexHome ?? join(home, '.codex'))
      changes.push({kind: 'mcp', file: join(dir, 'config.toml'), path: [SERVER_NAME], server: serverInvocation(input.jarvis, agent, project)})
      changes.push(...hookChanges(input, agent, join(dir, 'hooks.json')), ...instructions(project ? join(project, 'AGENTS.md') : join(dir, 'AGENTS.md')))
      if (project) notes.push('Codex CLI reads .codex/ only in a project you trust (it asks when you start it there); jarvis does not trust projects for you.')
      notes.push(CODEX_HOOK_TRUST)
      break
    }
    case 'openclaw': {
      // OpenClaw has one configuration, the user's: the server is bound to this tree with --dir.
      changes.push({kind: 'mcp', file: join(home, '.openclaw', 'openclaw.json'), path: ['mcp', 'servers', SERVER_NAME], server: serverInvocation(input.jarvis, agent, input.root)})
      const agentsFile = join(home, '.openclaw', 'workspace', 'AGENTS.md')
      if (input.openclawWorkspace) changes.push(...instructions(agentsFile))
      else if (input.instructions !== undefined) notes.push(`OpenClaw has no workspace yet (${agentsFile}): start OpenClaw once, then install again to add the instructions.`)
      if (scope === 'project') notes.push('OpenClaw has only a user configuration: its "jarvis" server is registered there, bound to this tree.')
      notes.push('OpenClaw has no command hooks; it reads the memory through the MCP tools. Its MEMORY.md can follow jarvis memory as a replica: see `jarvis replicate`.')
      break
    }
  }
  return {changes, notes}
}
