import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {databaseFlag, workspaceFlag} from '../../cli/flags.js'
import {describeCounts} from '../../cli/serve-render.js'
import {type DumpCounts, importData} from '../../server/dump.js'

export default class ServeImport extends JarvisCommand<typeof ServeImport> {
  static summary = 'Load a dump of `jarvis serve export` (stdin) into a new workspace, data directory or empty PostgreSQL database.'
  static description = `All or nothing: a line that is not a row of the dump stops the import with its line number, and nothing is written; so does a dump that was cut (it holds fewer rows than its first line counts, or lacks its last line), and a workspace the import made is removed again. A dump of an older jarvis, which does not count its rows, is imported with a warning that it could not be checked whole. The workspace must hold no memory yet (for the default workspace: the data directory, or the --database); its keys become keys of that workspace. Start \`jarvis serve\` on it afterwards, or let the running server serve it. A dump moves between SQLite and PostgreSQL unchanged.`
  static examples = ['<%= config.bin %> serve import --data /srv/jarvis-new < jarvis-dump.jsonl', '<%= config.bin %> serve import --database postgres://jarvis@db.internal/jarvis --workspace team-a < team-a.jsonl']

  static flags = {
    data: Flags.string({description: 'Data directory to fill (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
    workspace: workspaceFlag('The workspace to fill.'),
  }

  async run(): Promise<DumpCounts> {
    const counts = await importData({dataDir: this.flags.data, databaseUrl: this.flags.database, workspace: this.flags.workspace, input: process.stdin, source: '<stdin>', warn: (message) => this.warn(message)})
    this.log(`imported ${describeCounts(counts)}`)
    return counts
  }
}
