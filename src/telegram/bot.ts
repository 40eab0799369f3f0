/**
 * `jarvis telegram`: the shared memory from a phone. A grammy bot answering /snapshot, /search, /recall, /append
 * and /switch for the chats on the allow list only, through the same operations as the commands — so an append
 * goes through the same secret refusal, with the same message, and is written with `source: telegram` (the chat
 * and the message as `thread_id` and `message_id`). Any other chat gets one line saying it is not allowed.
 *
 * It answers only what speaks to it: anything in a private chat, and in a group a command with no bot named or this
 * one — never a group's chatter, a command for another bot, or the bot being added to or removed from a chat. A reply
 * that cannot be sent (a blocked user, a kicked bot, the Bot API down after its retries) is one line of the log, and
 * the bot goes on answering the others.
 */
import {Bot, type Context} from 'grammy'
import type {Message} from 'grammy/types'

import {SchemaError} from '../errors.js'
import {appendMemory, type FieldNames} from '../ops/events/append.js'
import {newRunId} from '../ops/events/common.js'
import {listEvents} from '../ops/events/list.js'
import {readSnapshot} from '../ops/events/snapshot.js'
import {recallMemory} from '../ops/recall.js'
import {switchProject} from '../ops/task.js'
import {renderAppend, renderEvents, renderSnapshot} from '../cli/memory-render.js'
import {headOf} from '../schemas/shorten.js'
import {describeApiError, retryingTransformer} from './api.js'

/** Telegram refuses longer messages. */
const MESSAGE_MAX = 4096

const APPEND_USAGE = 'usage: /append <kind> <key> <text>, e.g. /append decision decision:deploy_day Deploys go out on Tuesdays.'

/** A refused /append names its arguments as the chat command has them, not as the command line's flags. */
const APPEND_NAMES: FieldNames = {where: '/append', fields: {kind: 'kind', dedupe_key: 'key', content_md: 'text'}}

export const HELP = [
  'jarvis: the shared memory of your agents.',
  '/snapshot — pinned memory and recent events',
  '/search <words> — events that match',
  '/recall <words> — the memory files that match',
  '/append <kind> <key> <text> — write an event (its text may take several lines), e.g. /append decision decision:deploy_day Deploys go out on Tuesdays.',
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
  /** Where the bot tells what went wrong (a reply not sent, a call tried again): one line each, never the token. */
  log?: (line: string) => void
}

/**
 * Longest wait for one Bot API request, past the 30 s long poll of getUpdates: grammy's own default is 500 s, which a
 * Bot API that accepts connections and never answers would hold each reply for.
 */
const REQUEST_TIMEOUT_SECONDS = 60

/** A reply cut to what one Telegram message holds, never inside an emoji. */
export function clipToMessage(text: string): string {
  return text.length <= MESSAGE_MAX ? text : `${headOf(text, MESSAGE_MAX - 2)}\n…`
}

/** The words after the command (`/append@jarvis_bot a b` → `a b`). */
function argumentsOf(ctx: Context): string {
  return typeof ctx.match === 'string' ? ctx.match.trim() : ''
}

/**
 * `/append`'s arguments: the kind and the key are its first two words, the text is the rest as typed — its lines and
 * spaces kept, only the whitespace between the key and the text left out. Null when one of the three is missing.
 */
export function appendArguments(text: string): {kind: string; key: string; content: string} | null {
  const match = /^(\S+)\s+(\S+)\s+(\S[\s\S]*)$/.exec(text.trim())
  return match ? {kind: match[1], key: match[2], content: match[3]} : null
}

/**
 * Whether a message speaks to the bot `username`: anything in a private chat; in a group, a command (`/x` at the start)
 * naming no bot or this one (`/x@jarvis_bot`) — not plain talk, nor `/x@another_bot`.
 */
export function addressedToBot(message: Pick<Message, 'chat' | 'text' | 'entities'>, username: string): boolean {
  if (message.chat.type === 'private') return true
  const command = message.entities?.[0]
  if (command?.type !== 'bot_command' || command.offset !== 0 || message.text === undefined) return false
  const named = message.text.slice(0, command.length).split('@')[1]
  return named === undefined || named.toLowerCase() === username.toLowerCase()
}

export function createTelegramBot(options: TelegramBotOptions): Bot {
  const log = options.log ?? (() => {})
  const bot = new Bot(options.token, {client: {timeoutSeconds: REQUEST_TIMEOUT_SECONDS, ...(options.apiRoot ? {apiRoot: options.apiRoot} : {})}})
  bot.api.config.use(retryingTransformer(options.token, (method, reason, waitMs) => log(`${method} failed (${reason}); trying again in ${waitMs / 1000} s`)))
  // Without a handler of its own grammy stops the bot at the first reply it cannot send, printing the error's URL.
  bot.catch((error) => log(`no answer to chat ${error.ctx.chat?.id ?? '?'}: ${describeApiError(error, options.token)}`))
  const dir = options.dir

  // What does not speak to the bot goes no further; then the allow list: nothing else runs for another chat. Only a
  // message is answered — the update of the bot being removed from a chat would be answered with a 403.
  bot.use(async (ctx, next) => {
    if (!ctx.message || !addressedToBot(ctx.message, ctx.me.username)) return
    const chat = ctx.message.chat.id
    if (!options.allowChats.has(chat)) {
      await ctx.reply(`This chat (${chat}) is not allowed to use this jarvis; its owner can add it with --allow-chat ${chat}.`)
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
    await ctx.reply(clipToMessage(text))
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
      const fields = appendArguments(argumentsOf(ctx))
      if (fields === null) return APPEND_USAGE
      try {
        const result = await appendMemory({
          dir,
          fields,
          source: 'telegram',
          sourceDetail: {thread_id: String(ctx.chat!.id), ...(ctx.message ? {message_id: String(ctx.message.message_id)} : {})},
          // Each message is a run of its own, as each call over the hosted /mcp is: the bot runs for weeks, and a
          // decision changed back to an earlier text is a new event, not a duplicate of the first one.
          runId: newRunId('telegram'),
          names: APPEND_NAMES,
        })
        return renderAppend(result)
      } catch (error) {
        if (error instanceof SchemaError) return `${error.message}\n${APPEND_USAGE}`
        throw error
      }
    }),
  )
  bot.command(
    'switch',
    answer(async (ctx) => {
      const projectId = argumentsOf(ctx)
      if (!projectId) return 'usage: /switch <project>'
      // The contract knows three switchers (system, user-cli, user-web): a person through a client that is not the
      // command line is user-web, the dashboard's value; another value would be refused by a seed-style server.
      const active = await switchProject({dir, projectId, switchedBy: 'user-web'})
      return `active project: ${active.projectId} (every connected agent hears it)`
    }),
  )
  bot.on('message:text', (ctx) => ctx.reply(HELP))
  return bot
}
