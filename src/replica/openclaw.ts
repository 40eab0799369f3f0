/**
 * OpenClaw's memory layout (docs/replicas.md). In its workspace OpenClaw keeps `MEMORY.md` (curated, long-term)
 * and `memory/YYYY-MM-DD.md` (the daily log; its session-memory hook adds `memory/YYYY-MM-DD-<slug>.md`). They
 * map, by the path under the replica's folder, to:
 *
 *   MEMORY.md (or memory.md)     ↔ .memory/<folder>/MEMORY.md
 *   memory/<date>[-<slug>].md    ↔ .memory/<folder>/daily/<date>[-<slug>].md
 *
 * Anything else in the workspace (AGENTS.md, SOUL.md, memory/audit/, …) is OpenClaw's own and never touched.
 */
import {lstat, readdir} from 'node:fs/promises'
import {homedir} from 'node:os'
import {join, resolve} from 'node:path'

import type {ReplicaLayout} from './run.js'

export const OPENCLAW_DEFAULT_WORKSPACE = '~/.openclaw/workspace'

const LONG_TERM = 'MEMORY.md'
/** Older OpenClaw templates name the long-term file in lower case; used only when `MEMORY.md` is absent. */
const LONG_TERM_LOWER = 'memory.md'
const DAILY_DIR = 'memory'
const DATED = /^\d{4}-\d{2}-\d{2}(?:-[A-Za-z0-9][A-Za-z0-9._-]*)?\.md$/

/** `~` and `~/…` under `home`; anything else is already absolute (the config schema refuses a relative path). */
export function expandHome(path: string, home: string = homedir()): string {
  if (path === '~') return home
  if (path.startsWith('~/')) return join(home, path.slice(2))
  return resolve(path)
}

/** The key (path under the folder) of a workspace file, or null when OpenClaw's file is not replicated. */
export function keyOfWorkspacePath(workspacePath: string): string | null {
  if (workspacePath === LONG_TERM || workspacePath === LONG_TERM_LOWER) return LONG_TERM
  const name = workspacePath.startsWith(`${DAILY_DIR}/`) ? workspacePath.slice(DAILY_DIR.length + 1) : null
  return name !== null && DATED.test(name) ? `daily/${name}` : null
}

/** The workspace path of a key, or null for a file under the folder that does not come from OpenClaw. */
export function workspacePathOfKey(key: string, longTermName: string = LONG_TERM): string | null {
  if (key === LONG_TERM) return longTermName
  const name = key.startsWith('daily/') ? key.slice('daily/'.length) : null
  return name !== null && DATED.test(name) ? `${DAILY_DIR}/${name}` : null
}

async function isRegularFile(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isFile() // a symlink is never followed: writing over it would replace the link
  } catch {
    return false
  }
}

async function namesIn(dir: string): Promise<string[]> {
  try {
    return await readdir(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return []
    throw error
  }
}

/** The layout of one OpenClaw workspace at `dir` (absolute). */
export function openclawLayout(dir: string): ReplicaLayout {
  let longTermName = LONG_TERM
  return {
    kind: 'openclaw',
    dir,
    async listWorkspace() {
      const files: string[] = []
      const top = await namesIn(dir)
      // On a case-insensitive disk both names are one file; prefer the documented one.
      longTermName = top.includes(LONG_TERM) || !top.includes(LONG_TERM_LOWER) ? LONG_TERM : LONG_TERM_LOWER
      if (await isRegularFile(join(dir, longTermName))) files.push(longTermName)
      for (const name of (await namesIn(join(dir, DAILY_DIR))).sort()) {
        if (DATED.test(name) && (await isRegularFile(join(dir, DAILY_DIR, name)))) files.push(`${DAILY_DIR}/${name}`)
      }
      return files
    },
    keyOf: keyOfWorkspacePath,
    workspacePathOf: (key) => workspacePathOfKey(key, longTermName),
  }
}
