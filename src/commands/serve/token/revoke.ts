import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../../cli/base-command.js'
import {databaseFlag} from '../../../cli/flags.js'
import {renderKeyRevoked} from '../../../cli/serve-render.js'
import {type ApiKey, revokeKey} from '../../../server/keys.js'

export default class ServeTokenRevoke extends JarvisCommand<typeof ServeTokenRevoke> {
  static summary = 'Revoke an API key: refused from its next request on, by every server on the data directory.'
  static examples = ['<%= config.bin %> serve token revoke key_3f9a1c2b7d4e']

  static args = {id: Args.string({description: 'The key id, as `jarvis serve token list` shows it.', required: true})}

  static flags = {
    data: Flags.string({description: 'Data directory of the server (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
  }

  async run(): Promise<ApiKey> {
    const {key, warnings} = await revokeKey({dataDir: this.flags.data, databaseUrl: this.flags.database, id: this.args.id})
    this.log(renderKeyRevoked(key))
    for (const warning of warnings) this.warn(warning)
    return key
  }
}
