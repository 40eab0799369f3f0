import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../../cli/base-command.js'
import {databaseFlag} from '../../../cli/flags.js'
import {renderKeyCreated} from '../../../cli/serve-render.js'
import {type ApiKey, createKey, KEY_ROLES} from '../../../server/keys.js'

export default class ServeTokenCreate extends JarvisCommand<typeof ServeTokenCreate> {
  static summary = 'Make an API key for one agent: printed once, stored only as its hash.'
  static description = `Works on the server's data directory, or its PostgreSQL --database, whether the server runs or not; every server process refuses a revoked key at its next request. A read key can read but not push, append or switch the project (403); write can do everything an agent does; admin is write, for the people who run the server. Without --expires the key lasts until it is revoked. The tokens file (tokens.json) keeps working beside the keys.`
  static examples = ['<%= config.bin %> serve token create --agent claude', '<%= config.bin %> serve token create --agent gemini --role read --expires 90d --data /srv/jarvis']

  static flags = {
    data: Flags.string({description: 'Data directory of the server (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
    agent: Flags.string({description: 'The agent the key speaks for (claude, gemini, chatgpt, openclaw, …).', required: true}),
    role: Flags.option({options: KEY_ROLES, default: 'write' as const, description: 'What the key may do.'})(),
    expires: Flags.string({description: 'Lifetime: 12h, 90d, 2w. [default: never]'}),
  }

  async run(): Promise<{id: string; token: string; key: ApiKey}> {
    const created = await createKey({dataDir: this.flags.data, databaseUrl: this.flags.database, agent: this.flags.agent, role: this.flags.role, expires: this.flags.expires})
    this.log(renderKeyCreated(created))
    return {id: created.key.id, ...created}
  }
}
