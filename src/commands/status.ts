import {Flags} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {serverFlags} from '../cli/flags.js'
import {renderStatus} from '../cli/status-render.js'
import {type StatusResult, treeStatus} from '../status/ops.js'

export default class Status extends JarvisCommand<typeof Status> {
  static summary = 'What state the memory is in: the last sync, changes not synced, conflicts waiting for you, the server, the agents.'
  static description = `Like git status, for the memory of this tree: its server and agent, the last sync and what it did, local changes the next sync will send, conflict backups waiting for \`jarvis resolve\`, writes queued offline, recent agent hook failures, which agents are wired, the watch of the tree when one runs (what started it, the calls it ran for jarvis, why it left the last one it did not run), and whether the server answers (--offline does not ask).`
  static examples = ['<%= config.bin %> status', '<%= config.bin %> status --offline --json']

  static flags = {
    ...serverFlags,
    offline: Flags.boolean({description: 'Do not ask the server.'}),
  }

  async run(): Promise<StatusResult> {
    const result = await treeStatus({dir: this.flags.dir, server: this.flags.server, agent: this.flags.agent, offline: this.flags.offline, warn: (message) => this.warn(message)})
    this.log(renderStatus(result))
    return result
  }
}
