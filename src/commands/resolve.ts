import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {renderResolve} from '../cli/status-render.js'
import {type ResolveResult, resolveConflict, resolveLeftover} from '../status/resolve.js'

export default class Resolve extends JarvisCommand<typeof Resolve> {
  static summary = 'Decide a conflict a sync left: keep the server’s version or yours.'
  static description = `When both sides changed the same lines (or JSON keys), a sync keeps the server's side of them in the file, with the rest of both sides merged, and your whole version beside it as <name>.local.bak (jarvis status lists them).
--keep server drops the backup: the newest one of the file, or the one named; older ones keep waiting.
--keep local puts your side back where the two sides disagreed, as an ordinary edit the next jarvis sync pushes; the other side's changes elsewhere, and anything written since, stay. Named by its file, every backup of the file is decided, newest first, so your newest version wins: an older backup's lines go back only where the file still holds what that sync left. Lines that could not go back (the file changed there since) stay in their backup, named, and the command exits 4. A backup with no record of its conflict (made by an older jarvis) goes back whole; the lines of the file it replaces are named and kept as a backup.
Every decision is written to .nexus/audit.jsonl.`
  static examples = ['<%= config.bin %> resolve notes/plan.md --keep local', '<%= config.bin %> resolve notes/plan.local.bak --keep server']

  static args = {
    path: Args.string({description: 'The memory file (or its backup), relative to .memory/.', required: true}),
  }

  static flags = {
    keep: Flags.string({description: 'server: the file as it is now; local: your side of the disagreement back from the backup.', options: ['server', 'local'], required: true}),
  }

  async run(): Promise<ResolveResult> {
    const result = await resolveConflict({dir: this.flags.dir, path: this.args.path, keep: this.flags.keep as 'server' | 'local'})
    this.log(renderResolve(result))
    const leftover = resolveLeftover(result)
    if (leftover) throw leftover
    return result
  }
}
