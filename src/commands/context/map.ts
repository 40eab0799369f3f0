import {JarvisCommand} from '../../cli/base-command.js'
import {contextMap, type ContextMapResult} from '../../ops/files.js'
import {renderContextMap} from '../../cli/files-render.js'

export default class ContextMap extends JarvisCommand<typeof ContextMap> {
  static summary = "Write .memory/context_map.json from the repository's tracked files."
  static description = `Classifies the files git tracks (git ls-files) in the repository holding the tree: pages, components, api, lib, styles and scripts by common web conventions (Next.js app/ and pages/, components/, app/api and pages/api, lib/, styles/ and *.css, scripts/ and package.json scripts), and the Prisma models and enums of prisma/schema.prisma. Sorted; only timestamp changes between runs on the same files.`
  static examples = ['<%= config.bin %> context map', '<%= config.bin %> context map --json']

  async run(): Promise<ContextMapResult> {
    const result = await contextMap({dir: this.flags.dir})
    this.log(renderContextMap(result))
    return result
  }
}
