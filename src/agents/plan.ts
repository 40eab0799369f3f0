/**
 * One file's new text after install or uninstall, from its current text and the changes jarvis makes there.
 * A malformed file stops everything with exit 2 before anything is written (the caller plans every file first).
 * PURE: text in, text out.
 */
import {putBlock, removeBlock} from '../merge/marked-block.js'
import {EMPTY_JSON, parseSettings, putInArray, removeFromArray, removeValue, setValue} from './json-edit.js'
import {putServerTable, removeServerTable, serverTable} from './toml-edit.js'
import {type Change, isJarvisHookGroup, SERVER_NAME} from './wiring.js'

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
        result = putInArray(result, change.path, change.entry, isJarvisHookGroup)
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
        result = format === 'toml' ? removeServerTable(result, file, change.path[0]) : removeValue(result, change.path)
        break
      case 'hook':
        result = removeFromArray(result, change.path, isJarvisHookGroup)
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

/** A file left with nothing of the user's: `{}` or blank. */
export function isEmptyFile(file: string, text: string): boolean {
  if (text.trim() === '') return true
  return formatOf(file) === 'json' && Object.keys(parseSettings(text, file)).length === 0 && text.trim().replace(/\s+/g, '') === '{}'
}
