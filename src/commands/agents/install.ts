import {Flags} from '@oclif/core'

import {agentFlag, agentsOf} from '../../cli/agents-flags.js'
import {renderInstall} from '../../cli/agents-render.js'
import {JarvisCommand} from '../../cli/base-command.js'
import {type AgentsInstallResult, installAgents} from '../../agents/ops.js'

export default class AgentsInstall extends JarvisCommand<typeof AgentsInstall> {
  static summary = 'Wire Claude Code, Gemini CLI, Codex CLI and OpenClaw to the shared memory.'
  static description = `For each agent: registers the MCP server "jarvis" where the agent looks for it, installs its lifecycle hooks (\`jarvis hook\`: memory at session start, recall per prompt, the session kept as an episode) and adds the shared-memory instructions to the file it reads (CLAUDE.md, GEMINI.md, AGENTS.md) between <!-- jarvis:begin --> and <!-- jarvis:end -->.
The agents start jarvis by absolute path with this node, so it works without jarvis on PATH. Install merges into the agent's files and never touches what it did not write; a malformed file stops it with exit 2 and nothing changed; running it again changes nothing; --uninstall gives the files back as they were. Project scope writes the project's files (and approves the project server for Claude Code); user scope writes the files in your home directory. Trust in Gemini CLI and Codex CLI stays your decision: install says when an agent still needs it, and when an agent has no token of its own (several agents on one machine: \`jarvis auth login --agent X --with-token\`). See docs/agents.md.`
  static examples = [
    '<%= config.bin %> agents install',
    '<%= config.bin %> agents install --agent claude --dry-run',
    '<%= config.bin %> agents install --agent gemini --scope user',
    '<%= config.bin %> agents install --uninstall',
  ]

  static flags = {
    agent: agentFlag,
    scope: Flags.string({description: 'project: this project’s files; user: your own, for every project.', options: ['project', 'user'], default: 'project'}),
    'dry-run': Flags.boolean({description: 'Print the diff of every file and write nothing.'}),
    uninstall: Flags.boolean({description: 'Remove exactly what install added.'}),
  }

  async run(): Promise<Omit<AgentsInstallResult, 'diff'> & {diff?: string}> {
    const result = await installAgents({
      dir: this.flags.dir,
      agents: agentsOf(this.flags.agent),
      scope: this.flags.scope as 'project' | 'user',
      dryRun: this.flags['dry-run'],
      uninstall: this.flags.uninstall,
    })
    this.log(renderInstall(result))
    return result.dryRun ? result : {...result, diff: undefined}
  }
}

