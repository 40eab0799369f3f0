import {Flags} from '@oclif/core'

import {renderLogout} from '../../cli/auth-render.js'
import {JarvisCommand} from '../../cli/base-command.js'
import {serverFlags} from '../../cli/flags.js'
import {type AuthLogoutResult, logoutAgent} from '../../ops/auth.js'

export default class AuthLogout extends JarvisCommand<typeof AuthLogout> {
  static summary = "Forget an agent's token for a server."
  static description = `Removes tokens["<server>"]["<agent>"] from your user config; that agent then uses JARVIS_TOKEN again. --all removes every token stored for the server.`
  static examples = ['<%= config.bin %> auth logout --agent gemini', '<%= config.bin %> auth logout --server http://127.0.0.1:8787 --all']

  static flags = {
    ...serverFlags,
    all: Flags.boolean({description: 'Forget every token stored for the server, whichever agent it is for.'}),
  }

  async run(): Promise<AuthLogoutResult> {
    const result = await logoutAgent({dir: this.flags.dir, server: this.flags.server, agent: this.flags.agent, all: this.flags.all})
    this.log(renderLogout(result))
    return result
  }
}
