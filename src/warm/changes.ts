/**
 * Which files of `.memory/` changed since a clock: what a watched tree answers so that `jarvis sync` need not look at
 * every file (git's fsmonitor and watchman answer the same question). The tree watch (tree-watch.ts) reports each
 * changed path here as its event arrives; a caller that kept a clock from an earlier answer asks for the paths changed
 * since, once the cookie proved that every change made before its request was reported.
 *
 * A clock is `<epoch>:<n>`: `epoch` is drawn when the journal starts (a watcher restarted, or another one, never
 * answers for a clock it did not give), `n` counts the answers given. Never trusted blindly: the journal answers
 * `all` (the caller looks at every file) for a clock of another epoch, one from before events were lost (an inotify
 * queue that may have overflowed, a watch that failed, a folder added or removed, which the watch does not describe
 * file by file), or when the wall clock jumped against the monotonic one since the last answer.
 */
import {randomBytes} from 'node:crypto'
import {readFileSync} from 'node:fs'

/** What a watched tree answers: a new clock, and the paths changed since the one asked, or `all` when it cannot say. */
export type ChangesAnswer = {clock: string; paths: string[]} | {clock: string; all: true; reason: string}

/** How far apart the wall clock and the monotonic one may drift between two answers before the journal distrusts them. */
const CLOCK_JUMP_MS = 1000
/** Paths remembered before the journal gives up and says `all` to older clocks (a tree of more files is rescanned then). */
const MAX_PATHS = 200_000

/**
 * The events one read of the inotify queue may deliver before the queue may have overflowed. The kernel drops events
 * past `max_queued_events` (16,384 by default) and libuv drops its overflow notice, so an overflow is never reported;
 * but libuv reads the whole queue in one go and calls every watcher synchronously, so an overflowed queue arrives as
 * one burst of at least that many events. Half of it counts as a loss: a burst that large (a checkout, a pull of
 * thousands of files) only costs the next caller one full scan.
 */
export function overflowBurst(): number {
  try {
    const max = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim())
    if (Number.isSafeInteger(max) && max > 0) return Math.max(1, Math.floor(max / 2))
  } catch {
    // not Linux, or /proc not mounted: the default
  }
  return 8192
}

export class ChangeJournal {
  private readonly epoch = randomBytes(6).toString('hex')
  /** The last clock given; every change reported since carries the next number. */
  private given = 0
  /** Each path changed, with the number of the first clock that does not include it. */
  private readonly changed = new Map<string, number>()
  /** Clocks below this one cannot be answered: events were lost after they were given. */
  private lostBefore = 1
  private lostReason = 'the watch started after this clock'
  private wall = Date.now()
  private mono = performance.now()

  /** A path under `.memory/` (relative, `/`-separated) was added, changed or removed. */
  change(path: string): void {
    if (this.changed.size >= MAX_PATHS && !this.changed.has(path)) {
      this.lose(`more than ${MAX_PATHS} paths changed`)
      return
    }
    this.changed.set(path, this.given + 1)
  }

  /** Events were lost, or cannot be told path by path: no clock given so far is answered with paths again. */
  lose(reason: string): void {
    this.lostBefore = this.given + 1
    this.lostReason = reason
    this.changed.clear()
  }

  /**
   * The paths changed since `since` (a clock this journal gave), sorted, and the clock to ask with next time. Call
   * only once every change made before the request has been reported (the cookie); `all` when that is not known.
   */
  since(since: string | undefined): ChangesAnswer {
    const wall = Date.now()
    const mono = performance.now()
    if (Math.abs(wall - this.wall - (mono - this.mono)) > CLOCK_JUMP_MS) this.lose('the system clock jumped')
    this.wall = wall
    this.mono = mono
    const asked = parseClock(since)
    const clock = `${this.epoch}:${++this.given}`
    if (asked === undefined) return {clock, all: true, reason: since === undefined ? 'no clock asked' : 'not a clock'}
    if (asked.epoch !== this.epoch) return {clock, all: true, reason: 'a clock of another watch'}
    if (asked.n < this.lostBefore) return {clock, all: true, reason: this.lostReason}
    if (asked.n >= this.given) return {clock, all: true, reason: 'a clock this watch has not given yet'}
    const paths: string[] = []
    for (const [path, first] of this.changed) if (first > asked.n) paths.push(path)
    return {clock, paths: paths.sort()}
  }
}

function parseClock(clock: string | undefined): {epoch: string; n: number} | undefined {
  const found = clock === undefined ? null : /^([0-9a-f]{12}):(\d{1,15})$/.exec(clock)
  return found === null ? undefined : {epoch: found[1], n: Number(found[2])}
}
