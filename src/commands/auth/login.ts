import {Flags} from '@oclif/core'

import {renderLogin} from '../../cli/auth-render.js'
import {JarvisCommand} from '../../cli/base-command.js'
import {serverFlags} from '../../cli/flags.js'
import {readStdin} from '../../cli/input.js'
import {type AuthLoginResult, loginAgent} from '../../ops/auth.js'

export default class AuthLogin extends JarvisCommand<typeof AuthLogin> {
  static summary = "Store an agent's own token for a server, read from stdin."
  static description = `For several agents on one machine: each gets its own token, kept in your user config ($XDG_CONFIG_HOME/jarvis/config.json, mode 0600, under tokens["<server>"]["<agent>"]), never in a tree and never printed. The hooks and the MCP server of that agent (\`jarvis hook … --agent X\`, \`jarvis mcp --agent X\`) then use it whatever JARVIS_TOKEN holds: a token stored for the agent wins over the variable.
The token is read from stdin, like \`gh auth login --with-token\`. Before storing it, jarvis asks the server whether it is this agent's token (a token of another agent, or one the server does not know, is refused with nothing stored); --no-verify skips that. The server and the agent default to JARVIS_SERVER / JARVIS_AGENT, then the tree's.`
  static examples = [
    '<%= config.bin %> auth login --agent gemini --with-token < gemini.token',
    'echo "$CODEX_TOKEN" | <%= config.bin %> auth login --agent codex --with-token --server http://127.0.0.1:8787',
  ]

  static flags = {
    ...serverFlags,
    'with-token': Flags.boolean({description: 'Read the token from stdin.', required: true}),
    verify: Flags.boolean({description: "Ask the server whether the token is this agent's before storing it.", default: true, allowNo: true}),
  }

  async run(): Promise<AuthLoginResult> {
    const result = await loginAgent({dir: this.flags.dir, server: this.flags.server, agent: this.flags.agent, tokenText: await readStdin(), verify: this.flags.verify})
    this.log(renderLogin(result))
    return result
  }
}
