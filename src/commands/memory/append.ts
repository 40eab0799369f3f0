import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {serverFlags} from '../../cli/flags.js'
import {run} from '../../cli/actions/memory-append.js'
import type {AppendResult} from '../../ops/events/append.js'

const fieldFlag = {exclusive: ['from-file'], helpGroup: 'EVENT'}

export default class MemoryAppend extends JarvisCommand<typeof MemoryAppend> {
  static summary = 'Append an event to the shared memory log (POST /v1/memory/append).'
  static description = `Write only what was settled, at most 7 events per run. The event is checked before anything is sent: a bad field exits 2 naming it; a secret or personal data (token, key, password, e-mail address, phone number) exits 5 naming what was found and where, and nothing is sent or queued.
The agent is --agent, JARVIS_AGENT or the tree's config; the run id is JARVIS_RUN_ID, else one UUID per process.
When the server cannot be reached the event is queued in .nexus/outbox.jsonl, the command exits 3 and says so, and the next \`jarvis sync\` sends it (once: the outbox entry id is its Idempotency-Key).`
  static examples = [
    '<%= config.bin %> memory append --kind decision --key decision:memory_ssot --content "The gateway is the single source of truth (since 2026-02-02)."',
    '<%= config.bin %> memory append --kind config --key config:bot_env --scope project:my-app --confidence med --content - < note.md',
    '<%= config.bin %> memory append --kind decision --key decision:memory_ssot --supersedes 01J9ZX… --content "…"',
    '<%= config.bin %> memory append --from-file events.json   # one event or an array of up to 7',
  ]

  static flags = {
    ...serverFlags,
    kind: Flags.string({description: 'decision, config, constraint, workflow, fact, bug, todo, log or deprecation.', ...fieldFlag}),
    key: Flags.string({description: 'The dedupe_key: a stable key, 1-64 of a-z 0-9 _ : - (e.g. config:bot_token_location).', ...fieldFlag}),
    content: Flags.string({description: 'Short Markdown (≤1200 characters recommended); - reads stdin.', ...fieldFlag}),
    scope: Flags.string({description: 'global, project:<slug> or agent:<your id>. [default: global]', ...fieldFlag}),
    confidence: Flags.string({description: 'high, med or low. [default: high]', ...fieldFlag}),
    supersedes: Flags.string({description: 'The event_id this event replaces (the old one is deprecated, not rewritten).', ...fieldFlag}),
    'ttl-days': Flags.integer({description: 'Days until it becomes a cleanup candidate; 0 keeps it. [default: 0]', min: 0, ...fieldFlag}),
    'from-file': Flags.string({description: 'A JSON event, or an array of up to 7, in the wire format (- reads stdin); agent_id, run_id, source, scope, confidence and ttl_days default as above.', helpGroup: 'EVENT'}),
  }

  async run(): Promise<AppendResult> {
    return run({flags: this.flags}, this.output)
  }
}
