import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../../cli/base-command.js'
import {databaseFlag} from '../../../cli/flags.js'
import {renderGrants, renderKeys} from '../../../cli/serve-render.js'
import {type ApiKey, listKeys} from '../../../server/keys.js'
import {listGrants, type OAuthGrantListed} from '../../../server/oauth/grants.js'

export default class ServeTokenList extends JarvisCommand<typeof ServeTokenList> {
  static summary = "List the server's API keys and the apps people let in (OAuth): id, workspace, agent, role, expiry, revocation (never a token)."
  static description = "An app (ChatGPT, Claude, …) that signed in with OAuth is listed under the keys by the id of its access (grant_…), with its name, the agent it acts as and until when it can refresh its tokens; `jarvis serve token revoke grant_…` takes it back. Only reads: a database at an older schema than this jarvis's is refused (exit 2), never upgraded under the servers that use it; start jarvis serve of this version on it once first."
  static examples = ['<%= config.bin %> serve token list', '<%= config.bin %> serve token list --workspace team-a', '<%= config.bin %> serve token list --data /srv/jarvis --json']

  static flags = {
    data: Flags.string({description: 'Data directory of the server (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
    workspace: Flags.string({description: 'Only the keys and apps of this workspace. [default: every workspace]'}),
  }

  async run(): Promise<{keys: ApiKey[]; apps: OAuthGrantListed[]}> {
    const target = {dataDir: this.flags.data, databaseUrl: this.flags.database, workspace: this.flags.workspace}
    const [keys, apps] = [await listKeys(target), await listGrants(target)]
    this.log([renderKeys(keys), renderGrants(apps)].filter((part) => part !== '').join('\n'))
    return {keys, apps}
  }
}
