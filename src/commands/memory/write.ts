import {Args, Flags} from '@oclif/core'

import {readContent} from '../../cli/input.js'
import {JarvisCommand} from '../../cli/base-command.js'
import {memoryWrite} from '../../ops/files.js'
import {renderWrite} from '../../cli/files-render.js'
import type {WriteResult} from '../../files/index.js'

export default class MemoryWrite extends JarvisCommand<typeof MemoryWrite> {
  static summary = 'Create or overwrite a memory file; the content comes from stdin or --file.'
  static description = `The content may carry its own YAML front matter; --title and --tag set those fields. Written atomically under the tree lock.
Refused (exit 5, nothing written) when the content holds a secret or personal data; malformed front matter exits 2 naming the line; a file of more than 4 MiB of UTF-8, the most \`jarvis sync\` sends, exits 2 naming the limit, nothing written.`
  static examples = [
    'echo "Ads paused: ROAS below 1.2" | <%= config.bin %> memory write projects/hdrpop/status.md --title "HDRPop status" --tag hdrpop',
    '<%= config.bin %> memory write notes/setup.md --file setup.md',
  ]

  static args = {
    path: Args.string({description: 'Path relative to .memory/, ending in .md.', required: true}),
  }

  static flags = {
    title: Flags.string({description: 'Front matter title.'}),
    tag: Flags.string({description: 'Front matter tag (repeatable); replaces the tags of the content.', multiple: true}),
    file: Flags.string({description: 'Read the content from this file; - reads stdin (stdin is read anyway when it is not a terminal).'}),
  }

  async run(): Promise<WriteResult> {
    const {flags} = this
    const result = await memoryWrite({dir: flags.dir, path: this.args.path, title: flags.title, tags: flags.tag, content: await readContent(flags.file)})
    this.log(renderWrite(result))
    return result
  }
}
