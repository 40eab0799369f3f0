/**
 * One file's new text after install or uninstall, from its current text and the changes jarvis makes there.
 * A malformed file stops everything with exit 2 before anything is written (the caller plans every file first).
 * PURE: text in, text out.
 */
import {putBlock, removeBlock} from '../merge/marked-block.js'
import {EMPTY_JSON, parseSettings, putInArray, removeFromArray, removeValue, setValue, valueAt} from './json-edit.js'
import {putServerTable, removeServerTable, serverTable} from './toml-edit.js'
import {type Change, hooksOfGroup, isJarvisHook, SERVER_NAME} from './wiring.js'

export type FileFormat = 'json' | 'toml' | 'markdown'

export function formatOf(file: string): FileFormat {
  if (file.endsWith('.toml')) return 'toml'
  if (file.endsWith('.md')) return 'markdown'
  return 'json'
}

const isServerName = (item: unknown): boolean => item === SERVER_NAME

/** The text with every change made; `null` (no file) stays `null` when nothing needs writing. */
export function installInto(file: string, text: string | null, changes: Change[]): string | null {
  const format = formatOf(file)
  const start = text ?? (format === 'json' ? EMPTY_JSON : '')
  if (format === 'json') parseSettings(start, file)
  let result = start
  for (const change of changes) {
    switch (change.kind) {
      case 'mcp':
        result = format === 'toml' ? putServerTable(result, file, change.path[0], serverTable(change.path[0], change.server)) : setValue(result, change.path, {command: change.server.command, args: change.server.args})
        break
      case 'hook':
        result = putHook(result, change.path, change.hook)
        break
      case 'approval':
        result = putInArray(result, change.path, SERVER_NAME, isServerName)
        break
      case 'instructions':
        result = putBlock(result, file, change.body)
        break
    }
  }
  return text === null && result === start ? null : result
}

/** The text with what jarvis wrote taken out (also what an older jarvis wrote: hooks are found by their command). */
export function removeFrom(file: string, text: string | null, changes: Change[]): string | null {
  if (text === null) return null
  const format = formatOf(file)
  if (format === 'json') parseSettings(text, file)
  let result = text
  for (const change of changes) {
    switch (change.kind) {
      case 'mcp':
        if (format !== 'toml' && boundElsewhere(valueAt(result, change.path), change.server.args)) break
        result = format === 'toml' ? removeServerTable(result, file, change.path[0]) : removeValue(result, change.path)
        break
      case 'hook':
        result = removeHooks(result, change.path)
        break
      case 'approval':
        result = removeFromArray(result, change.path, isServerName, change.path.length - 1)
        break
      case 'instructions':
        result = removeBlock(result, file)
        break
    }
  }
  return result
}

/**
 * True when a registered server is bound (`--dir`) to another tree than the one uninstalling: OpenClaw has one
 * configuration for every project, so after an install in a second tree its server is that tree's, not this one's.
 */
function boundElsewhere(registered: unknown, args: readonly string[]): boolean {
  const dirOf = (list: readonly unknown[]) => {
    const at = list.indexOf('--dir')
    return at === -1 ? undefined : list[at + 1]
  }
  const ours = dirOf(args)
  const theirs = registered && typeof registered === 'object' && Array.isArray((registered as {args?: unknown}).args) ? dirOf((registered as {args: unknown[]}).args) : undefined
  return ours !== undefined && theirs !== undefined && theirs !== ours
}

/**
 * Puts jarvis's hook in the hook groups at `path`. Where a group already holds jarvis's entry (the user may have
 * added their own hooks to that group, or a matcher), only that entry is rewritten, and only when it differs (an
 * upgrade); else jarvis's hook goes at the end, in a group of its own.
 */
function putHook(text: string, path: string[], hook: unknown): string {
  const groups = valueAt(text, path)
  const at = Array.isArray(groups) ? groups.findIndex((group) => hooksOfGroup(group).some(isJarvisHook)) : -1
  if (at === -1) return putInArray(text, path, {hooks: [hook]}, () => false)
  return setValue(text, [...path, at, 'hooks', hooksOfGroup((groups as unknown[])[at]).findIndex(isJarvisHook)], hook)
}

/**
 * Takes jarvis's hook entries out of the hook groups at `path`: a group left with none of its hooks goes (and the
 * lists that leaves empty), a group that still holds the user's hooks stays with them and its matcher.
 */
function removeHooks(text: string, path: string[]): string {
  const groups = valueAt(text, path)
  if (!Array.isArray(groups)) return text
  let result = text
  // Last first: a removal leaves the indices before it as they were.
  for (let at = groups.length - 1; at >= 0; at--) {
    const hooks = hooksOfGroup(groups[at])
    const ours = hooks.flatMap((hook, index) => (isJarvisHook(hook) ? [index] : [])).reverse()
    if (ours.length === 0) continue
    if (ours.length === hooks.length) result = removeValue(result, [...path, at])
    else for (const index of ours) result = removeValue(result, [...path, at, 'hooks', index])
  }
  return result
}

/** A file left with nothing of the user's: `{}` or blank. */
export function isEmptyFile(file: string, text: string): boolean {
  if (text.trim() === '') return true
  return formatOf(file) === 'json' && Object.keys(parseSettings(text, file)).length === 0 && text.trim().replace(/\s+/g, '') === '{}'
}
