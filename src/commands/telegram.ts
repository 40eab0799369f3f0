import {Flags} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {BadInputError} from '../errors.js'

export const TELEGRAM_TOKEN_ENV = 'JARVIS_TELEGRAM_TOKEN'

export default class Telegram extends JarvisCommand<typeof Telegram> {
  static summary = 'Run a Telegram bot that answers /snapshot, /search, /recall, /append and /switch for the chats you allow.'
  static description = `The bot's token comes from ${TELEGRAM_TOKEN_ENV} (from @BotFather), never from a flag or a file. It speaks for this tree's agent and server, like every command here: an /append is checked for secrets and refused with the same message, and is written with source telegram. Chats not on --allow-chat get one line saying so, and nothing else. Runs until Ctrl-C or SIGTERM.`
  static examples = ['JARVIS_TELEGRAM_TOKEN=… <%= config.bin %> telegram --allow-chat 123456789', '<%= config.bin %> telegram --allow-chat 123456789 --allow-chat -1001234567890   # a person and a group']

  static flags = {
    'allow-chat': Flags.integer({description: 'A chat id that may use the bot (repeatable). Your id: send /start to the bot, it answers with it.', multiple: true, required: true}),
    'api-root': Flags.string({description: 'Another Bot API server (a self-hosted one). [default: Telegram’s]', env: 'JARVIS_TELEGRAM_API_ROOT'}),
  }

  async run(): Promise<{username: string; allowed: number[]}> {
    const token = process.env[TELEGRAM_TOKEN_ENV]
    if (!token) throw new BadInputError(`set ${TELEGRAM_TOKEN_ENV} to the bot's token (from @BotFather); it is never read from a flag or a file`, {field: TELEGRAM_TOKEN_ENV})
    const {createTelegramBot} = await import('../telegram/bot.js')
    const allowed = this.flags['allow-chat']
    const bot = createTelegramBot({token, allowChats: new Set(allowed), dir: this.flags.dir, apiRoot: this.flags['api-root']})
    const stop = () => void bot.stop()
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
    let username = ''
    await bot.start({
      drop_pending_updates: false,
      onStart: (me) => {
        username = me.username
        this.logToStderr(`jarvis telegram: @${me.username} answers chat(s) ${allowed.join(', ')}; Ctrl-C stops it`)
      },
    })
    return {username, allowed}
  }
}
