/**
 * `jarvis telegram`: the shared memory from a phone. A grammy bot answering /snapshot, /search, /recall, /append
 * and /switch for the chats on the allow list only, through the same operations as the commands — so an append
 * goes through the same secret refusal, with the same message, and is written with `source: telegram` (the chat
 * and the message as `thread_id` and `message_id`). Any other chat gets one line saying it is not allowed.
 */
import {Bot, type Context} from 'grammy'

import {appendMemory} from '../ops/events/append.js'
import {listEvents} from '../ops/events/list.js'
import {readSnapshot} from '../ops/events/snapshot.js'
import {recallMemory} from '../ops/recall.js'
import {switchProject} from '../ops/task.js'
import {renderAppend, renderEvents, renderSnapshot} from '../cli/memory-render.js'

/** Telegram refuses longer messages. */
const MESSAGE_MAX = 4096

export const HELP = [
  'jarvis: the shared memory of your agents.',
  '/snapshot — pinned memory and recent events',
  '/search <words> — events that match',
  '/recall <words> — the memory files that match',
  '/append <kind> <key> <text> — write an event, e.g. /append decision decision:deploy_day Deploys go out on Tuesdays.',
  '/switch <project> — set the active project for every agent',
].join('\n')

export interface TelegramBotOptions {
  token: string
  /** Chat ids allowed to use the bot. */
  allowChats: ReadonlySet<number>
  /** The jarvis tree whose identity and server the bot uses (as `--dir`). */
  dir?: string
  /** Another Bot API server (a self-hosted one); default Telegram's. */
  apiRoot?: string
}

function clip(text: string): string {
  return text.length <= MESSAGE_MAX ? text : `${text.slice(0, MESSAGE_MAX - 2)}\n…`
}

/** The words after the command (`/append@jarvis_bot a b` → `a b`). */
function argumentsOf(ctx: Context): string {
  return typeof ctx.match === 'string' ? ctx.match.trim() : ''
}

export function createTelegramBot(options: TelegramBotOptions): Bot {
  const bot = new Bot(options.token, options.apiRoot ? {client: {apiRoot: options.apiRoot}} : undefined)
  const dir = options.dir

  // The allow list comes first: nothing else runs for another chat.
  bot.use(async (ctx, next) => {
    const chat = ctx.chat?.id
    if (chat === undefined || !options.allowChats.has(chat)) {
      if (chat !== undefined) await ctx.reply(`This chat (${chat}) is not allowed to use this jarvis; its owner can add it with --allow-chat ${chat}.`)
      return
    }
    await next()
  })

  const answer = (run: (ctx: Context) => Promise<string>) => async (ctx: Context) => {
    let text: string
    try {
      text = await run(ctx)
    } catch (error) {
      // The same words a command prints: a refused secret names what was found and where, never the secret.
      text = `jarvis: ${error instanceof Error ? error.message : String(error)}`
    }
    await ctx.reply(clip(text))
  }

  bot.command(['start', 'help'], (ctx) => ctx.reply(HELP))
  bot.command(
    'snapshot',
    answer(async () => renderSnapshot(await readSnapshot({dir, cache: false}))),
  )
  bot.command(
    'search',
    answer(async (ctx) => {
      const query = argumentsOf(ctx)
      if (!query) return 'usage: /search <words>'
      return renderEvents(await listEvents({dir, query, limit: 10}))
    }),
  )
  bot.command(
    'recall',
    answer(async (ctx) => {
      const query = argumentsOf(ctx)
      if (!query) return 'usage: /recall <words>'
      return (await recallMemory({dir, query, limit: 5})).block
    }),
  )
  bot.command(
    'append',
    answer(async (ctx) => {
      const [kind, key, ...words] = argumentsOf(ctx).split(/\s+/)
      const content = words.join(' ')
      if (!kind || !key || !content) return 'usage: /append <kind> <key> <text>, e.g. /append decision decision:deploy_day Deploys go out on Tuesdays.'
      const result = await appendMemory({
        dir,
        fields: {kind, key, content},
        source: 'telegram',
        sourceDetail: {thread_id: String(ctx.chat!.id), ...(ctx.message ? {message_id: String(ctx.message.message_id)} : {})},
      })
      return renderAppend(result)
    }),
  )
  bot.command(
    'switch',
    answer(async (ctx) => {
      const projectId = argumentsOf(ctx)
      if (!projectId) return 'usage: /switch <project>'
      const active = await switchProject({dir, projectId, switchedBy: 'user-web'})
      return `active project: ${active.projectId} (every connected agent hears it)`
    }),
  )
  bot.on('message:text', (ctx) => ctx.reply(HELP))
  return bot
}
