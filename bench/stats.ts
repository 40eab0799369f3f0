import {performance} from 'node:perf_hooks'

/** One section of docs/BENCHMARKS.md. */
export interface BenchSection {
  title: string
  markdown: string
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** Runs `fn` `times` times (after `warmup` unmeasured runs) and returns each duration in ms. */
export async function timeRuns(times: number, fn: () => unknown | Promise<unknown>, warmup = 0): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn()
  const durations: number[] = []
  for (let i = 0; i < times; i++) {
    const start = performance.now()
    await fn()
    durations.push(performance.now() - start)
  }
  return durations
}

export function ms(value: number): string {
  if (value >= 1000) return `${(value / 1000).toFixed(2)} s`
  if (value >= 10) return `${value.toFixed(0)} ms`
  return `${value.toFixed(2)} ms`
}

export function ratio(ours: number, theirs: number): string {
  if (ours === 0) return '—'
  const r = theirs / ours
  return r >= 1 ? `${r.toFixed(1)}× faster` : `${(1 / r).toFixed(1)}× slower`
}

export function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n')
}
