/**
 * Whether a storage call failed because the database cannot be reached right now (stopped, restarting, the
 * network to it cut), rather than because of a bug: such a request is answered 503 `unavailable` ("try again"),
 * which a client may queue or retry, not 500 ("a bug"), which says the same request would fail again.
 */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])
/** PostgreSQL's SQLSTATEs of a server going away or not accepting yet: admin_shutdown, crash_shutdown, cannot_connect_now. */
const SHUTDOWN_STATES = new Set(['57P01', '57P02', '57P03'])
/** What the `pg` driver says, without a code, when the connection ends under it or a pool cannot get one in time. */
const DRIVER_MESSAGES = [/^Connection terminated/, /timeout exceeded when trying to connect/, /Client has encountered a connection error and is not queryable/]

export function isStorageOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const code = (error as NodeJS.ErrnoException).code
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || SHUTDOWN_STATES.has(code) || code.startsWith('08'))) return true
  if (error instanceof AggregateError) return error.errors.some(isStorageOutage)
  return DRIVER_MESSAGES.some((pattern) => pattern.test(error.message))
}
