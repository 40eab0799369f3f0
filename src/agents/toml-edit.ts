/**
 * The `[mcp_servers.<name>]` table of Codex's config.toml, edited as text so that the rest of the file (comments,
 * order, the user's other servers) stays byte for byte; smol-toml only checks that the file parses before and
 * after. PURE: text in, text out.
 */
import {parse, TomlError} from 'smol-toml'

import {BadInputError} from '../errors.js'
import type {Invocation} from '../invocation.js'

/** The parsed document; a malformed file is exit 2 naming the file and line, and nothing is written. */
export function parseToml(text: string, file: string): Record<string, unknown> {
  try {
    return parse(text) as Record<string, unknown>
  } catch (error) {
    const line = error instanceof TomlError ? error.line : undefined
    const what = error instanceof Error ? error.message.split('\n')[0] : String(error)
    throw new BadInputError(`${file}${line ? ` line ${line}` : ''}: ${what}; fix the file (or move it away) and run again, nothing was changed`, {file, line})
  }
}

/** `"…"` as a TOML basic string (JSON's escapes are a subset TOML accepts). */
const tomlString = (value: string): string => JSON.stringify(value)

/** The table jarvis writes for a stdio server. */
export function serverTable(name: string, invocation: Invocation): string {
  return [`[mcp_servers.${name}]`, `command = ${tomlString(invocation.command)}`, `args = [${invocation.args.map(tomlString).join(', ')}]`, ''].join('\n')
}

/** Start and end offsets of `[mcp_servers.<name>]` and its sub-tables, with the blank line before it. */
function tableSpan(text: string, name: string): {start: number; end: number} | undefined {
  const header = new RegExp(String.raw`^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*(?:${name}|"${name}")[ \t]*\][ \t]*(?:#.*)?$`, 'm')
  const found = header.exec(text)
  if (!found) return undefined
  const sub = new RegExp(String.raw`^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*(?:${name}|"${name}")[ \t]*\.`)
  let end = text.length
  const next = /^[ \t]*\[/gm
  next.lastIndex = found.index + found[0].length
  for (let match = next.exec(text); match; match = next.exec(text)) {
    const line = text.slice(match.index, text.indexOf('\n', match.index) === -1 ? undefined : text.indexOf('\n', match.index))
    if (!sub.test(line)) {
      end = match.index
      break
    }
  }
  // The separating blank line before the table goes with it, so that removing it restores the file.
  let start = found.index
  if (start >= 2 && text.slice(start - 2, start) === '\n\n') start -= 1
  return {start, end}
}

/** Adds or brings up to date the server's table; the text unchanged when it already says exactly that. */
export function putServerTable(text: string, file: string, name: string, table: string): string {
  const parsed = parseToml(text, file)
  const span = tableSpan(text, name)
  if (!span) {
    const servers = parsed.mcp_servers as Record<string, unknown> | undefined
    if (servers && name in servers) {
      throw new BadInputError(`${file}: mcp_servers.${name} is written in a form jarvis cannot edit safely; remove it (or write it as a [mcp_servers.${name}] table) and run again`, {file})
    }
    const separator = text === '' ? '' : text.endsWith('\n') ? '\n' : '\n\n'
    return checked(`${text}${separator}${table}`, file)
  }
  const current = text.slice(span.start, span.end)
  const wanted = (current.startsWith('\n') ? '\n' : '') + table + (span.end < text.length ? '\n' : '')
  return current === wanted ? text : checked(text.slice(0, span.start) + wanted + text.slice(span.end), file)
}

/** Removes the server's table; unchanged when there is none. */
export function removeServerTable(text: string, file: string, name: string): string {
  parseToml(text, file)
  const span = tableSpan(text, name)
  if (!span) return text
  return checked(text.slice(0, span.start) + text.slice(span.end), file)
}

function checked(text: string, file: string): string {
  parseToml(text, file)
  return text
}
