/**
 * Group commit for the PostgreSQL storage: writes that arrive while one transaction is under way wait and then go
 * together in the next one — one lock taken, one round trip per step, one WAL flush for all of them — instead of
 * queuing one by one behind a lock that each holds through its own flush (docs/decisions/scale.md).
 *
 * Each batch is one transaction that applies its items in order, exactly as they would apply one after the other,
 * so the rules decided in the database (revisions and 409s, idempotency keys, pins, event identity) are unchanged.
 * A batch that fails before its COMMIT is sent stored nothing: its items are then tried one at a time, so that one
 * item the database refuses fails alone. A batch that fails during its COMMIT may or may not be stored: every item
 * gets the error, as a single write would (a retry with its idempotency key or identity finds it).
 */
import createDebug from 'debug'

const debug = createDebug('jarvis:server:batches')

/** Thrown by a batch's work when its COMMIT failed: the outcome is unknown, nothing is tried again. */
export class CommitFailed extends Error {
  constructor(readonly cause: unknown) {
    super(`the commit failed: ${(cause as Error)?.message ?? String(cause)}`)
  }
}

interface Waiting<I, O> {
  item: I
  resolve: (outcome: O) => void
  reject: (error: unknown) => void
}

export interface BatcherOptions<I> {
  /** Most items in one batch. */
  maxItems: number
  /** Bytes an item carries (file contents): a batch stops growing past `maxBytes`, and always takes one item. */
  sizeOf?: (item: I) => number
  maxBytes?: number
}

export class Batcher<I, O> {
  private waiting: Waiting<I, O>[] = []
  private running = false

  /** `work` applies the items in order in one transaction and answers one outcome per item, in the same order. */
  constructor(
    private readonly name: string,
    private readonly work: (items: I[]) => Promise<O[]>,
    private readonly options: BatcherOptions<I>,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({item, resolve, reject})
      // Started at the end of this turn of the event loop: the requests read in the same turn share the first batch.
      if (!this.running) {
        this.running = true
        setImmediate(() => void this.drain())
      }
    })
  }

  private take(): Waiting<I, O>[] {
    const {maxItems, sizeOf, maxBytes = Number.POSITIVE_INFINITY} = this.options
    let count = 0
    let bytes = 0
    while (count < this.waiting.length && count < maxItems) {
      bytes += sizeOf?.(this.waiting[count].item) ?? 0
      if (count > 0 && bytes > maxBytes) break
      count++
    }
    return this.waiting.splice(0, count)
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        const batch = this.take()
        if (batch.length > 1) debug('%s: %d in one transaction', this.name, batch.length)
        await this.apply(batch)
      }
    } finally {
      this.running = false
    }
  }

  private async apply(batch: Waiting<I, O>[]): Promise<void> {
    let outcomes: O[]
    try {
      outcomes = await this.work(batch.map((waiting) => waiting.item))
    } catch (error) {
      if (batch.length === 1 || error instanceof CommitFailed) {
        for (const waiting of batch) waiting.reject(error instanceof CommitFailed ? error.cause : error)
        return
      }
      // Nothing of the batch is stored: each item alone, so that only the one the database refuses fails.
      debug('%s: a batch of %d failed (%s); one at a time', this.name, batch.length, (error as Error).message)
      for (const waiting of batch) await this.apply([waiting])
      return
    }
    for (const [index, waiting] of batch.entries()) waiting.resolve(outcomes[index])
  }
}
