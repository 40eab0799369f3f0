/**
 * How `jarvis telegram` talks to the Bot API when it fails: a refused or dropped call is tried again a bounded number
 * of times (429 after its `retry_after`, a 5xx or a lost connection with backoff), and every error is told in one line
 * with the bot's token taken out — grammy's own errors carry the request URL, which holds the token.
 */
import {setTimeout as delay} from 'node:timers/promises'

import {BotError, GrammyError, HttpError, type Transformer} from 'grammy'

/** The retries of one call: four attempts in all, 1 s, 2 s and 4 s apart; a 429 asking for longer than a minute is given up. */
export const API_RETRY = {attempts: 4, firstDelayMs: 1000, longestRetryAfterSeconds: 60} as const

/** What a failed call got back: the Bot API's error answer, or no answer at all (refused, dropped, not JSON). */
export type ApiFailure = {error_code?: number; description?: string; parameters?: {retry_after?: number}} | 'network'

/**
 * How long to wait before the next attempt of a call that failed at attempt `attempt` (1-based), or undefined to give
 * up: a 4xx other than 429 (a blocked user, a kicked bot, a bad request) will fail the same way again.
 */
export function retryDelayMs(failure: ApiFailure, attempt: number): number | undefined {
  if (attempt >= API_RETRY.attempts) return undefined
  const backoff = API_RETRY.firstDelayMs * 2 ** (attempt - 1)
  if (failure === 'network' || (failure.error_code ?? 0) >= 500) return backoff
  if (failure.error_code !== 429) return undefined
  const retryAfter = failure.parameters?.retry_after
  if (retryAfter === undefined) return backoff
  return retryAfter <= API_RETRY.longestRetryAfterSeconds ? retryAfter * 1000 : undefined
}

/** Hears each retry: the method, why (one line, token-free) and the wait. */
export type RetryListener = (method: string, reason: string, waitMs: number) => void

/**
 * The Bot API transformer that retries by `retryDelayMs`. `getUpdates` is left to grammy's polling loop, which waits
 * out an outage on its own and is cancelled by `bot.stop()`. An aborted call (its signal) is not tried again.
 */
export function retryingTransformer(token: string, onRetry?: RetryListener): Transformer {
  return async (prev, method, payload, signal) => {
    if (method === 'getUpdates') return prev(method, payload, signal)
    for (let attempt = 1; ; attempt++) {
      let wait: number | undefined
      let reason: string
      try {
        const answer = await prev(method, payload, signal)
        if (answer.ok) return answer
        wait = retryDelayMs(answer, attempt)
        if (wait === undefined) return answer
        reason = `${answer.error_code}: ${answer.description}`
      } catch (error) {
        wait = signal?.aborted ? undefined : retryDelayMs('network', attempt)
        if (wait === undefined) throw error
        reason = describeApiError(error, token)
      }
      onRetry?.(method, redactToken(reason, token), wait)
      // grammy's signals are abort-controller's, which node:timers honours as its own.
      await delay(wait, undefined, {signal: signal as AbortSignal | undefined})
    }
  }
}

/** `text` with the bot's token (as typed, or URL-encoded) replaced by `<token>`. */
export function redactToken(text: string, token: string): string {
  if (!token) return text
  return text.replaceAll(token, '<token>').replaceAll(encodeURIComponent(token), '<token>')
}

/**
 * One line for an error of the Bot API, a middleware or the network, never with the token: grammy's message
 * ("Call to 'sendMessage' failed! (403: Forbidden: bot was blocked by the user)"), and for a network failure what
 * the connection did ("… socket hang up"), which grammy keeps in `error.error` with the URL.
 */
export function describeApiError(error: unknown, token: string): string {
  const inner = error instanceof BotError ? error.error : error
  let text: string
  if (inner instanceof HttpError) {
    // node-fetch says "request to <url> failed, reason: connect ECONNREFUSED …": the reason is what a person needs.
    const cause = inner.error instanceof Error ? (/reason: (.*)$/s.exec(inner.error.message)?.[1] ?? inner.error.message) : ''
    text = cause ? `${inner.message} (${cause})` : inner.message
  } else if (inner instanceof GrammyError || inner instanceof Error) {
    text = inner.message
  } else {
    text = String(inner)
  }
  return redactToken(text, token).replaceAll(/\s*\n\s*/g, ' ')
}
