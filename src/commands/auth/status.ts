import {renderAuthStatus} from '../../cli/auth-render.js'
import {JarvisCommand} from '../../cli/base-command.js'
import {serverFlags} from '../../cli/flags.js'
import {authStatus, type AuthStatusResult} from '../../ops/auth.js'

export default class AuthStatus extends JarvisCommand<typeof AuthStatus> {
  static summary = 'Which token each agent would use with the server, and where it comes from.'
  static description = `Per agent: its own token stored in your user config, JARVIS_TOKEN, the config's token for the server or its "token" — or none. Tokens are never shown. Asks no server.`
  static examples = ['<%= config.bin %> auth status', '<%= config.bin %> auth status --json']

  static flags = {server: serverFlags.server}

  async run(): Promise<AuthStatusResult> {
    const result = await authStatus({dir: this.flags.dir, server: this.flags.server})
    this.log(renderAuthStatus(result))
    return result
  }
}
