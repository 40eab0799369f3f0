import {JarvisCommand} from '../../cli/base-command.js'
import {serverFlags} from '../../cli/flags.js'
import {consolidateMemory, type ConsolidateResult} from '../../ops/events/consolidate.js'
import {renderConsolidate} from '../../cli/memory-render.js'

export default class MemoryConsolidate extends JarvisCommand<typeof MemoryConsolidate> {
  static summary = 'Run the janitor on the shared memory: pins, conflicts, TTL candidates, secret/PII masking.'
  static description = `Consolidates the shared event log on the server. Conflicts (agents disagreeing on a key) get a conflict_resolution event; a secret or personal data that got in is masked. Inside a tree, each conflict and masking is recorded in .nexus/audit.jsonl. Nothing is deleted: expired events are only marked, for \`jarvis memory cleanup\`. A second run changes nothing.`
  static examples = ['<%= config.bin %> memory consolidate', 'JARVIS_TOKEN=… <%= config.bin %> memory consolidate --server https://jarvis.example --json   # in CI, outside a tree']

  static flags = {...serverFlags}

  async run(): Promise<ConsolidateResult> {
    const result = await consolidateMemory({dir: this.flags.dir, server: this.flags.server, agent: this.flags.agent})
    this.log(renderConsolidate(result))
    return result
  }
}
