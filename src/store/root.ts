/** Finding the project root: the nearest ancestor holding `.memory/`, the way git finds `.git` (CONTRACT §1). */
import {statSync} from 'node:fs'
import {basename, dirname, join, resolve} from 'node:path'

import {NotATreeError} from '../errors.js'

export const MEMORY_DIR = '.memory'
export const NEXUS_DIR = '.nexus'

export function memoryDir(root: string): string {
  return join(root, MEMORY_DIR)
}

export function nexusDir(root: string): string {
  return join(root, NEXUS_DIR)
}

/**
 * `.memory/`'s device and inode (through a symlink, its target's), undefined when it is not a folder: a watch of the
 * tree compares it with the one it started on, since a `.memory/` put in its place (moved away and restored, a
 * checkout, a symlink pointed elsewhere) is not the folder its watches follow.
 */
export function memoryIdentity(root: string): string | undefined {
  const info = statSync(memoryDir(root), {throwIfNoEntry: false, bigint: true})
  return info?.isDirectory() ? `${info.dev}:${info.ino}` : undefined
}

/** `.nexus/config.json` (read and checked by sync-state.ts; named here for what must not load its schemas). */
export function configPath(root: string): string {
  return join(nexusDir(root), 'config.json')
}

/** True when `dir/.memory` exists and is a directory (a symlink to a directory counts). */
export function holdsTree(dir: string): boolean {
  try {
    return statSync(memoryDir(dir)).isDirectory()
  } catch {
    return false
  }
}

/**
 * The nearest directory at or above `start` that holds `.memory/`. With `override` (`--dir`), that directory
 * itself must hold `.memory/` — no walking up, so `--dir` never silently lands in a parent project — or be the
 * tree's own `.memory/` or `.nexus/`, which names it as well. Throws NotATreeError ("run `jarvis init`") otherwise.
 */
export function findRoot(start: string, override?: string): string {
  if (override !== undefined && override !== '') {
    const dir = resolve(start, override)
    if (holdsTree(dir)) return dir
    if ((basename(dir) === '.memory' || basename(dir) === '.nexus') && holdsTree(dirname(dir))) return dirname(dir)
    throw new NotATreeError(dir)
  }
  const from = resolve(start)
  let dir = from
  for (;;) {
    if (holdsTree(dir)) return dir
    const parent = dirname(dir)
    if (parent === dir) throw new NotATreeError(from)
    dir = parent
  }
}
