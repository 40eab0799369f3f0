/**
 * `jarvis telegram` from start to stop: the bot asks the Bot API who it is for a bounded time (a Bot API that cannot be
 * reached, or refuses the token, stops it with the contract's exit code and what to do), then long-polls until its
 * signal is aborted (Ctrl-C, SIGTERM), and stops cleanly even when the Bot API is gone by then. Nothing it throws or
 * logs holds the token.
 */
import {type Api, GrammyError} from 'grammy'

import {JarvisError, ExitCode, UnreachableError} from '../errors.js'
import {API_RETRY, describeApiError} from './api.js'
import {createTelegramBot, type TelegramBotOptions} from './bot.js'

export const TELEGRAM_API_ROOT = 'https://api.telegram.org'

/** The longest the start waits for the Bot API to say who the bot is (its retries included). */
export const STARTUP_WAIT_MS = 30_000

/** The longest a stopping bot waits for its last Bot API calls: Ctrl-C is not kept waiting by a Bot API that is gone. */
const STOP_WAIT_MS = 3000

/** grammy types its signals as abort-controller's, the polyfill it runs on; Node's own are the same at run time. */
type ApiSignal = Parameters<Api['getMe']>[0]

export interface RunTelegramOptions extends TelegramBotOptions {
  /** Where the token was read, as a person would set it (`JARVIS_TELEGRAM_TOKEN`): what a refused token names. */
  tokenFrom: string
  /** Aborted by Ctrl-C or SIGTERM: the bot stops, and the run ends without an error whatever the Bot API does. */
  signal: AbortSignal
  /** Hears the bot's username once the Bot API has answered, before the first update. */
  onStart?: (username: string) => void
}

/** Runs the bot until `signal`; resolves with its username, or with none when stopped before the Bot API answered. */
export async function runTelegramBot(options: RunTelegramOptions): Promise<{username?: string}> {
  const {signal, token} = options
  const apiRoot = options.apiRoot ?? TELEGRAM_API_ROOT
  const bot = createTelegramBot(options)
  // Once stopped, what the bot still has to send (a reply in flight or waiting out a 429, bot.stop() telling the Bot API
  // the last update seen) has STOP_WAIT_MS to finish: grammy gives these calls no signal of their own.
  const lastCalls = new AbortController()
  signal.addEventListener('abort', () => setTimeout(() => lastCalls.abort(), STOP_WAIT_MS).unref(), {once: true})
  bot.api.config.use((prev, method, payload, callSignal) => prev(method, payload, callSignal ?? (lastCalls.signal as ApiSignal)))

  let me
  try {
    me = await bot.api.getMe(AbortSignal.any([signal, AbortSignal.timeout(STARTUP_WAIT_MS)]) as ApiSignal)
  } catch (error) {
    if (signal.aborted) return {}
    throw startError(error, apiRoot, options.tokenFrom, token)
  }
  if (signal.aborted) return {}
  // grammy would ask again, retrying for ever; it has the answer.
  bot.botInfo = me
  options.onStart?.(me.username)

  let stopping: Promise<void> | undefined
  const stop = () => {
    // The last update seen could not be confirmed: the next start gets it again, which is all it costs.
    stopping = bot.stop().catch(() => {})
  }
  signal.addEventListener('abort', stop, {once: true})
  try {
    await bot.start({drop_pending_updates: false})
  } catch (error) {
    if (!signal.aborted) throw pollingError(error, apiRoot, options.tokenFrom, token)
  } finally {
    signal.removeEventListener('abort', stop)
  }
  await stopping
  return {username: me.username}
}

/** Why getMe failed, said for a person: a refused token, a Bot API that cannot be reached, or the Bot API's own words. */
function startError(error: unknown, apiRoot: string, tokenFrom: string, token: string): JarvisError {
  if (isTokenRefusal(error)) return tokenRefused(error, apiRoot, tokenFrom, token)
  if (error instanceof GrammyError && error.error_code < 429) return new JarvisError(`the Bot API at ${apiRoot}: ${describeApiError(error, token)}`, {code: 'TELEGRAM', exit: ExitCode.failed})
  const tried = `${API_RETRY.attempts} tries in up to ${STARTUP_WAIT_MS / 1000} s`
  return new UnreachableError(
    `the Telegram Bot API at ${apiRoot} cannot be reached (${tried}; last: ${describeApiError(error, token)}): check this machine's network, or --api-root (JARVIS_TELEGRAM_API_ROOT) if it points at a self-hosted Bot API server, then start jarvis telegram again`,
    {reason: 'telegram-unreachable', api_root: apiRoot},
  )
}

/** Why polling stopped (not asked to): the token revoked meanwhile, another process polling with it, or else. */
function pollingError(error: unknown, apiRoot: string, tokenFrom: string, token: string): JarvisError {
  if (isTokenRefusal(error)) return tokenRefused(error, apiRoot, tokenFrom, token)
  if (error instanceof GrammyError && error.error_code === 409) {
    return new JarvisError(`another process takes this bot's updates (${describeApiError(error, token)}): stop it — one bot process per token`, {code: 'TELEGRAM_CONFLICT', exit: ExitCode.failed})
  }
  return new JarvisError(`the bot stopped: ${describeApiError(error, token)}`, {code: 'TELEGRAM', exit: ExitCode.failed})
}

/** Telegram answers 401 for a token it does not know and 404 for one that is not a token at all. */
function isTokenRefusal(error: unknown): error is GrammyError {
  return error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404)
}

/** A refused token exits as every refused token of jarvis does (3, with `reason: token`), naming where to set it. */
function tokenRefused(error: GrammyError, apiRoot: string, tokenFrom: string, token: string): UnreachableError {
  return new UnreachableError(
    `the Bot API at ${apiRoot} refused the bot token in ${tokenFrom} (${error.error_code}: ${describeApiError(error.description, token)}): set ${tokenFrom} to the token @BotFather gave this bot (/mybots → API Token), whole`,
    {reason: 'token', token_from: tokenFrom, api_root: apiRoot},
  )
}
