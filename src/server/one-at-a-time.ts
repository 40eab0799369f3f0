/**
 * Work that must not overlap within this process, queued per key in the order it was asked for. Across processes
 * the database keeps things right (locks, optimistic revisions); queued here, the work of one process waits without
 * holding a database connection and without losing optimistic races to itself.
 */
export class OneAtATime {
  private readonly tails = new Map<string, Promise<unknown>>()

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve()
    const result = previous.then(work)
    const tail = result.catch(() => undefined)
    this.tails.set(key, tail)
    // The last in line forgets the key, so the map holds only keys with work pending.
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    })
    return result
  }
}
