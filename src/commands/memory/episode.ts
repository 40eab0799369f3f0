import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {memoryEpisode} from '../../ops/files.js'
import {renderWrite} from '../../cli/files-render.js'
import type {WriteResult} from '../../files/index.js'
import {readContent} from '../../cli/input.js'

export default class MemoryEpisode extends JarvisCommand<typeof MemoryEpisode> {
  static summary = 'Record an episode: episodes/YYYY-MM-DD/<slug>.md in the episode template.'
  static description = `The summary comes from stdin (or --file). The same episode twice (same day, title and content) is one file; another episode with the same title that day becomes <slug>-2.md.
Refused (exit 5, nothing written) when it holds a secret or personal data.`
  static examples = ['echo "- Chose memory_files + tools" | <%= config.bin %> memory episode --title "Memory design" --tag memory --project jarvis --outcome "Decision: memory files"']

  static flags = {
    title: Flags.string({description: 'Episode title (also the file name slug).', required: true}),
    tag: Flags.string({description: 'Tag (repeatable).', multiple: true}),
    project: Flags.string({description: 'Project slug, recorded as front matter `project` (what `memory compact` rolls up).'}),
    topic: Flags.string({description: 'The Topic: line.'}),
    outcome: Flags.string({description: 'The Outcome: line (kept by `memory compact`).'}),
    refs: Flags.string({description: 'The Refs: line (thread or run ids).'}),
    file: Flags.string({description: 'Read the summary from this file; - reads stdin.'}),
  }

  async run(): Promise<WriteResult> {
    const {flags} = this
    const result = await memoryEpisode({dir: flags.dir, title: flags.title, tags: flags.tag, project: flags.project, topic: flags.topic, outcome: flags.outcome, refs: flags.refs, body: await readContent(flags.file)})
    this.log(renderWrite(result))
    return result
  }
}
