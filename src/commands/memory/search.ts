import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {run} from '../../cli/actions/memory-search.js'
import {eventFilterFlags} from '../../cli/memory-flags.js'
import type {MemorySearchResult} from '../../ops/search.js'

export default class MemorySearch extends JarvisCommand<typeof MemorySearch> {
  static summary = 'Search the memory files of this tree and the shared event log, most relevant first.'
  static description = `Memory files are ranked locally (BM25 with prefix and fuzzy terms, fused with the built-in embedding model, offline, or the one JARVIS_EMBEDDINGS_URL names; keywords only with JARVIS_EMBEDDINGS=off); events by the server (GET /v1/memory/events?q=), only the scopes your agent may read. When the server cannot be reached it stops with exit 3 instead of answering from the files alone as if they were everything (\`jarvis recall\` asks the files alone). The event filters apply to events; --tag and --prefix to files; --since, --until and --limit to both.`
  static examples = ['<%= config.bin %> memory search "telegram token"', '<%= config.bin %> memory search gateway --scope global --kind decision --json', '<%= config.bin %> memory search deploy --tag ops --prefix episodes/']

  static args = {
    query: Args.string({description: 'Words to look for.', required: true}),
  }

  static flags = {
    ...eventFilterFlags,
    tag: Flags.string({description: 'Memory files with this tag (repeatable: all must match).', multiple: true, helpGroup: 'FILTER'}),
    prefix: Flags.string({description: 'Memory files under this path of .memory/.', helpGroup: 'FILTER'}),
  }

  async run(): Promise<MemorySearchResult> {
    return run({flags: this.flags, args: this.args}, this.output)
  }
}
