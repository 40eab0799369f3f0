import {Args} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {memoryRead, type ReadResult} from '../../ops/files.js'

export default class MemoryRead extends JarvisCommand<typeof MemoryRead> {
  static summary = 'Print a memory file.'
  static description = 'The read is recorded in .nexus/memory-access.json (last_accessed, this machine only), never in the synced file. A missing file exits 2; malformed front matter exits 2 naming the file and line.'
  static examples = ['<%= config.bin %> memory read projects/my-app/summary.md', '<%= config.bin %> memory read episodes/2026-01-17/memory-design.md --json']

  static args = {
    path: Args.string({description: 'Path relative to .memory/, ending in .md.', required: true}),
  }

  async run(): Promise<ReadResult> {
    const result = await memoryRead({dir: this.flags.dir, path: this.args.path})
    // The file as it is, byte for byte, as cat prints it: `memory read | memory write` gives back the same file.
    if (!this.jsonEnabled()) process.stdout.write(result.text)
    return result
  }
}
