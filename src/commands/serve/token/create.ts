import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../../cli/base-command.js'
import {databaseFlag, workspaceFlag} from '../../../cli/flags.js'
import {renderKeyCreated} from '../../../cli/serve-render.js'
import {type ApiKey, createKey, KEY_ROLES} from '../../../server/keys.js'

export default class ServeTokenCreate extends JarvisCommand<typeof ServeTokenCreate> {
  static summary = 'Make an API key for one agent of one workspace: printed once, stored only as its hash.'
  static description = `A key opens one workspace, an isolated memory (files, events, active project) of its own; one server hosts many. A new workspace's storage is made with its first key, which its audit log records. Works on the server's data directory, or its PostgreSQL --database, whether the server runs or not; every server process refuses a revoked key at its next request. A read key can read but not push, append or switch the project (403); write can do everything an agent does; admin is write, for the people who run the server. Without --expires the key lasts until it is revoked. The tokens file (tokens.json) keeps working beside the keys, as the default workspace.`
  static examples = ['<%= config.bin %> serve token create --agent claude', '<%= config.bin %> serve token create --agent gemini --role read --expires 90d --data /srv/jarvis', '<%= config.bin %> serve token create --workspace team-a --agent claude']

  static flags = {
    data: Flags.string({description: 'Data directory of the server (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
    workspace: workspaceFlag('The workspace the key opens.'),
    agent: Flags.string({description: 'The agent the key speaks for (claude, gemini, chatgpt, openclaw, …).', required: true}),
    role: Flags.option({options: KEY_ROLES, default: 'write' as const, description: 'What the key may do.'})(),
    expires: Flags.string({description: 'Lifetime: 12h, 90d, 2w; at least a minute. [default: never]'}),
  }

  async run(): Promise<{id: string; token: string; key: ApiKey}> {
    const {warnings, ...created} = await createKey({dataDir: this.flags.data, databaseUrl: this.flags.database, workspace: this.flags.workspace, agent: this.flags.agent, role: this.flags.role, expires: this.flags.expires})
    this.log(renderKeyCreated(created))
    for (const warning of warnings) this.warn(warning)
    return {id: created.key.id, ...created}
  }
}
