/**
 * What the load bench (bench/load.ts) records: latencies in a histogram (fixed memory however long the run, for the
 * soak), and what the processes on the machine use — CPU time, resident memory and open file descriptors — read
 * from /proc (Linux), so the report says where the two cores went: load generator, server processes, PostgreSQL.
 */
import {readdir, readFile} from 'node:fs/promises'

/**
 * Latencies in milliseconds, in buckets 1 % wide (logarithmic) from 1 µs to over an hour: a percentile is exact to
 * within 1 %, and a 30-minute soak takes no more memory than a 30-second run.
 */
export class Histogram {
  private static readonly GROWTH = 1.01
  private static readonly MIN = 0.001
  private readonly counts = new Map<number, number>()
  private total = 0
  private sum = 0
  private largest = 0

  record(ms: number): void {
    const value = Math.max(ms, Histogram.MIN)
    const bucket = Math.floor(Math.log(value / Histogram.MIN) / Math.log(Histogram.GROWTH))
    this.counts.set(bucket, (this.counts.get(bucket) ?? 0) + 1)
    this.total++
    this.sum += value
    if (value > this.largest) this.largest = value
  }

  get count(): number {
    return this.total
  }

  get mean(): number {
    return this.total === 0 ? Number.NaN : this.sum / this.total
  }

  get max(): number {
    return this.total === 0 ? Number.NaN : this.largest
  }

  /** The value below which `p` percent of the recorded values lie (the bucket's upper edge); NaN when empty. */
  percentile(p: number): number {
    if (this.total === 0) return Number.NaN
    const rank = Math.ceil((p / 100) * this.total)
    let seen = 0
    for (const bucket of [...this.counts.keys()].sort((a, b) => a - b)) {
      seen += this.counts.get(bucket) ?? 0
      if (seen >= rank) return Math.min(Histogram.MIN * Histogram.GROWTH ** (bucket + 1), this.largest)
    }
    return this.largest
  }

  merge(other: Histogram): void {
    for (const [bucket, count] of other.counts) this.counts.set(bucket, (this.counts.get(bucket) ?? 0) + count)
    this.total += other.total
    this.sum += other.sum
    this.largest = Math.max(this.largest, other.largest)
  }
}

/** A 32-bit FNV-1a hash: the bench sums what each client heard as a count and an XOR of these. */
export function hash32(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux this runs on). */
const TICKS = 100

/** CPU seconds (user + system) a process has used so far; 0 when it is gone or /proc is not there. */
export async function cpuSeconds(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces and parentheses: fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / TICKS
  } catch {
    return 0
  }
}

/** The process ids whose parent is `pid` (a PostgreSQL server's backends and helpers). */
export async function childrenOf(pid: number): Promise<number[]> {
  const found: number[] = []
  for (const name of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = await readFile(`/proc/${name}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) found.push(Number(name))
    } catch {
      // Gone meanwhile.
    }
  }
  return found
}

/** CPU seconds of a process and all its children (for PostgreSQL: the postmaster and every backend, even ended ones it waited for). */
export async function treeCpuSeconds(pid: number): Promise<number> {
  // cutime/cstime (fields 16, 17) hold the children that ended; the living ones are read one by one.
  let total = await cpuSeconds(pid)
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    total += (Number(fields[13]) + Number(fields[14])) / TICKS
  } catch {
    return total
  }
  for (const child of await childrenOf(pid)) total += await cpuSeconds(child)
  return total
}

export interface ProcessSample {
  /** Resident memory, MiB. */
  rssMiB: number
  /** Open file descriptors (sockets, files, pipes). */
  fds: number
}

/** Resident memory and open file descriptors of a process now; null when /proc cannot tell. */
export async function sampleProcess(pid: number): Promise<ProcessSample | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8')
    const rss = /^VmRSS:\s+(\d+) kB/m.exec(status)
    const fds = (await readdir(`/proc/${pid}/fd`)).length
    return {rssMiB: Number(rss?.[1] ?? 0) / 1024, fds}
  } catch {
    return null
  }
}
