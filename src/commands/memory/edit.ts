import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {memoryEdit} from '../../ops/files.js'
import {renderEdit} from '../../cli/files-render.js'

export default class MemoryEdit extends JarvisCommand<typeof MemoryEdit> {
  static summary = 'Replace one exact piece of text in a memory file.'
  static description = 'The text to replace must occur exactly once; otherwise the command exits 2 saying how many times it occurs and changes nothing.'
  static examples = ['<%= config.bin %> memory edit projects/my-app/summary.md --replace "Status: open" --with "Status: done"']

  static args = {
    path: Args.string({description: 'Path relative to .memory/, ending in .md.', required: true}),
  }

  static flags = {
    replace: Flags.string({description: 'The exact text to replace.', required: true}),
    with: Flags.string({description: 'The new text (may be empty).', required: true}),
  }

  async run(): Promise<{path: string}> {
    const result = await memoryEdit({dir: this.flags.dir, path: this.args.path, replace: this.flags.replace, with: this.flags.with})
    this.log(renderEdit(result))
    return result
  }
}
