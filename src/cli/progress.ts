/** A sync's file counter on a terminal's stderr (not on a pipe: a log would fill with carriage returns). */

const PROGRESS_THRESHOLD = 50

/** `\rsyncing 120/400`, ending its line at the last file; nothing when too few files move to be worth watching. */
export function progressText(done: number, total: number): string {
  if (total < PROGRESS_THRESHOLD) return ''
  return `\rsyncing ${done}/${total}${done === total ? '\n' : ''}`
}

/** The counter on this process's stderr. */
export function progressLine(done: number, total: number): void {
  const text = progressText(done, total)
  if (text) process.stderr.write(text)
}
