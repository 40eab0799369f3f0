import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {readNamedInput} from '../../cli/input.js'
import {memoryEdit} from '../../ops/files.js'
import {renderEdit} from '../../cli/files-render.js'
import type {FileEdit} from '../../files/index.js'

export default class MemoryEdit extends JarvisCommand<typeof MemoryEdit> {
  static summary = 'Change a memory file: replace one exact piece of text, or apply a unified diff.'
  static description = `--replace and --with: the text must occur exactly once; otherwise the command exits 2 saying how many times it occurs and changes nothing.
--patch: a unified diff of the file, as diff -u or git diff print it (the file names in it are not read); each hunk goes where its context and removed lines are, and a hunk that fits nowhere exits 2 naming it, changing nothing.`
  static examples = [
    '<%= config.bin %> memory edit projects/my-app/summary.md --replace "Status: open" --with "Status: done"',
    'diff -u summary.md summary-new.md | <%= config.bin %> memory edit projects/my-app/summary.md --patch -',
  ]

  static args = {
    path: Args.string({description: 'Path relative to .memory/, ending in .md.', required: true}),
  }

  static flags = {
    replace: Flags.string({description: 'The exact text to replace.', dependsOn: ['with'], exactlyOne: ['replace', 'patch']}),
    with: Flags.string({description: 'The new text (may be empty).', dependsOn: ['replace']}),
    patch: Flags.string({description: 'Apply the unified diff in this file; - reads it from stdin.', exactlyOne: ['replace', 'patch']}),
  }

  async run(): Promise<{path: string}> {
    const {flags} = this
    const edit: FileEdit = flags.patch === undefined ? {replace: flags.replace!, with: flags.with!} : {diff: (await readNamedInput(flags.patch, 'the patch')).text}
    const result = await memoryEdit({dir: flags.dir, path: this.args.path, ...edit})
    this.log(renderEdit(result, 'diff' in edit ? 'patched' : 'replaced'))
    return result
  }
}
