import {JarvisCommand} from '../../cli/base-command.js'
import {sessionList, type SessionListResult} from '../../ops/session.js'
import {renderSessionList} from '../../cli/session-render.js'

export default class SessionList extends JarvisCommand<typeof SessionList> {
  static summary = "This project's Claude Code, Gemini CLI and Codex CLI sessions, with message counts, last activity, tag and sync status."
  static description = `Claude Code sessions are read from $CLAUDE_CONFIG_DIR (default ~/.claude), Gemini CLI sessions and /chat save checkpoints from $GEMINI_CLI_HOME/.gemini (default ~/.gemini), Codex CLI sessions from $CODEX_HOME/sessions (default ~/.codex; the threads started in this project). The tag and sync status come from .nexus/sessions.json and .nexus/sync-state.json; "N new since last sync" counts the messages added after the last \`jarvis session sync\` that involved the session.`
  static examples = ['<%= config.bin %> session list', '<%= config.bin %> session list --json']

  async run(): Promise<SessionListResult> {
    const result = await sessionList({dir: this.flags.dir})
    this.log(renderSessionList(result))
    return result
  }
}
