import {JarvisCommand} from '../cli/base-command.js'
import {serverFlags} from '../cli/flags.js'
import {agentPrompt, PROMPT_PLACEMENT, type PromptResult} from '../ops/prompt.js'

export default class Prompt extends JarvisCommand<typeof Prompt> {
  static summary = 'Print the shared-memory instructions for an agent’s system prompt.'
  static description = `The short protocol block each agent gets: read the snapshot at the start of a run, append only settled facts at the end, never store secrets, stop when the memory cannot be read. It names this installation's commands and, when one is configured, the server. For chatgpt it is the block for ChatGPT's custom instructions, which reaches the memory through its jarvis connector (see "Connect ChatGPT or Claude's apps" in the README); Codex CLI, also agent chatgpt, gets the full block from \`jarvis agents install --agent codex\`.`
  static examples = ['<%= config.bin %> prompt --agent gemini >> GEMINI.md', '<%= config.bin %> prompt --agent claude --json', "<%= config.bin %> prompt --agent chatgpt   # paste into ChatGPT's custom instructions"]

  static flags = {...serverFlags}

  async run(): Promise<PromptResult> {
    const result = await agentPrompt({dir: this.flags.dir, server: this.flags.server, agent: this.flags.agent, bin: this.config.bin, forApp: true})
    this.log(result.text)
    if (!this.jsonEnabled()) this.logToStderr(`(for ${result.agent}: put this in ${PROMPT_PLACEMENT[result.agent]})`)
    return result
  }
}
