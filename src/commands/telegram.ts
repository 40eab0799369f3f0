import {Flags} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {BadInputError} from '../errors.js'
import {nextSignal} from '../cli/signals.js'

export const TELEGRAM_TOKEN_ENV = 'JARVIS_TELEGRAM_TOKEN'

export default class Telegram extends JarvisCommand<typeof Telegram> {
  static summary = 'Run a Telegram bot that answers /snapshot, /search, /recall, /append and /switch for the chats you allow.'
  static description = `The bot's token comes from ${TELEGRAM_TOKEN_ENV} (from @BotFather), never from a flag or a file. It speaks for this tree's agent and server, like every command here: an /append is checked for secrets and refused with the same message, and is written with source telegram. Chats not on --allow-chat get one line saying so, and nothing else; in a group it answers only commands for it, never the talk or another bot's commands. A reply that cannot be sent is retried (429 after its retry_after, a 5xx or a lost connection up to four times) or logged in one line, and the bot goes on. A Bot API it cannot reach at start (30 s), or a token it refuses, stops it with exit 3. Runs until Ctrl-C or SIGTERM, which exit 0.`
  static examples = ['JARVIS_TELEGRAM_TOKEN=… <%= config.bin %> telegram --allow-chat 123456789', '<%= config.bin %> telegram --allow-chat 123456789 --allow-chat -1001234567890   # a person and a group']

  static flags = {
    'allow-chat': Flags.integer({description: 'A chat id that may use the bot (repeatable). Your id: send /start to the bot, it answers with it.', multiple: true, required: true}),
    'api-root': Flags.string({description: 'Another Bot API server (a self-hosted one). [default: Telegram’s]', env: 'JARVIS_TELEGRAM_API_ROOT'}),
  }

  async run(): Promise<{username: string; allowed: number[]}> {
    const token = process.env[TELEGRAM_TOKEN_ENV]
    if (!token) throw new BadInputError(`set ${TELEGRAM_TOKEN_ENV} to the bot's token (from @BotFather); it is never read from a flag or a file`, {field: TELEGRAM_TOKEN_ENV})
    const {runTelegramBot} = await import('../telegram/run.js')
    const allowed = this.flags['allow-chat']
    const stop = new AbortController()
    const signals = nextSignal()
    void signals.signal.then(() => stop.abort())
    const log = (line: string) => this.logToStderr(`jarvis telegram: ${line}`)
    const onStart = (name: string) => log(`@${name} answers chat(s) ${allowed.join(', ')}; Ctrl-C stops it`)
    const {username = ''} = await runTelegramBot({token, tokenFrom: TELEGRAM_TOKEN_ENV, allowChats: new Set(allowed), dir: this.flags.dir, apiRoot: this.flags['api-root'], log, onStart, signal: stop.signal}).finally(() => signals.dispose())
    return {username, allowed}
  }
}
