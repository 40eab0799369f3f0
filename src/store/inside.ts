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

/** realpath of `p`, or of its deepest existing ancestor with the missing rest appended. */
export async function realTreeRoot(p: string): Promise<string> {
  const missing: string[] = []
  let current = p
  for (;;) {
    try {
      const real = await realpath(current)
      return missing.length === 0 ? real : join(real, ...missing.reverse())
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
 * (`treeRoot` itself may be a symlink — a `.memory` kept elsewhere is fine).
 */
export async function resolveInside(treeRoot: string, rel: string): Promise<string> {
  const clean = checkRelativePath(rel)
  const root = await realTreeRoot(treeRoot)
  const segments = clean.split('/')
  let current = root
  for (const segment of segments) {
    current = join(current, segment)
    let info
    try {
      info = await lstat(current)
    } catch (error) {
      if (isCode(error, 'ENOENT', 'ENOTDIR')) break
      throw error
    }
    if (!info.isSymbolicLink()) continue
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
