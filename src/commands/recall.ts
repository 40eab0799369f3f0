import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {DEFAULT_RECALL_LIMIT, run} from '../cli/actions/recall.js'
import type {RecallResult} from '../ops/recall.js'

export default class Recall extends JarvisCommand<typeof Recall> {
  static summary = 'Print the [MEMORY CONTEXT] block of the memory files that best match a query.'
  static description = `For an agent's system prompt, from the memory files of this tree only (always here, so it never needs the server; \`jarvis memory search\` adds the shared event log): one line per hit with the file's path and a one-line summary, bounded in length. Keyword ranking (BM25, prefix and fuzzy terms) fused with a built-in embedding model that ships with jarvis (offline, no download), or with an OpenAI-compatible /v1/embeddings server when JARVIS_EMBEDDINGS_URL and JARVIS_EMBEDDINGS_MODEL name one (key in JARVIS_EMBEDDINGS_KEY). JARVIS_EMBEDDINGS=off, or a server that fails, gives keyword-only results and a note on stderr says so. --json gives the hits with their snippets, the mode (hybrid or keyword) and the model.`
  static examples = ['<%= config.bin %> recall "ssh auth failures on the runner"', '<%= config.bin %> recall "postgres upgrade" --limit 5 --tag database --json']

  static args = {query: Args.string({description: 'What the agent is about to work on.', required: true})}

  static flags = {
    limit: Flags.integer({description: 'At most this many files (1–10).', default: DEFAULT_RECALL_LIMIT, min: 1, max: 10}),
    tag: Flags.string({description: 'Only files with this tag (repeatable: every tag given).', multiple: true}),
    prefix: Flags.string({description: 'Only files under this path of .memory/ (episodes/, projects/x/).'}),
    since: Flags.string({description: 'Only files dated from then on: 2026-02-01, or a duration back from now (7d, 2w).'}),
  }

  async run(): Promise<RecallResult> {
    return run({flags: this.flags, args: this.args}, this.output)
  }
}
