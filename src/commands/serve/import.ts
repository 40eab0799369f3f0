import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {databaseFlag} from '../../cli/flags.js'
import {describeCounts} from '../../cli/serve-render.js'
import {type DumpCounts, importData} from '../../server/dump.js'

export default class ServeImport extends JarvisCommand<typeof ServeImport> {
  static summary = 'Load a dump of `jarvis serve export` (stdin) into a new data directory or an empty PostgreSQL database.'
  static description = `All or nothing: a line that is not a row of the dump stops the import with its line number, and nothing is written. The data directory (or the --database) must hold no memory yet; start \`jarvis serve\` on it afterwards. A dump moves between SQLite and PostgreSQL unchanged.`
  static examples = ['<%= config.bin %> serve import --data /srv/jarvis-new < jarvis-dump.jsonl', '<%= config.bin %> serve import --database postgres://jarvis@db.internal/jarvis < jarvis-dump.jsonl']

  static flags = {
    data: Flags.string({description: 'Data directory to fill (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
  }

  async run(): Promise<DumpCounts> {
    const counts = await importData({dataDir: this.flags.data, databaseUrl: this.flags.database, input: process.stdin, source: '<stdin>'})
    this.log(`imported ${describeCounts(counts)}`)
    return counts
  }
}
