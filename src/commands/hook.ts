import {Args, Flags} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {answerHook, hookFailed} from '../cli/hook-door.js'
import {DEFAULT_MAX_TOKENS, MIN_MAX_TOKENS, type RunHookResult} from '../hook/index.js'

export default class Hook extends JarvisCommand<typeof Hook> {
  static summary = "What an agent's lifecycle hooks run: memory in at session start and per prompt, the session recorded as an episode at the end."
  static description = `Reads the hook JSON the agent writes on stdin and answers in that agent's own format on stdout. session-start: pinned memory, recent events and the project's memory files, within --max-tokens. prompt: the recall for the prompt, only files that pass the relevance threshold (nothing when none does). pre-compact, stop, session-end: the session recorded as .memory/episodes/YYYY-MM-DD/<agent>-<session>.md, synced in the background when sync.autoSync is on.

It never breaks the agent: it always exits 0, and a failure is written to .nexus/hooks.log; at session start the agent is told in one line that the memory could not be read. \`jarvis agents install\` registers it; see docs/hooks.md.`

  static examples = [
    `echo '{"session_id":"s1","cwd":"'$PWD'","hook_event_name":"SessionStart","source":"startup"}' | <%= config.bin %> hook session-start --agent claude`,
    `echo '{"prompt":"how do we deploy?","cwd":"'$PWD'"}' | <%= config.bin %> hook prompt --agent gemini`,
  ]

  static enableJsonFlag = false

  static args = {
    event: Args.string({description: 'session-start, prompt, pre-compact, stop or session-end (the agent\'s own names are accepted too).', required: true}),
  }

  static flags = {
    agent: Flags.string({description: 'The agent that runs the hook: claude, gemini, codex or openclaw.', required: true}),
    'max-tokens': Flags.integer({description: 'Token budget of the session-start context (estimated as characters / 4).', default: DEFAULT_MAX_TOKENS, min: MIN_MAX_TOKENS}),
  }

  async run(): Promise<RunHookResult> {
    return answerHook({event: this.args.event, agent: this.flags.agent, maxTokens: this.flags['max-tokens'], dir: this.flags.dir})
  }

  /** Even a usage error must not break the agent: exit 0, logged like any other failure. */
  protected async catch(error: Error): Promise<void> {
    await hookFailed(error)
  }
}
