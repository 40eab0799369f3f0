import {Flags} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {renderReplicas} from '../cli/replica-render.js'
import {assertNoSensitive} from '../events/index.js'
import {replicaFailure, type ReplicasResult, runReplicas} from '../replica/ops.js'

export default class Replicate extends JarvisCommand<typeof Replicate> {
  static summary = 'Keep the configured replicas (OpenClaw’s MEMORY.md and daily notes) in step with .memory/.'
  static description = `Each entry of "replicas" in .nexus/config.json is merged with its folder in .memory/ by the rules of sync: a file changed on one side is copied to the other, on both sides merged line by line; when an overlap must pick, the .memory/ copy wins and the replica's is kept as <name>.local.bak and reported. A deletion crosses only when the last replication saw the file; an edit beats a deletion. See docs/replicas.md.`
  static examples = ['<%= config.bin %> replicate', '<%= config.bin %> replicate --dry-run --json']

  static flags = {
    'dry-run': Flags.boolean({description: 'Print what would change and change nothing.'}),
    force: Flags.boolean({description: 'Allow a replication that deletes more than half of a replica’s files.'}),
  }

  async run(): Promise<ReplicasResult> {
    const result = await runReplicas({dir: this.flags.dir, dryRun: this.flags['dry-run'], force: this.flags.force, screen: assertNoSensitive})
    this.log(renderReplicas(result))
    const failure = replicaFailure(result)
    if (failure) throw failure
    return result
  }
}
