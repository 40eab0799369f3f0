import {once} from 'node:events'

import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {databaseFlag, workspaceFlag} from '../../cli/flags.js'
import {describeCounts, renderTokensFileKeys} from '../../cli/serve-render.js'
import {exportData} from '../../server/dump.js'

export default class ServeExport extends JarvisCommand<typeof ServeExport> {
  // stdout is the dump itself.
  static enableJsonFlag = false

  static summary = "Write one workspace's whole memory to stdout as JSON Lines, for `jarvis serve import`."
  static description = `Files with their revisions, events with their ids, the active project, the workspace's id and change sequence, its API keys (as hashes), its audit log: a client syncs on against the imported copy with nothing to transfer. A consistent copy even while the server runs. What it wrote is counted on stderr, and in the dump itself: its first line counts the rows, its last line ends it, so that \`jarvis serve import\` refuses a dump that was cut.
The default workspace's dump also carries the tokens of the server's tokens file (the data directory's tokens.json, which jarvis serve makes at its first start, or --tokens FILE), as write keys stored only as hashes: clients using them go on against the copy, on SQLite or PostgreSQL.
Only reads: a database at an older schema than this jarvis's is refused (exit 2), never upgraded under the servers that use it; start jarvis serve of this version on it once first.`
  static examples = ['<%= config.bin %> serve export --data ~/.local/share/jarvis > jarvis-dump.jsonl', '<%= config.bin %> serve export --database postgres://jarvis@db.internal/jarvis --workspace team-a > team-a.jsonl']

  static flags = {
    data: Flags.string({description: 'Data directory of the server (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
    workspace: workspaceFlag('The workspace to export.'),
    tokens: Flags.string({description: "The server's tokens file (as given to jarvis serve --tokens), whose tokens go in as keys. [default: the data directory's tokens.json, if any]"}),
  }

  async run(): Promise<void> {
    const {flags} = this
    const {counts, tokensFile} = await exportData({
      dataDir: flags.data,
      databaseUrl: flags.database,
      workspace: flags.workspace,
      tokensFile: flags.tokens,
      // Waits when stdout is full: a dump of a million events never sits in memory.
      write: async (line) => {
        if (!process.stdout.write(`${line}\n`)) await once(process.stdout, 'drain')
      },
    })
    process.stderr.write(`exported ${describeCounts(counts)}\n`)
    if (tokensFile) process.stderr.write(`${renderTokensFileKeys(tokensFile)}\n`)
  }
}
