import {Args} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {memoryDelete} from '../../ops/files.js'
import {renderDelete} from '../../cli/files-render.js'
import type {DeleteResult} from '../../files/index.js'

export default class MemoryDelete extends JarvisCommand<typeof MemoryDelete> {
  static summary = 'Delete a memory file; the next sync deletes it on the server too.'
  static description = 'The next `jarvis sync` sends the deletion when the last sync recorded the file (its base proves it existed); a file never synced is only removed here.'
  static examples = ['<%= config.bin %> memory delete episodes/2026-01-17/old-notes.md']

  static args = {
    path: Args.string({description: 'Path relative to .memory/, ending in .md.', required: true}),
  }

  async run(): Promise<DeleteResult> {
    const result = await memoryDelete({dir: this.flags.dir, path: this.args.path})
    this.log(renderDelete(result))
    return result
  }
}
