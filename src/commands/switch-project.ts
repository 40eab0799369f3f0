import {Args} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {serverFlags} from '../cli/flags.js'
import {switchProject} from '../ops/task.js'
import type {ActiveProject} from '../schemas/index.js'

export default class SwitchProject extends JarvisCommand<typeof SwitchProject> {
  static summary = 'Set the active project for every client (switchedBy: user-cli).'
  static description = `The server records it in active_project.json and tells every connected client (STATE_CHANGED); other trees get the file with their next sync.
When the server cannot be reached the switch is queued in .nexus/outbox.jsonl, the command exits 3 and says so, and the next \`jarvis sync\` sends it.`
  static examples = ['<%= config.bin %> switch-project my-app']

  static args = {
    projectId: Args.string({description: 'Id of the project to make active.', required: true}),
  }

  static flags = {...serverFlags}

  async run(): Promise<ActiveProject> {
    const active = await switchProject({dir: this.flags.dir, server: this.flags.server, agent: this.flags.agent, projectId: this.args.projectId})
    this.log(`active project: ${active.projectId} (switched by ${active.switchedBy} at ${active.switchedAt})`)
    return active
  }
}
