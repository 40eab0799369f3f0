import {Flags, ux} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {serverFlags} from '../cli/flags.js'
import {run} from '../cli/actions/sync.js'
import type {SyncOnceResult} from '../ops/sync.js'
import type {WatchSummary} from '../cli/watch.js'

export default class Sync extends JarvisCommand<typeof Sync> {
  static summary = 'Merge this tree with the server: push, pull, three-way merge, flush the outbox.'
  static description = `Nothing is lost: a file changed only here is pushed, only on the server is pulled, on both sides is merged by its type's rule; when a merge must pick the server's version, the local one is kept as <name>.local.bak and reported.`
  static examples = [
    '<%= config.bin %> sync',
    '<%= config.bin %> sync --dry-run',
    '<%= config.bin %> sync --quiet   # from a git hook',
    '<%= config.bin %> sync --watch --json   # JSON Lines: one envelope per sync, the summary when stopped',
  ]

  static flags = {
    ...serverFlags,
    'dry-run': Flags.boolean({description: 'Print the plan and change nothing.'}),
    quiet: Flags.boolean({char: 'q', description: 'Print nothing on success (for git hooks).'}),
    force: Flags.boolean({description: 'Allow a sync that deletes more than half of the files.'}),
    watch: Flags.boolean({
      description: 'Keep syncing on local changes and on server broadcasts until Ctrl-C. With --json: one JSON line per sync, then a summary line.',
      exclusive: ['dry-run', 'force'],
    }),
  }

  async run(): Promise<SyncOnceResult | WatchSummary> {
    if (this.flags.watch) {
      // Loaded only here: the watcher and the WebSocket client would slow every one-shot sync.
      const {watchOutput, watchUntilSignal} = await import('../cli/watch.js')
      const output = watchOutput({
        json: this.jsonEnabled(),
        quiet: this.flags.quiet,
        log: (line) => this.log(line),
        logToStderr: (line) => this.logToStderr(line),
      })
      return watchUntilSignal({dir: this.flags.dir, server: this.flags.server, agent: this.flags.agent}, output)
    }
    return run({flags: this.flags}, this.output)
  }

  /** `--watch --json` is JSON Lines: the final summary is one line too. */
  logJson(json: unknown): void {
    if (this.flags?.watch) ux.stdout(JSON.stringify(json))
    else super.logJson(json)
  }
}
