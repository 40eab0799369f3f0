import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../../cli/base-command.js'
import {databaseFlag} from '../../../cli/flags.js'
import {renderGrantRevoked, renderKeyRevoked} from '../../../cli/serve-render.js'
import {type ApiKey, revokeKey} from '../../../server/keys.js'
import {isGrantId, type OAuthGrant, revokeGrant} from '../../../server/oauth/grants.js'

export default class ServeTokenRevoke extends JarvisCommand<typeof ServeTokenRevoke> {
  static summary = "Revoke an API key or an app's access: refused from its next request on, by every server on its data directory or database."
  static examples = ['<%= config.bin %> serve token revoke key_3f9a1c2b7d4e', '<%= config.bin %> serve token revoke grant_5b0c7e19a2d4']

  static args = {id: Args.string({description: 'The key id (key_…) or app access id (grant_…), as `jarvis serve token list` shows it.', required: true})}

  static flags = {
    data: Flags.string({description: 'Data directory of the server (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
  }

  async run(): Promise<ApiKey | OAuthGrant> {
    const target = {dataDir: this.flags.data, databaseUrl: this.flags.database, id: this.args.id}
    const revoked = isGrantId(this.args.id) ? await revokeGrant(target) : await revokeKey(target)
    const on = this.flags.database ? 'database' : 'data directory'
    this.log('grant' in revoked ? renderGrantRevoked(revoked.grant, on) : renderKeyRevoked(revoked.key, on))
    for (const warning of revoked.warnings) this.warn(warning)
    return 'grant' in revoked ? revoked.grant : revoked.key
  }
}
