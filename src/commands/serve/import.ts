import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {describeCounts} from '../../cli/serve-render.js'
import {type DumpCounts, importData} from '../../server/dump.js'

export default class ServeImport extends JarvisCommand<typeof ServeImport> {
  static summary = 'Load a dump of `jarvis serve export` (stdin) into a new data directory.'
  static description = `All or nothing: a line that is not a row of the dump stops the import with its line number, and nothing is written. The data directory must hold no memory yet; start \`jarvis serve\` on it afterwards.`
  static examples = ['<%= config.bin %> serve import --data /srv/jarvis-new < jarvis-dump.jsonl']

  static flags = {
    data: Flags.string({description: 'Data directory to fill (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
  }

  async run(): Promise<DumpCounts> {
    const counts = await importData({dataDir: this.flags.data, input: process.stdin, source: '<stdin>'})
    this.log(`imported ${describeCounts(counts)}`)
    return counts
  }
}
