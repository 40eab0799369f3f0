import {dirname, resolve} from 'node:path'

import {Flags} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {findRoot, holdsTree, initTree} from '../store/index.js'

export interface InitResult {
  root: string
  created: string[]
  changed: boolean
}

export default class Init extends JarvisCommand<typeof Init> {
  static summary = 'Create .memory/ and .nexus/ in the current directory.'
  static description = 'Safe to run again: a second run with the same options changes nothing and says so.'
  static examples = ['<%= config.bin %> init', '<%= config.bin %> init --server http://127.0.0.1:8787 --agent claude --project my-app']

  static flags = {
    server: Flags.string({description: 'URL of the jarvis server to sync with.'}),
    agent: Flags.string({description: 'Agent id of this machine (chatgpt, claude, gemini, openclaw).'}),
    project: Flags.string({description: 'Slug of the project this tree belongs to.'}),
  }

  async run(): Promise<InitResult> {
    const target = resolve(this.flags.dir ?? process.cwd())
    // A tree made inside another is its own, as a git repository inside another: it happens by mistake too.
    const outer = holdsTree(target) ? undefined : enclosingTree(dirname(target))
    const {root, created, changed, replaced} = await initTree(target, {
      server: this.flags.server,
      agent: this.flags.agent,
      project: this.flags.project,
    })
    const label = {server: 'server', agentId: 'agent', project: 'project'} as const
    // Re-running init to change who this tree is happens; doing it by mistake should not go unnoticed.
    for (const change of replaced) this.warn(`the ${label[change.field]} of this tree was ${change.from}; it is now ${change.to} (run jarvis init --${label[change.field]} ${change.from} to go back)`)
    if (outer !== undefined) this.warn(`${root} is inside the jarvis tree of ${outer}: commands run here now use this new tree and its own memory, not that one's`)
    if (!changed) this.log(`jarvis tree already initialised in ${root}; nothing changed`)
    else this.log(`initialised jarvis tree in ${root}${created.length ? `\n  created ${created.join(', ')}` : ''}`)
    return {root, created, changed}
  }
}

function enclosingTree(dir: string): string | undefined {
  try {
    return findRoot(dir)
  } catch {
    return undefined
  }
}
