import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../../cli/base-command.js'
import {databaseFlag} from '../../../cli/flags.js'
import {renderKeys} from '../../../cli/serve-render.js'
import {type ApiKey, listKeys} from '../../../server/keys.js'

export default class ServeTokenList extends JarvisCommand<typeof ServeTokenList> {
  static summary = "List the server's API keys: id, workspace, agent, role, expiry, revocation (never a token)."
  static examples = ['<%= config.bin %> serve token list', '<%= config.bin %> serve token list --workspace team-a', '<%= config.bin %> serve token list --data /srv/jarvis --json']

  static flags = {
    data: Flags.string({description: 'Data directory of the server (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
    workspace: Flags.string({description: 'Only the keys of this workspace. [default: every workspace]'}),
  }

  async run(): Promise<{keys: ApiKey[]}> {
    const keys = await listKeys({dataDir: this.flags.data, databaseUrl: this.flags.database, workspace: this.flags.workspace})
    this.log(renderKeys(keys))
    return {keys}
  }
}
