/** The filesystem half of the path guard: symlinks must not lead out of the tree. */
import {lstat, realpath} from 'node:fs/promises'
import {basename, isAbsolute, join, relative, sep} from 'node:path'

import {PathRefusedError} from '../errors.js'
import {checkRelativePath} from './paths.js'

function isWithin(root: string, target: string): boolean {
  const rel = relative(root, target)
  return rel === '' || (!isAbsolute(rel) && rel !== '..' && !rel.startsWith('..' + sep))
}

function isCode(error: unknown, ...codes: string[]): boolean {
  return typeof error === 'object' && error !== null && codes.includes((error as NodeJS.ErrnoException).code ?? '')
}

/**
 * What the guard learnt during one run (see withPathGuardCache): the real path of each tree root, and the folders
 * met on the way to a file that were real folders, not symlinks. A sync of 10,000 files asked the same questions
 * once per file and per base (~16 readlink and ~10 stat calls a pulled file, 15–18 % of a pull or push).
 */
interface GuardCache {
  realRoots: Map<string, Promise<string>>
  folders: Set<string>
}

let cache: GuardCache | undefined
let cacheUsers = 0

/**
 * Runs `work` with the guard's answers kept for its duration (a sync, under the tree lock: no other jarvis process
 * moves folders meanwhile). Only folders are remembered, never the file itself, which is checked at every call; a
 * folder that another program turns into a symlink during the run is the same race as between a check and the
 * write it guards, which the guard never closed.
 */
export async function withPathGuardCache<T>(work: () => Promise<T>): Promise<T> {
  cache ??= {realRoots: new Map(), folders: new Set()}
  cacheUsers++
  try {
    return await work()
  } finally {
    if (--cacheUsers === 0) cache = undefined
  }
}

/** Folders removed by this process are forgotten: one made again later is checked again. */
export function forgetGuardedFolders(): void {
  cache?.folders.clear()
}

/** realpath of `p`, or of its deepest existing ancestor with the missing rest appended. */
export async function realTreeRoot(p: string): Promise<string> {
  const known = cache?.realRoots.get(p)
  if (known) return known
  const found = findRealTreeRoot(p)
  if (cache) {
    const realRoots = cache.realRoots
    realRoots.set(p, found)
    // A root that failed is asked again next time (and one that did not exist yet: see findRealTreeRoot).
    found.catch(() => realRoots.delete(p))
  }
  return found
}

async function findRealTreeRoot(p: string): Promise<string> {
  const missing: string[] = []
  let current = p
  for (;;) {
    try {
      const real = await realpath(current)
      if (missing.length === 0) return real
      cache?.realRoots.delete(p) // it may exist next time
      return join(real, ...missing.reverse())
    } catch (error) {
      if (!isCode(error, 'ENOENT', 'ENOTDIR')) throw error
      const parent = join(current, '..')
      if (parent === current) throw error
      missing.push(basename(current))
      current = parent
    }
  }
}

/**
 * `checkRelativePath(rel)` and then, on disk: every existing component of `treeRoot/rel` that is a symlink must
 * resolve inside `treeRoot` (a dangling symlink is refused: writing through it could create a file anywhere).
 * The final file need not exist. Returns the absolute path under the real path of `treeRoot`
 * (`treeRoot` itself may be a symlink — a `.memory` kept elsewhere is fine). `lastSeenAbsent`: the caller has just
 * seen that nothing is there (or never follows it: it replaces it by a rename, or opens it with O_NOFOLLOW), so
 * the final component is not looked at again; the folders on the way still are.
 */
export async function resolveInside(treeRoot: string, rel: string, options: {lastSeenAbsent?: boolean} = {}): Promise<string> {
  const clean = checkRelativePath(rel)
  const root = await realTreeRoot(treeRoot)
  const segments = clean.split('/')
  let current = root
  for (let i = 0; i < segments.length; i++) {
    current = join(current, segments[i])
    const last = i === segments.length - 1
    if (!last && cache?.folders.has(current)) continue
    if (last && options.lastSeenAbsent) break
    let info
    // Not synchronous: while the thread pool creates files in a folder, a lookup there waits for the folder's lock.
    try {
      info = await lstat(current)
    } catch (error) {
      if (isCode(error, 'ENOENT', 'ENOTDIR')) break
      throw error
    }
    if (!info.isSymbolicLink()) {
      if (!last && info.isDirectory()) cache?.folders.add(current)
      continue
    }
    let target: string
    try {
      target = await realpath(current)
    } catch (error) {
      if (isCode(error, 'ENOENT', 'ENOTDIR', 'ELOOP')) throw new PathRefusedError(clean, `${relative(root, current)} is a symlink to a missing target`)
      throw error
    }
    if (!isWithin(root, target)) throw new PathRefusedError(clean, `${relative(root, current)} is a symlink that leaves the tree`)
  }
  return join(root, ...segments)
}
