/** Requests answered while the process works (a sync overlaps the server's work with its own). */

/** A request whose answer is awaited later: a failure meanwhile is not an unhandled rejection (it is thrown at the await). */
export function prefetch<T>(answer: Promise<T>): Promise<T> {
  answer.catch(() => {})
  return answer
}

/**
 * A request to be answered while this process works: returns once it is on the wire (or has failed), with its answer
 * to await later. Work that holds the thread (a scan, opening a database) would otherwise hold the request back too:
 * a request waits for its connection's turn of the event loop before it is written.
 */
export async function sentFirst<T>(ask: (sent: () => void) => Promise<T>): Promise<{answer: Promise<T>}> {
  let sent!: () => void
  const onTheWire = new Promise<void>((resolve) => (sent = resolve))
  const answer = prefetch(ask(sent))
  await Promise.race([onTheWire, answer.then(noop, noop)])
  return {answer}
}

const noop = () => {}

