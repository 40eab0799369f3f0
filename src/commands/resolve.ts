import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {renderResolve} from '../cli/status-render.js'
import {type ResolveResult, resolveConflict} from '../status/resolve.js'

export default class Resolve extends JarvisCommand<typeof Resolve> {
  static summary = 'Decide a conflict a sync left: keep the server’s version or yours.'
  static description = `When both sides changed the same lines, a sync keeps the server's version in the file and yours beside it as <name>.local.bak (jarvis status lists them). --keep server drops the backup; --keep local puts your version back into the file as an ordinary edit, which the next jarvis sync pushes. One backup at a time, the newest; both are written to .nexus/audit.jsonl.`
  static examples = ['<%= config.bin %> resolve notes/plan.md --keep local', '<%= config.bin %> resolve notes/plan.local.bak --keep server']

  static args = {
    path: Args.string({description: 'The memory file (or its backup), relative to .memory/.', required: true}),
  }

  static flags = {
    keep: Flags.string({description: 'server: the file as it is now; local: your version from the backup.', options: ['server', 'local'], required: true}),
  }

  async run(): Promise<ResolveResult> {
    const result = await resolveConflict({dir: this.flags.dir, path: this.args.path, keep: this.flags.keep as 'server' | 'local'})
    this.log(renderResolve(result))
    return result
  }
}
