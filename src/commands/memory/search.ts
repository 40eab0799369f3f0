import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {eventFilterFlags, eventFilterOptions} from '../../cli/memory-flags.js'
import {renderMemorySearch} from '../../cli/memory-render.js'
import {fileSearchOf, type MemoryFileHits, searchMemory, type MemorySearchResult} from '../../ops/search.js'
import {askWarmTree} from '../../cli/warm.js'

export default class MemorySearch extends JarvisCommand<typeof MemorySearch> {
  static summary = 'Search the memory files of this tree and the shared event log, most relevant first.'
  static description = `Memory files are ranked locally (BM25 with prefix and fuzzy terms, fused with embeddings when JARVIS_EMBEDDINGS_URL is set); events by the server (GET /v1/memory/events?q=), only the scopes your agent may read. When the server cannot be reached it stops with exit 3 instead of answering from the files alone as if they were everything (\`jarvis recall\` asks the files alone). The event filters apply to events; --tag and --prefix to files; --since, --until and --limit to both.`
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
    const options = {...eventFilterOptions(this.flags), query: this.args.query, tags: this.flags.tag, prefix: this.flags.prefix}
    // The files' part from a jarvis running in the tree, when one does; the event log is asked here meanwhile.
    const files = askWarmTree<MemoryFileHits>(this.flags.dir, 'memory-search-files', fileSearchOf(options))
    const result = await searchMemory({...options, files})
    for (const note of result.notes) this.warn(note)
    this.log(renderMemorySearch(result))
    return result
  }
}
