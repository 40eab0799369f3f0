/**
 * Conflict backups (CONTRACT §4, "Backups are never overwritten"). The newest local copy that lost a conflict is
 * `<stem>.local.bak` beside the file (`PROJECT_MEMORY.md` → `PROJECT_MEMORY.local.bak`); an earlier, different
 * backup is first moved to the next number, `<stem>.local.<N>.bak` (N = highest existing + 1, so higher is newer).
 * Backups live only in `.memory/` on this machine; `scanMemory` skips them, so they are never synced.
 */
import {readdir, readFile} from 'node:fs/promises'
import {dirname} from 'node:path'

import createDebug from 'debug'

import {fsyncDir, linkNoClobber, writeFileAtomic} from './atomic.js'
import {resolveInside} from './inside.js'
import {BACKUP_NAME, checkRelativePath, isIgnoredMemoryPath} from './paths.js'
import {memoryDir} from './root.js'

const debug = createDebug('jarvis:store')

export type BackupResult = {path: string; rotated?: string; unchanged?: undefined} | {path: string; unchanged: true; rotated?: undefined}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** The stem of a file name: without its last extension (`a.b.md` → `a.b`); a dotfile or a name without one stays whole. */
function stemOf(name: string): string {
  const dot = name.lastIndexOf('.')
  return dot > 0 ? name.slice(0, dot) : name
}

/** Relative path of the newest backup of `rel`, or of its numbered backup N. */
export function backupPathFor(rel: string, n?: number): string {
  const clean = checkRelativePath(rel)
  const slash = clean.lastIndexOf('/')
  const dir = slash === -1 ? '' : clean.slice(0, slash + 1)
  const stem = stemOf(clean.slice(slash + 1))
  return `${dir}${stem}.local${n === undefined ? '' : `.${n}`}.bak`
}

/** Every backup of `rel` that exists, newest first: `.local.bak`, then `.local.N.bak` by N descending. */
export async function listBackups(root: string, rel: string): Promise<string[]> {
  const newest = backupPathFor(rel)
  const slash = newest.lastIndexOf('/')
  const dirRel = slash === -1 ? '' : newest.slice(0, slash + 1)
  const stem = stemOf(checkRelativePath(rel).slice(checkRelativePath(rel).lastIndexOf('/') + 1))
  const absNewest = await resolveInside(memoryDir(root), newest)
  let names: string[]
  try {
    names = await readdir(dirname(absNewest))
  } catch {
    return []
  }
  const numbered = new RegExp(`^${escapeRegExp(stem)}\\.local\\.(\\d+)\\.bak$`)
  const found: Array<{n: number; path: string}> = []
  for (const name of names) {
    if (name === `${stem}.local.bak`) found.push({n: Number.POSITIVE_INFINITY, path: dirRel + name})
    const match = numbered.exec(name)
    if (match) found.push({n: Number(match[1]), path: dirRel + name})
  }
  return found.sort((a, b) => b.n - a.n).map((entry) => entry.path)
}

/** Every conflict backup in `.memory/`, relative paths, sorted. */
export async function findBackups(root: string): Promise<string[]> {
  const base = memoryDir(root)
  let entries: string[]
  try {
    entries = await readdir(base, {recursive: true})
  } catch {
    return []
  }
  return entries
    .map((entry) => entry.split('\\').join('/'))
    .filter((rel) => BACKUP_NAME.test(rel.slice(rel.lastIndexOf('/') + 1)))
    .sort()
}

/** The memory files a backup can belong to: the files beside it with its stem (`plan.local.bak` → `plan.md`, `plan.json`). */
export async function filesOfBackup(root: string, backupRel: string): Promise<string[]> {
  const clean = checkRelativePath(backupRel)
  const slash = clean.lastIndexOf('/')
  const dirRel = slash === -1 ? '' : clean.slice(0, slash + 1)
  const stem = clean.slice(slash + 1).replace(BACKUP_NAME, '')
  let names: string[]
  try {
    names = await readdir(dirname(await resolveInside(memoryDir(root), clean)))
  } catch {
    return []
  }
  return names.filter((name) => stemOf(name) === stem && !isIgnoredMemoryPath(name)).map((name) => dirRel + name)
}

async function readIfExists(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

function isExists(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'EEXIST'
}

/**
 * Saves `content` as the newest backup of `rel` (a path relative to `.memory/`). Returns the backup's path
 * (relative to `.memory/`) and, when an earlier different backup had to make room, where it went; or
 * `{path, unchanged: true}` when the newest backup already holds exactly this content (nothing is written).
 * Never overwrites a backup with different content. Call it before touching the file itself.
 */
export async function saveBackup(root: string, rel: string, content: string | Uint8Array): Promise<BackupResult> {
  const base = memoryDir(root)
  const newestRel = backupPathFor(rel)
  const newestAbs = await resolveInside(base, newestRel)
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content)
  // Every step refuses to replace an existing name; if something appeared meanwhile, look again.
  for (let attempt = 0; ; attempt++) {
    const existing = await readIfExists(newestAbs)
    if (existing !== null && existing.equals(bytes)) {
      debug('backup %s already holds this content', newestRel)
      return {path: newestRel, unchanged: true}
    }
    let rotated: string | undefined
    if (existing !== null) {
      let next = 1
      for (const path of await listBackups(root, rel)) {
        const match = /\.local\.(\d+)\.bak$/.exec(path)
        if (match) next = Math.max(next, Number(match[1]) + 1)
      }
      for (;;) {
        const candidate = backupPathFor(rel, next)
        try {
          await linkNoClobber(newestAbs, await resolveInside(base, candidate))
          await fsyncDir(dirname(newestAbs))
          rotated = candidate
          break
        } catch (error) {
          if (!isExists(error)) throw error
          next++ // that number is taken: the next one, never an overwrite
        }
      }
      debug('backup %s moved to %s', newestRel, rotated)
    }
    try {
      await writeFileAtomic(newestAbs, bytes, {exclusive: true})
    } catch (error) {
      if (isExists(error) && attempt < 10) continue
      throw error
    }
    return rotated === undefined ? {path: newestRel} : {path: newestRel, rotated}
  }
}
