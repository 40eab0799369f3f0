/**
 * `fn` over `items`, at most `limit` at a time: file work is mostly waiting on the disk, and libuv's thread pool
 * serves a few requests at once; a sequential await per file leaves it idle, an unbounded Promise.all runs out of
 * file handles on a large tree. The first error rejects; the items already started still finish.
 */
export async function forEachConcurrently<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      await fn(items[index], index)
    }
  }
  await Promise.all(Array.from({length: Math.min(limit, items.length)}, worker))
}
