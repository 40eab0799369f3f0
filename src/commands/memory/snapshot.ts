import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {serverFlags} from '../../cli/flags.js'
import {run} from '../../cli/actions/memory-snapshot.js'
import {DEFAULT_LIMIT_RECENT, type SnapshotResult} from '../../ops/events/snapshot.js'

export default class MemorySnapshot extends JarvisCommand<typeof MemorySnapshot> {
  static summary = 'Print the shared memory as an agent reads it at the start of a run: pinned memory, then recent events.'
  static description = `GET /v1/memory/snapshot. The text is ready to paste into an agent's context; its header names the ruleset and the snapshot_id. --json prints the server's answer.
When the memory cannot be read (server down, token refused, another agent's private scope, a bad answer) the command exits 3 and says what to fix; it never shows an old or empty memory as current. Each snapshot read inside a tree is cached in .nexus/snapshot-cache.json; --offline shows that cache, labelled with its age.`
  static examples = [
    '<%= config.bin %> memory snapshot',
    '<%= config.bin %> memory snapshot --scopes global,project:my-app --limit-recent 20 --json',
    '<%= config.bin %> memory snapshot --offline   # the last cached snapshot, marked as not current',
  ]

  static flags = {
    ...serverFlags,
    scopes: Flags.string({
      description: 'Comma-separated scopes. [default: global, project:<the tree project>, agent:<you>]',
      delimiter: ',',
      multiple: true,
    }),
    'limit-recent': Flags.integer({description: 'How many recent events.', default: DEFAULT_LIMIT_RECENT, min: 1}),
    offline: Flags.boolean({description: 'Show the last snapshot cached in this tree instead of asking the server.'}),
  }

  async run(): Promise<SnapshotResult> {
    return run({flags: this.flags}, this.output)
  }
}
