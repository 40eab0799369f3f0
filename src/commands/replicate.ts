import {Flags} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {serverFlags} from '../cli/flags.js'
import {renderReplicas} from '../cli/replica-render.js'
import {replicate} from '../ops/replicate.js'
import {replicaFailure, type ReplicasResult} from '../replica/ops.js'

export default class Replicate extends JarvisCommand<typeof Replicate> {
  static summary = 'Keep the configured replicas in step: OpenClaw’s memory files, an AI_MEMORY folder of decisions, Obsidian daily notes.'
  static description = `Each entry of "replicas" in .nexus/config.json, by its kind:
openclaw: merged with its folder in .memory/ by the rules of sync: a file changed on one side is copied to the other, on both sides merged line by line; when an overlap must pick, the .memory/ copy wins and the replica's is kept as <name>.local.bak and reported. A deletion crosses only when the last replication saw the file; an edit beats a deletion.
ai-memory: the confirmed decisions of the event log, one Markdown file per decision key; a file a person edited is never written over.
obsidian: the day's events in the vault's daily note, inside a block jarvis owns; the person's text around it is never changed, and their edits inside it come back as events (secrets refused).
The ai-memory and obsidian kinds read the event log from the server (--server, JARVIS_SERVER, JARVIS_TOKEN). See docs/replicas.md.`
  static examples = ['<%= config.bin %> replicate', '<%= config.bin %> replicate --dry-run --json']

  static flags = {
    ...serverFlags,
    'dry-run': Flags.boolean({description: 'Print what would change and change nothing.'}),
    force: Flags.boolean({description: 'Allow a replication that deletes more than half of a replica’s files.'}),
  }

  async run(): Promise<ReplicasResult> {
    const result = await replicate({dir: this.flags.dir, server: this.flags.server, agent: this.flags.agent, dryRun: this.flags['dry-run'], force: this.flags.force})
    this.log(renderReplicas(result))
    const failure = replicaFailure(result)
    if (failure) throw failure
    return result
  }
}
