/**
 * `.nexus/hooks.log`: one line per hook that could not do its work (or left something out), for the person and
 * for `jarvis status`. A hook never fails its agent, so this file is where its failures go.
 *
 * Format, one entry per line, fields separated by single spaces, the reason last and free text on one line:
 *
 *     2026-09-01T12:00:00.000Z claude session-start the shared memory could not be read: …
 *
 * The file is cut to its newest {@link HOOK_LOG_KEEP} lines when it grows past {@link HOOK_LOG_MAX_BYTES}.
 */
import {stat} from 'node:fs/promises'
import {join} from 'node:path'

// The store's own modules, not its barrel: the hook at every prompt loads neither the tree lock nor the sync's state.
import {appendLineDurable} from '../store/atomic.js'
import {readNexusFile, writeNexusFile} from '../store/nexus-files.js'
import {nexusDir} from '../store/root.js'

export const HOOK_LOG_FILE = 'hooks.log'
export const HOOK_LOG_MAX_BYTES = 256 * 1024
export const HOOK_LOG_KEEP = 1000

export interface HookLogEntry {
  /** ISO time. */
  at: string
  /** `claude`, `gemini`, `codex`, `openclaw`, or `-` when the agent was not known. */
  agent: string
  /** `session-start`, `prompt`, `pre-compact`, `stop`, `session-end`, `sync` (the background sync), or `-`. */
  event: string
  reason: string
}

const word = (value: string) => (value.trim() === '' ? '-' : value.trim().replace(/\s+/g, '_'))

/** One log line (no newline). */
export function formatHookLogLine(entry: HookLogEntry): string {
  return `${entry.at} ${word(entry.agent)} ${word(entry.event)} ${entry.reason.replace(/\s+/g, ' ').trim()}`
}

const LINE = /^(\d{4}-\d{2}-\d{2}T\S+) (\S+) (\S+) (.*)$/

/** Parses the log's text; lines that are not entries (hand edits) are skipped. */
export function parseHookLog(text: string): HookLogEntry[] {
  return text.split('\n').flatMap((line) => {
    const match = LINE.exec(line.trimEnd())
    return match ? [{at: match[1], agent: match[2], event: match[3], reason: match[4]}] : []
  })
}

/** Appends an entry to `.nexus/hooks.log` (creating `.nexus/` if needed). */
export async function appendHookLog(root: string, entry: HookLogEntry): Promise<void> {
  const path = join(nexusDir(root), HOOK_LOG_FILE)
  await appendLineDurable(path, formatHookLogLine(entry))
  try {
    if ((await stat(path)).size > HOOK_LOG_MAX_BYTES) {
      const text = (await readNexusFile(root, HOOK_LOG_FILE)) ?? ''
      const lines = text.split('\n').filter(Boolean)
      await writeNexusFile(root, HOOK_LOG_FILE, lines.slice(-HOOK_LOG_KEEP).join('\n') + '\n')
    }
  } catch {
    // trimming is housekeeping: the entry is written
  }
}

/**
 * The hook failures recorded in this tree, oldest first (for `jarvis status`): all of them, or the newest
 * `limit`, or those at or after `since` (ISO time).
 */
export async function readHookFailures(root: string, options: {limit?: number; since?: string} = {}): Promise<HookLogEntry[]> {
  const text = await readNexusFile(root, HOOK_LOG_FILE)
  if (text === null) return []
  let entries = parseHookLog(text)
  if (options.since) entries = entries.filter((e) => e.at >= options.since!)
  if (options.limit !== undefined) entries = entries.slice(-options.limit)
  return entries
}
