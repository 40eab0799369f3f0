import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {renderRestore} from '../../cli/serve-render.js'
import {restoreData, type RestoreResult} from '../../server/backup.js'

export default class ServeRestore extends JarvisCommand<typeof ServeRestore> {
  static summary = 'Bring a backup of `jarvis serve backup` back as the server’s database.'
  static description = `Stop the server first: a database a running server has open is refused (exit 6). The backup is checked (integrity, a jarvis database this version reads) before anything moves. A database already in the data directory is refused unless --force, and then moved aside as jarvis.sqlite.replaced-<time>, never deleted.`
  static examples = ['<%= config.bin %> serve restore /backups/jarvis/jarvis-20261125T181500123Z.sqlite --data /srv/jarvis --force']

  static args = {file: Args.string({description: 'The backup file.', required: true})}

  static flags = {
    data: Flags.string({description: 'Data directory of the server (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    force: Flags.boolean({description: 'Replace the database that is there (moved aside, not deleted).'}),
  }

  async run(): Promise<RestoreResult> {
    const result = await restoreData({file: this.args.file, dataDir: this.flags.data, force: this.flags.force})
    this.log(renderRestore(result))
    return result
  }
}
