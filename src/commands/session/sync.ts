import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {sessionSync, type SessionSyncResult} from '../../ops/session.js'
import {renderSessionSync, sessionWarnings} from '../../cli/session-render.js'
import {BadInputError} from '../../errors.js'
import type {Provider} from '../../schemas/index.js'

export default class SessionSync extends JarvisCommand<typeof SessionSync> {
  static summary = 'Carry a conversation between Claude Code, Gemini CLI and Codex CLI; only new messages are added.'
  static description = `The source is a tag of .nexus/sessions.json, a Claude Code or Codex CLI session id (or a unique prefix), or a Gemini CLI checkpoint tag or session id; a tag carries the conversation's newest session in another tool. Messages are merged with the append-only rule: content-keyed, order kept, a message already in the target is not added again, and a second run with nothing new adds nothing. The source session is only read.
The first sync creates a session in the target tool, later ones append to it: --to claude continues with \`claude --resume <id>\`, --to codex with \`codex resume <id>\` (or \`codex exec resume <id>\`), --to gemini with \`gemini --resume <id>\`; for Gemini CLI the \`/chat resume <tag>\` checkpoint and its copy in .nexus/gemini-backup/<tag>.json are written too. A sync refuses to append to a session whose file changed in the last 10 seconds (probably open in its tool) unless --force (exit 4).
Settings from .nexus/config.json: sync.incrementalSync, sync.deduplicateMessages, sync.maxRetries, sync.retryDelay, sync.lockTimeout.`
  static examples = [
    '<%= config.bin %> session sync 3f2a9c1e --to gemini',
    '<%= config.bin %> session sync 3f2a9c1e --to gemini --tag auth-refactor',
    '<%= config.bin %> session sync auth-refactor --to claude',
    '<%= config.bin %> session sync auth-refactor --to codex',
  ]

  static args = {
    session: Args.string({description: 'Registry tag, Claude Code or Codex CLI session id (or prefix), or Gemini CLI checkpoint tag / session id.', required: true}),
  }

  static flags = {
    // Checked in parse, not with `options`: oclif's own options check fails with exit 1 and a stack trace.
    to: Flags.custom<Provider>({
      description: 'The tool to carry the conversation to: claude, gemini or codex.',
      helpValue: 'claude|gemini|codex',
      required: true,
      async parse(input) {
        if (input === 'gemini' || input === 'claude' || input === 'codex') return input
        throw new BadInputError(`--to must be claude, gemini or codex, not ${JSON.stringify(input)}`, {flag: 'to', value: input})
      },
    })(),
    force: Flags.boolean({description: 'Append to a target session even if its file changed in the last seconds.'}),
    tag: Flags.string({description: 'Tag for a conversation that has none yet (default claude-<id8> / gemini-<id8> / codex-<id8>, more of the id when another conversation has that tag); also the Gemini checkpoint name.'}),
  }

  async run(): Promise<SessionSyncResult> {
    const result = await sessionSync({dir: this.flags.dir, ref: this.args.session, to: this.flags.to, force: this.flags.force, tag: this.flags.tag})
    for (const warning of sessionWarnings(result)) this.warn(warning)
    this.log(renderSessionSync(result))
    return result
  }
}
