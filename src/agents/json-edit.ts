/**
 * Edits to an agent's JSON settings that leave every byte jarvis did not write as it was: comments, key order,
 * the user's compact or spread-out style, indentation and line endings. jsonc-parser finds the nodes; the edits
 * are made here, because its own formatter re-indents the whole line around an insertion (a user's one-line
 * entry would come out reformatted) and its array removal misses the commas of a one-line array.
 * PURE: text in, text out.
 */
import {findNodeAtLocation, getNodeValue, type JSONPath, type Node, parseTree, type ParseError, printParseErrorCode} from 'jsonc-parser'

import {BadInputError} from '../errors.js'

/** What a new file starts from. */
export const EMPTY_JSON = '{}\n'

/** The parsed document; a malformed file is exit 2 naming the file and line, and nothing is written. */
export function parseSettings(text: string, file: string): Record<string, unknown> {
  const errors: ParseError[] = []
  const root = parseTree(text, errors, {allowTrailingComma: true, disallowComments: false})
  if (errors.length > 0) {
    const {error, offset} = errors[0]
    const line = text.slice(0, offset).split('\n').length
    const what = printParseErrorCode(error).replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()
    throw new BadInputError(`${file} line ${line}: not valid JSON (${what}); fix the file (or move it away) and run again, nothing was changed`, {file, line})
  }
  const value: unknown = root ? getNodeValue(root) : undefined
  if (value === undefined && text.trim() === '') return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BadInputError(`${file}: expected a JSON object at the top; fix the file (or move it away) and run again, nothing was changed`, {file})
  }
  return value as Record<string, unknown>
}

const treeOf = (text: string): Node | undefined => parseTree(text, [], {allowTrailingComma: true})

/** The value at a path, or undefined. */
export function valueAt(text: string, path: JSONPath): unknown {
  const root = treeOf(text)
  const node = root && findNodeAtLocation(root, path)
  return node ? getNodeValue(node) : undefined
}

