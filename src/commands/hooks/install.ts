import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {installHooks, type HooksResult} from '../../git/hooks.js'

export default class HooksInstall extends JarvisCommand<typeof HooksInstall> {
  static summary = 'Git hooks that run `jarvis sync --quiet` after commit, merge and checkout, and never block git.'
  static description = `Adds a delimited block (# >>> jarvis >>> … # <<< jarvis <<<) to post-commit, post-merge and post-checkout in the repository's hooks directory (core.hooksPath is honoured), keeping whatever the hooks already do; creates them when missing. The block starts the sync in the background with its output on /dev/null, so git never waits for the server and never fails because of it; a sync that fails is a line in .nexus/hooks.log (jarvis status shows it), and when the recorded node or jarvis is gone (a moved clone, a reinstalled node) it runs jarvis from PATH. Running it again changes nothing; --uninstall removes only the block.`
  static examples = ['<%= config.bin %> hooks install', '<%= config.bin %> hooks install --uninstall']

  static flags = {
    uninstall: Flags.boolean({description: 'Remove the jarvis block from the hooks (and hooks that held nothing else).'}),
  }

  async run(): Promise<Omit<HooksResult, 'warnings'>> {
    const {warnings, ...result} = await installHooks({dir: this.flags.dir, uninstall: this.flags.uninstall})
    for (const warning of warnings) this.warn(warning)
    const changed = this.flags.uninstall ? result.removed : result.installed
    const verb = this.flags.uninstall ? 'removed the jarvis block from' : 'installed the jarvis block in'
    this.log(changed.length > 0 ? `${verb} ${changed.join(', ')} (${result.hooksDir})` : `hooks in ${result.hooksDir} already ${this.flags.uninstall ? 'free of jarvis' : 'up to date'}; nothing changed`)
    return result
  }
}
