import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {type GrepResult, memoryGrep} from '../../ops/files.js'
import {renderGrep} from '../../cli/files-render.js'

export default class MemoryGrep extends JarvisCommand<typeof MemoryGrep> {
  static summary = 'Lines of memory files matching a regular expression, with line numbers.'
  static description = 'JavaScript regular expression syntax, case-sensitive unless --ignore-case. Output: path:line:text.'
  static examples = ['<%= config.bin %> memory grep "Outcome:" episodes/', '<%= config.bin %> memory grep "runner_exec|ssh" --limit 20 --json']

  static args = {
    regex: Args.string({description: 'Regular expression.', required: true}),
    prefix: Args.string({description: 'Path prefix relative to .memory/.'}),
  }

  static flags = {
    limit: Flags.integer({description: 'At most this many matching lines.', default: 100, min: 1}),
    'ignore-case': Flags.boolean({char: 'i', description: 'Match regardless of case.'}),
  }

  async run(): Promise<GrepResult> {
    const result = await memoryGrep({dir: this.flags.dir, regex: this.args.regex, prefix: this.args.prefix, limit: this.flags.limit, ignoreCase: this.flags['ignore-case']})
    this.log(renderGrep(result))
    return result
  }
}