export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** The file's own indentation unit and line ending. */
function styleOf(text: string): {unit: string; eol: string} {
  const eol = text.includes('\r\n') ? '\r\n' : '\n'
  const indent = /^([ \t]+)["{[\]}]/m.exec(text)?.[1]
  return {unit: indent?.startsWith('\t') ? '\t' : indent ? ' '.repeat(Math.min(indent.length, 8)) : '  ', eol}
}

/** The whitespace that starts the line holding `offset`. */
function lineIndent(text: string, offset: number): string {
  const start = text.lastIndexOf('\n', offset - 1) + 1
  return /^[ \t]*/.exec(text.slice(start))![0]
}

/** `value` spread over lines in the file's style, its inner lines indented from `indent`. */
function spread(text: string, value: unknown, indent: string): string {
  const {unit, eol} = styleOf(text)
  return JSON.stringify(value, null, unit).split('\n').join(eol + indent)
}

function splice(text: string, offset: number, length: number, content: string): string {
  return text.slice(0, offset) + content + text.slice(offset + length)
}

/** Adds a member (`"key": value` in an object, `value` in an array) after the container's last one, in its style. */
function insertMember(text: string, container: Node, key: string | undefined, value: unknown): string {
  const label = key === undefined ? '' : `${JSON.stringify(key)}: `
  const children = container.children ?? []
  const end = container.offset + container.length
  if (children.length > 0) {
    const last = children.at(-1)!
    const after = last.offset + last.length
    if (!text.slice(container.offset, end).includes('\n')) return splice(text, after, 0, `, ${label}${JSON.stringify(value)}`)
    const indent = lineIndent(text, last.offset)
    return splice(text, after, 0, `,${styleOf(text).eol}${indent}${label}${spread(text, value, indent)}`)
  }
  const {unit, eol} = styleOf(text)
  const base = lineIndent(text, container.offset)
  const inner = text.slice(container.offset + 1, end - 1)
  const member = `${eol}${base}${unit}${label}${spread(text, value, base + unit)}`
  return inner.trim() === '' ? splice(text, container.offset + 1, inner.length, `${member}${eol}${base}`) : splice(text, container.offset + 1, 0, `${member},`)
}

/** Sets `path` to `value`, creating the objects on the way; unchanged when it already holds exactly that. */
export function setValue(text: string, path: JSONPath, value: unknown): string {
  const root = treeOf(text)!
  const node = findNodeAtLocation(root, path)
  if (node) return sameJson(getNodeValue(node), value) ? text : splice(text, node.offset, node.length, spread(text, value, lineIndent(text, node.offset)))
  let depth = path.length - 1
  while (depth > 0 && !findNodeAtLocation(root, path.slice(0, depth))) depth--
  const parent = findNodeAtLocation(root, path.slice(0, depth))!
  const nested = path.slice(depth + 1).reduceRight<unknown>((inner, key) => ({[key]: inner}), value)
  if (parent.type !== 'object') throw new BadInputError(`expected an object at ${path.slice(0, depth).join('.') || 'the top'}, found ${parent.type}; fix the file and run again, nothing was changed`)
  return insertMember(text, parent, String(path[depth]), nested)
}

/** Removes the node at `path` with its separator; unchanged when absent. */
function removeNode(text: string, path: JSONPath): string {
  const root = treeOf(text)
  const node = root && findNodeAtLocation(root, path)
  if (!node) return text
  const member = node.parent?.type === 'property' ? node.parent : node
  const container = member.parent!
  const siblings = container.children!
  const index = siblings.indexOf(member)
  if (siblings.length === 1) return splice(text, container.offset + 1, container.length - 2, '')
  if (index > 0) {
    const previous = siblings[index - 1]
    return splice(text, previous.offset + previous.length, member.offset + member.length - previous.offset - previous.length, '')
  }
  return splice(text, member.offset, siblings[1].offset - member.offset, '')
}

/** Removes `path` and the containers it leaves empty (below the first `keep` levels); unchanged when absent. */
export function removeValue(text: string, path: JSONPath, keep = 0): string {
  if (valueAt(text, path) === undefined) return text
  return pruneEmpty(removeNode(text, path), path.slice(0, -1), keep)
}

/**
 * Puts `value` in the array at `path`: where an item `ours` recognises is, it is replaced (an upgrade), else
 * appended; unchanged when the same item is already there.
 */
export function putInArray(text: string, path: JSONPath, value: unknown, ours: (item: unknown) => boolean): string {
  const root = treeOf(text)!
  const node = findNodeAtLocation(root, path)
  if (!node || node.type !== 'array') return node ? text : setValue(text, path, [value])
  const index = (getNodeValue(node) as unknown[]).findIndex((item) => ours(item))
  if (index === -1) return insertMember(text, node, undefined, value)
  return setValue(text, [...path, index], value)
}

/** Removes every item of the array at `path` that `ours` recognises, and the array and parents left empty. */
export function removeFromArray(text: string, path: JSONPath, ours: (item: unknown) => boolean, keep = 0): string {
  const current = valueAt(text, path)
  if (!Array.isArray(current)) return text
  let result = text
  for (let index = current.length - 1; index >= 0; index--) if (ours(current[index])) result = removeNode(result, [...path, index])
  return result === text ? text : pruneEmpty(result, path, keep)
}

/** Removes the containers along `path` that are now empty, deepest first, keeping the first `keep` levels. */
function pruneEmpty(text: string, path: JSONPath, keep: number): string {
  let result = text
  for (let depth = path.length; depth > keep; depth--) {
    const at = path.slice(0, depth)
    const value = valueAt(result, at)
    const empty = Array.isArray(value) ? value.length === 0 : typeof value === 'object' && value !== null && Object.keys(value).length === 0
    if (!empty) break
    result = removeNode(result, at)
  }
  return result
}
