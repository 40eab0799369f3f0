/**
 * The prompt hook checks the tree's config at every prompt, so that a broken `.nexus/config.json` is reported as
 * every hook reports it; parsing it means loading zod and building every schema (~20–30 ms of each prompt). The
 * config changes rarely: once it was found good, its stat is noted in `.nexus/hook-config-checked.json`, and a
 * prompt that finds the same size, mtime and inode (an mtime older than that check by the racy window, the rule
 * of the store's stat hints) knows the config is the one found good. Anything else is checked again.
 */
import {lstatSync, readFileSync} from 'node:fs'

import {readNexusFile, writeNexusFile} from '../store/nexus-files.js'
import {configPath} from '../store/root.js'
import {RACY_WINDOW_MS} from '../store/tree.js'

const STAMP_FILE = 'hook-config-checked.json'

interface ConfigStamp {
  size: number
  mtimeMs: number
  ino: number
  checkedAtMs: number
}

function isStamp(value: unknown): value is ConfigStamp {
  const stamp = value as Partial<ConfigStamp> | null
  return typeof stamp === 'object' && stamp !== null && [stamp.size, stamp.mtimeMs, stamp.ino, stamp.checkedAtMs].every((n) => typeof n === 'number' && Number.isFinite(n))
}

/**
 * Checks the config (`check` parses it and throws when it is broken) unless it is the one a previous prompt found
 * good; notes a config found good. A stamp that cannot be read or written only means checking again next time.
 */
export async function checkConfigOnce(root: string, check: () => Promise<unknown>): Promise<void> {
  const checkedAtMs = Date.now()
  const info = lstatSync(configPath(root), {throwIfNoEntry: false})
  if (info === undefined) return check() as Promise<void> // no config: the defaults, checked as always
  try {
    const stamp: unknown = JSON.parse((await readNexusFile(root, STAMP_FILE)) ?? 'null')
    if (isStamp(stamp) && stamp.size === info.size && stamp.mtimeMs === info.mtimeMs && stamp.ino === info.ino && info.mtimeMs < stamp.checkedAtMs - RACY_WINDOW_MS) return
  } catch {
    // unreadable: check
  }
  await check()
  const stamp: ConfigStamp = {size: info.size, mtimeMs: info.mtimeMs, ino: info.ino, checkedAtMs}
  await writeNexusFile(root, STAMP_FILE, `${JSON.stringify(stamp)}\n`).catch(() => {})
}

/**
 * The tree's project (`project` of `.nexus/config.json`), read without zod: the prompt hook asks after checkConfigOnce
 * found the config good. Undefined when there is none, or the file cannot be read.
 */
export function treeProject(root: string): string | undefined {
  try {
    const project = (JSON.parse(readFileSync(configPath(root), 'utf8')) as {project?: unknown} | null)?.project
    return typeof project === 'string' ? project : undefined
  } catch {
    return undefined
  }
}
