import {Flags} from '@oclif/core'

import {agentFlag, agentsOf} from '../../cli/agents-flags.js'
import {renderStatus} from '../../cli/agents-render.js'
import {JarvisCommand} from '../../cli/base-command.js'
import {agentsStatus, type AgentsStatusResult} from '../../agents/ops.js'

export default class AgentsStatus extends JarvisCommand<typeof AgentsStatus> {
  static summary = 'What is wired for each agent, where, and whether its jarvis server starts.'
  static description = `Per agent: the MCP server registration, hooks, instructions and approval found in the project's and your own files, and the server's state: connected (the registered command starts and answers the MCP handshake), registered but not started (the agent will not start it until you approve it or trust the folder: the reason is named), fails to start (with its error), or not registered. For each wired agent, the token its hooks and server use, and when it has none of its own (none stored for it, and the one at hand shared with another wired agent), what to set: see \`jarvis auth login\`.`
  static examples = ['<%= config.bin %> agents status', '<%= config.bin %> agents status --agent gemini --json']

  static flags = {
    agent: agentFlag,
    probe: Flags.boolean({description: 'Start each registered server to check that it answers.', default: true, allowNo: true}),
  }

  async run(): Promise<AgentsStatusResult> {
    const result = await agentsStatus({dir: this.flags.dir, agents: agentsOf(this.flags.agent), probe: this.flags.probe})
    this.log(renderStatus(result))
    return result
  }
}
