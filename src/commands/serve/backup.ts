import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {databaseFlag} from '../../cli/flags.js'
import {renderBackup} from '../../cli/serve-render.js'
import {backupData, type BackupResult} from '../../server/backup.js'

export default class ServeBackup extends JarvisCommand<typeof ServeBackup> {
  static summary = "Copy the server's database, consistently, while it serves."
  static description = `One file per backup in --to (jarvis-<time>.sqlite), written under a temporary name and renamed once complete and on disk. With --keep N, the oldest backups beyond N are removed. Bring one back with jarvis serve restore.
With --database (PostgreSQL), a backup is the database's dump, jarvis-<time>.jsonl, read in one transaction while the servers write; bring it back into an empty database with jarvis serve import.
A backup holds the default workspace (and every workspace's keys); keep each other workspace with jarvis serve export --workspace W, and bring it back after a restore with jarvis serve import --workspace W.
Only reads: a SQLite backup copies the file as it is, even at an older schema (taken before an upgrade, it is the one to go back to); on PostgreSQL a database at an older schema than this jarvis's is refused (exit 2), never upgraded under the servers that use it.`
  static examples = ['<%= config.bin %> serve backup --to /backups/jarvis --keep 14', '<%= config.bin %> serve backup --data /srv/jarvis --to /backups/jarvis']

  static flags = {
    data: Flags.string({description: 'Data directory of the server (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
    to: Flags.string({description: 'Folder the backups go to.', required: true}),
    keep: Flags.integer({description: 'Keep this many backups in --to, the newest. [default: all]', min: 1}),
  }

  async run(): Promise<BackupResult> {
    const result = await backupData({dataDir: this.flags.data, databaseUrl: this.flags.database, to: this.flags.to, keep: this.flags.keep})
    this.log(renderBackup(result))
    return result
  }
}
