/**
 * `.nexus/stat-cache.json`: the previous scan's `{size, mtimeMs, ino, checkedAtMs, hash}` per path, so the next
 * scan can skip re-hashing files that have not been touched. A hint only: a missing or unreadable cache is
 * treated as empty (every file is hashed), never as an error.
 */
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import createDebug from 'debug'

import {writeFileAtomic} from './atomic.js'
import {nexusDir} from './root.js'
import type {MemoryFileStat, StatCache} from './tree.js'

const debug = createDebug('jarvis:store')

export function statCachePath(root: string): string {
  return join(nexusDir(root), 'stat-cache.json')
}

function isEntry(value: unknown): value is MemoryFileStat {
  if (value === null || typeof value !== 'object') return false
  const v = value as Record<string, unknown>
  return typeof v.hash === 'string' && typeof v.size === 'number' && typeof v.mtimeMs === 'number'
}

export async function readStatCache(root: string): Promise<StatCache> {
  let text: string
  try {
    text = await readFile(statCachePath(root), 'utf8')
  } catch {
    return {}
  }
  try {
    const parsed = JSON.parse(text) as {version?: unknown; files?: unknown}
    const cache: StatCache = {}
    if (parsed && typeof parsed === 'object' && parsed.files && typeof parsed.files === 'object') {
      for (const [path, entry] of Object.entries(parsed.files as Record<string, unknown>)) if (isEntry(entry)) cache[path] = entry
    }
    return cache
  } catch (error) {
    debug('stat cache unreadable, hashing every file: %s', (error as Error).message)
    return {}
  }
}

export async function writeStatCache(root: string, entries: Map<string, MemoryFileStat> | StatCache): Promise<void> {
  const files = entries instanceof Map ? Object.fromEntries(entries) : entries
  // A cache: after a power cut it may be old or empty, and then every file is simply hashed again.
  await writeFileAtomic(statCachePath(root), JSON.stringify({version: 1, files}) + '\n', {durable: false})
}
