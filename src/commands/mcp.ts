import {JarvisCommand} from '../cli/base-command.js'
import {serverFlags} from '../cli/flags.js'
import {runWarmCallOnUse} from '../cli/warm-call-on-use.js'
import {serveStdio} from '../mcp/stdio.js'

export default class Mcp extends JarvisCommand<typeof Mcp> {
  static summary = 'Serve the shared memory to an agent over MCP (stdio).'
  static description = `A Model Context Protocol server on stdin/stdout for one agent session: the tools memory_snapshot, memory_append, memory_search, recall, memory_ls, memory_read, memory_write, memory_edit, memory_grep, task_complete and sync, the memory files as resources (jarvis://memory/<path>) and the prompt jarvis_instructions. It works on the tree found from the working directory (or --dir), as the agent of --agent, JARVIS_AGENT or the tree config, with that agent's own token from the user config (\`jarvis auth login --agent X --with-token\`), else JARVIS_TOKEN, else the user config's token.
A refused call (a secret, a private scope, a locked tree, the server away) is a tool error carrying the exit code the same command would have. stdout carries the protocol only; DEBUG=jarvis:mcp logs to stderr. Agents start it themselves: see \`jarvis agents install\` and docs/mcp.md.`
  static examples = ['<%= config.bin %> mcp', '<%= config.bin %> mcp --dir ~/work/my-app --agent openclaw']
  static enableJsonFlag = false
  static flags = {...serverFlags}

  async run(): Promise<void> {
    await serveStdio({dir: this.flags.dir, agent: this.flags.agent, server: this.flags.server, version: this.config.version, runCall: runWarmCallOnUse})
  }
}
