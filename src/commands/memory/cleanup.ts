import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {serverFlags} from '../../cli/flags.js'
import {cleanupMemory, type CleanupResult} from '../../ops/events/cleanup.js'
import {terminalConfirm} from '../../cli/confirm.js'
import {renderCleanup} from '../../cli/memory-render.js'

export default class MemoryCleanup extends JarvisCommand<typeof MemoryCleanup> {
  static summary = 'Delete expired (TTL) and superseded events older than a limit, after a person approves.'
  static description = `Asks the server for the candidates (POST /v1/memory/cleanup, dry run) and lists them. Deletes only after approval: a y/N question on a terminal, or --yes. Without a terminal and without --yes nothing is deleted and the command exits 2. A live permanent event is never a candidate. Inside a tree every deletion is recorded in .nexus/audit.jsonl.`
  static examples = [
    '<%= config.bin %> memory cleanup --older-than 30d --dry-run',
    '<%= config.bin %> memory cleanup --older-than 30d --scope "agent:*"',
    '<%= config.bin %> memory cleanup --older-than 2w --yes --json',
  ]

  static flags = {
    ...serverFlags,
    'older-than': Flags.string({description: 'Age limit: a number and h, d or w (12h, 30d, 2w).', required: true}),
    scope: Flags.string({description: 'Only this scope, or a family such as agent:*.'}),
    'dry-run': Flags.boolean({description: 'List what would be deleted and stop.'}),
    yes: Flags.boolean({char: 'y', description: 'Approve the deletion without a question (for scripts).', exclusive: ['dry-run']}),
  }

  async run(): Promise<CleanupResult> {
    const {flags} = this
    const result = await cleanupMemory({
      dir: flags.dir,
      server: flags.server,
      agent: flags.agent,
      olderThan: flags['older-than'],
      scope: flags.scope,
      dryRun: flags['dry-run'],
      yes: flags.yes,
      confirm: terminalConfirm(),
    })
    this.log(renderCleanup(result))
    return result
  }
}
