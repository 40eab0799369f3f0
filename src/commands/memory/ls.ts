import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {DEFAULT_LS_LIMIT, run} from '../../cli/actions/memory-ls.js'
import type {LsResult} from '../../ops/files.js'

export default class MemoryLs extends JarvisCommand<typeof MemoryLs> {
  static summary = 'List memory files (.memory/**/*.md) under a path prefix.'
  static description = 'Sorted by path, with title and tags from the front matter; a file whose front matter does not parse is listed with the problem.'
  static examples = ['<%= config.bin %> memory ls', '<%= config.bin %> memory ls episodes/2026-01 --limit 20 --json']

  static args = {
    prefix: Args.string({description: 'Path prefix relative to .memory/ (e.g. episodes/ or projects/my-app/).'}),
  }

  static flags = {
    limit: Flags.integer({description: 'At most this many files.', default: DEFAULT_LS_LIMIT, min: 1}),
  }

  async run(): Promise<LsResult> {
    return run({flags: this.flags, args: this.args}, this.output)
  }
}
