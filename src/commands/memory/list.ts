import {JarvisCommand} from '../../cli/base-command.js'
import {listEvents, type ListResult} from '../../ops/events/list.js'
import {eventFilterOptions} from '../../cli/event-filters.js'
import {eventFilterFlags} from '../../cli/memory-flags.js'
import {renderEvents} from '../../cli/memory-render.js'

export default class MemoryList extends JarvisCommand<typeof MemoryList> {
  static summary = 'List events of the shared memory log, newest first (GET /v1/memory/events).'
  static description = `Only the scopes your agent may read: global, project:*, and your own agent:<id>. Superseded events are left out unless --include-deprecated.`
  static examples = [
    '<%= config.bin %> memory list',
    '<%= config.bin %> memory list --scope project:my-app --kind decision --since 7d',
    '<%= config.bin %> memory list --agent gemini --limit 20 --json',
  ]

  static flags = {...eventFilterFlags}

  async run(): Promise<ListResult> {
    const result = await listEvents(eventFilterOptions(this.flags))
    this.log(renderEvents(result))
    return result
  }
}
