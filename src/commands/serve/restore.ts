import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {databaseFlag} from '../../cli/flags.js'
import {renderRestore} from '../../cli/serve-render.js'
import {restoreData, type RestoreResult} from '../../server/backup.js'

export default class ServeRestore extends JarvisCommand<typeof ServeRestore> {
  static summary = 'Bring a backup of `jarvis serve backup` back as the server’s database (SQLite file, or PostgreSQL).'
  static description = `Stop the server first: a database a running server has open is refused (exit 6). The backup is checked (integrity, a jarvis database this version reads) before anything moves. A database already in the data directory is refused unless --force, and then moved aside as jarvis.sqlite.replaced-<time>, never deleted. With --database (or JARVIS_DATABASE_URL), FILE is the .jsonl dump that \`jarvis serve backup --database\` writes, loaded into an empty PostgreSQL database, all or nothing: a dump that was cut (fewer rows than its first line counts, or no last line) is refused.`
  static examples = ['<%= config.bin %> serve restore /backups/jarvis/jarvis-20261125T181500123Z.sqlite --data /srv/jarvis --force', '<%= config.bin %> serve restore /backups/jarvis/jarvis-20261125T181500123Z.jsonl --database postgres://jarvis@db.internal/jarvis_restored']

  static args = {file: Args.string({description: 'The backup file.', required: true})}

  static flags = {
    data: Flags.string({description: 'Data directory of the server (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
    force: Flags.boolean({description: 'Replace the SQLite database that is there (moved aside, not deleted).'}),
  }

  async run(): Promise<RestoreResult> {
    const result = await restoreData({file: this.args.file, dataDir: this.flags.data, databaseUrl: this.flags.database, force: this.flags.force, warn: (message) => this.warn(message)})
    this.log(renderRestore(result))
    return result
  }
}
