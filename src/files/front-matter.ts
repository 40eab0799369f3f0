/**
 * Memory files: Markdown with optional YAML front matter (`title`, `tags`, free metadata), seed 004 §5.
 * PURE: parsing and rendering only; the tools in tools.ts read and write through the store.
 */
import {Document, isMap, isNode, isSeq, parseDocument, type YAMLMap} from 'yaml'

import {isIncompleteInstall, SchemaError} from '../errors.js'
import type {ListingFields} from '../store/listing-cache.js'

export type {ListingFields} from '../store/listing-cache.js'

export interface FrontMatter {
  title?: string
  tags?: string[]
  [key: string]: unknown
}

export interface MemoryFile {
  /** Relative to `.memory/`. */
  path: string
  frontMatter: FrontMatter
  /** The Markdown after the front matter. */
  body: string
  /** The whole file. */
  text: string
}

const OPEN = /^---[ \t]*\r?\n/
const CLOSE = /^(?:---|\.\.\.)[ \t]*$/

/** `.memory/<path>` as errors name it. */
export function memoryLabel(path: string): string {
  return `.memory/${path}`
}

/**
 * Splits and checks the front matter. A file without a leading `---` line has none. Malformed YAML, a front matter
 * that is not a mapping, a never-closed block, a non-string `title` or a `tags` that is not a list of strings →
 * SchemaError naming `.memory/<path>` and the line (1-based, in the whole file).
 */
export function parseMemoryFile(path: string, text: string, label = memoryLabel(path)): MemoryFile {
  const normalised = text.startsWith('\uFEFF') ? text.slice(1) : text
  if (!OPEN.test(normalised)) return {path, frontMatter: {}, body: normalised, text}
  const lines = normalised.split('\n')
  const close = closingLine(lines)
  if (close === -1) throw new SchemaError(label, ['line 1: front matter opened with --- is never closed (add a --- line after it)'])
  const yamlText = lines.slice(1, close).join('\n')
  const body = lines.slice(close + 1).join('\n')
  const doc = parseDocument(yamlText, {prettyErrors: true, uniqueKeys: true})
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((error) => {
      const line = (error.linePos?.[0]?.line ?? 1) + 1 // + the opening --- line
      const message = error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')
      return `line ${line}: front matter: ${message}`
    })
    // The YAML parser can report one fault twice, at the same place.
    throw new SchemaError(label, [...new Set(problems)])
  }
  if (doc.contents !== null && !isMap(doc.contents)) throw new SchemaError(label, ['line 2: front matter must be a mapping of keys to values (title: …, tags: […])'])
  const value = (doc.toJS() ?? {}) as Record<string, unknown>
  const lineOf = (key: string): number => {
    const index = lines.slice(1, close).findIndex((l) => l.startsWith(`${key}:`))
    return index === -1 ? 2 : index + 2
  }
  const problems: string[] = []
  if (value.title !== undefined && value.title !== null && typeof value.title !== 'string') problems.push(`line ${lineOf('title')}: front matter: title must be a string`)
  if (value.tags !== undefined && value.tags !== null) {
    if (typeof value.tags === 'string') value.tags = [value.tags]
    else if (!Array.isArray(value.tags) || value.tags.some((tag) => typeof tag !== 'string')) problems.push(`line ${lineOf('tags')}: front matter: tags must be a list of strings`)
  }
  if (problems.length > 0) throw new SchemaError(label, problems)
  const frontMatter: FrontMatter = {}
  for (const [key, entry] of Object.entries(value)) if (entry !== null && entry !== undefined) frontMatter[key] = entry
  return {path, frontMatter, body, text}
}

/** The index of the line that closes a front matter opened on the first of `lines`; -1 when none does. */
function closingLine(lines: readonly string[]): number {
  for (let i = 1; i < lines.length; i++) if (CLOSE.test(lines[i].replace(/\r$/, ''))) return i
  return -1
}

/**
 * `text` (which parseMemoryFile read as `body` after its front matter) with `fields` set in its front matter and the
 * rest of it as written: its comments, its keys' order, their quoting; a field new to it goes last. A file without
 * front matter gets one as renderMemoryFile writes it.
 */
export function withFrontMatterFields(text: string, body: string, fields: FrontMatter): string {
  const normalised = text.startsWith('\uFEFF') ? text.slice(1) : text
  const lines = normalised.split('\n')
  const close = OPEN.test(normalised) ? closingLine(lines) : -1
  if (close === -1) return renderMemoryFile(fields, body)
  const doc: Document = parseDocument(lines.slice(1, close).join('\n'), {uniqueKeys: true})
  if (!isMap(doc.contents)) doc.contents = doc.createNode({})
  const map = doc.contents as YAMLMap
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined || value === null) continue
    const node = doc.createNode(value)
    if (key === 'tags' && isSeq(node)) node.flow = true
    // A comment on the value it replaces stays with the new one.
    const old = map.get(key, true)
    if (isNode(old)) Object.assign(node, {comment: old.comment, commentBefore: old.commentBefore})
    map.set(key, node)
  }
  return `---\n${doc.toString({lineWidth: 0, flowCollectionPadding: false})}---\n${body}`
}

/** Front matter (title, tags, then the rest in their order; empty values dropped) and body; no front matter when empty. */
export function renderMemoryFile(frontMatter: FrontMatter, body: string): string {
  const ordered: Record<string, unknown> = {}
  const put = (key: string, value: unknown) => {
    if (value === undefined || value === null) return
    if (Array.isArray(value) && value.length === 0 && key === 'tags') return
    ordered[key] = value
  }
  put('title', frontMatter.title)
  put('tags', frontMatter.tags)
  for (const [key, value] of Object.entries(frontMatter)) if (key !== 'title' && key !== 'tags') put(key, value)
  if (Object.keys(ordered).length === 0) return body
  const doc = new Document(ordered)
  const tags = doc.get('tags', true)
  if (isSeq(tags)) tags.flow = true // tags: [a, b], as front matter is usually written
  const yaml = doc.toString({lineWidth: 0, flowCollectionPadding: false})
  return `---\n${yaml}---\n${body}`
}

/** The tags of a parsed file, always a list. */
export function tagsOf(frontMatter: FrontMatter): string[] {
  return Array.isArray(frontMatter.tags) ? frontMatter.tags.filter((tag): tag is string => typeof tag === 'string') : []
}

/**
 * What `memory ls` shows of a file: its front matter's own title and tags as written (no heading), or, when the front
 * matter does not parse, why. Its parsed form too, for a caller that needs more of it (the search's documents).
 */
export function listingOf(path: string, text: string): {file?: MemoryFile; listing: ListingFields} {
  try {
    const file = parseMemoryFile(path, text)
    const {title} = file.frontMatter
    return {file, listing: {...(typeof title === 'string' ? {title} : {}), tags: tagsOf(file.frontMatter)}}
  } catch (error) {
    // The file's problem, shown beside it (and kept with it by the listing and the index): not one of this install.
    if (isIncompleteInstall(error)) throw error
    return {listing: {tags: [], problem: (error as Error).message}}
  }
}
