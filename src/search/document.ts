/**
 * What the search knows about one memory file: title, tags, date and the text to index, from the front matter
 * as src/files parses it. Unlike the memory tools the search never throws on a malformed front matter: such a
 * file is still searchable, by its whole text (`jarvis memory read` is where the error is reported).
 */
import {type ListingFields, listingOf} from '../files/front-matter.js'
import {shorten} from '../schemas/shorten.js'

export type {ListingFields} from '../files/front-matter.js'

export interface SearchDocument {
  path: string
  title?: string
  tags: string[]
  /** YYYY-MM-DD: front matter `date`/`updated`/`created`, else a date in the path, else undefined. */
  date?: string
  body: string
  /** The front matter's `summary` or `description`, when there is one. */
  summary?: string
  /** What `jarvis memory ls` shows of the file: the front matter's own title and tags, or why it does not parse. */
  listing: ListingFields
  /** Where `body` starts in the text (it is always the text's tail): `text.slice(bodyStart)` is the body. */
  bodyStart: number
  /** The project the front matter names (`project: shop`): a session's episode, a project's summary, a note marked so. */
  project?: string
}

/** One line of at most this many characters says what a file is about (recall, an agent's prompt). */
export const SUMMARY_CHARS = 160

const PATH_DATE = /(\d{4}-\d{2}-\d{2})/

function dateOf(value: unknown): string | undefined {
  if (value instanceof Date && !Number.isNaN(value.getTime())) return value.toISOString().slice(0, 10)
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)) return value.slice(0, 10)
  return undefined
}

function splitFrontMatter(path: string, text: string): {data: Record<string, unknown>; body: string; listing: ListingFields} {
  const {file, listing} = listingOf(path, text)
  return file === undefined ? {data: {}, body: text, listing} : {data: {...file.frontMatter, tags: listing.tags}, body: file.body, listing}
}

export function toSearchDocument(path: string, text: string): SearchDocument {
  const {data, body, listing} = splitFrontMatter(path, text)
  const rawTags = data.tags
  const tags = Array.isArray(rawTags) ? rawTags.filter((t): t is string => typeof t === 'string') : typeof rawTags === 'string' ? rawTags.split(/[,\s]+/).filter(Boolean) : []
  const heading = /^#\s+(.+)$/m.exec(body)?.[1]?.trim()
  const title = typeof data.title === 'string' ? data.title : heading
  const summary = typeof data.summary === 'string' ? data.summary : typeof data.description === 'string' ? data.description : undefined
  const date = dateOf(data.date) ?? dateOf(data.updated) ?? dateOf(data.created) ?? PATH_DATE.exec(path)?.[1]
  const bodyStart = text.length - body.length
  return {path, title, tags: tags.map((t) => t.toLowerCase()), date, body, summary, listing, bodyStart, project: frontMatterProject(text.slice(0, bodyStart))}
}

/** A `project:` line of a front matter: a slug, maybe quoted (the slug rule of files/paths.ts checkSlug). */
const PROJECT_LINE = /^project:[ \t]*(["']?)([a-z0-9][a-z0-9-]*)\1[ \t]*(?:#.*)?$/m

/**
 * The project a file's front matter (`head`: the text before its body) names, or undefined. Read from the text by one
 * pattern, not by parsing the YAML again: the search keeps where a body starts, not the front matter's fields.
 */
export function frontMatterProject(head: string): string | undefined {
  return head === '' ? undefined : PROJECT_LINE.exec(head)?.[2]
}

/** One line that says what the file is about: front matter summary, else the title and the first prose line. */
export function summaryOf(doc: SearchDocument, max = SUMMARY_CHARS): string {
  const firstLine = doc.body
    .split(/\r?\n/)
    .map((line) => line.trim())
    // An episode's `Summary:` heading line alone says nothing: the summary is the lines under it. Nor does a marker
    // of jarvis's block in a person's file (<!-- jarvis:begin -->), or any other HTML comment.
    .find((line) => line && !line.startsWith('#') && !/^<!--.*-->$/.test(line) && !/^[-*]\s*$/.test(line) && !/^(date|tags|refs|topic):/i.test(line) && !/^summary:\s*$/i.test(line))
  const prose = firstLine?.replace(/^[-*]\s+/, '').replace(/^summary:\s*/i, '')
  const lead = doc.title && prose && !prose.toLowerCase().includes(doc.title.toLowerCase()) ? `${doc.title} — ${prose}` : prose || doc.title
  const text = (doc.summary || lead || '').replace(/\s+/g, ' ').replace(/^[-*]\s+/, '').replace(/^summary:\s*/i, '').trim()
  return shorten(text, max)
}
