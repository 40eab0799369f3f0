import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {memoryCompact} from '../../ops/files.js'
import {renderCompact} from '../../cli/files-render.js'
import type {CompactResult} from '../../files/index.js'

export default class MemoryCompact extends JarvisCommand<typeof MemoryCompact> {
  static summary = "Roll a project's episodes into projects/<slug>/summary.md (deterministic, no LLM)."
  static description = `Episodes whose front matter \`project\` is the slug, or whose tags include it, newest first: title, date, source, headings and Outcome lines, bounded in length, between <!-- jarvis:begin --> and <!-- jarvis:end -->: only that block is rewritten, and whatever else the summary holds (a person's notes) is kept. The episodes stay. Running it again without new episodes changes nothing; safe for CI.`
  static examples = ['<%= config.bin %> memory compact --project my-app']

  static flags = {
    project: Flags.string({description: 'Project slug.', required: true}),
  }

  async run(): Promise<CompactResult> {
    const result = await memoryCompact({dir: this.flags.dir, project: this.flags.project})
    this.log(renderCompact(result))
    return result
  }
}
