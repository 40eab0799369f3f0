/** Path rules of the memory-file tools: the store's path guard, plus "a Markdown file" and prefixes. PURE. */
import {BadInputError, JarvisError, ExitCode} from '../errors.js'
import {checkRelativePath} from '../store/paths.js'

/**
 * A memory-file path: relative to `.memory/`, through the store's guard (PathRefusedError), ending in `.md`. A
 * leading `./`, as a shell's completion writes it, means the same path.
 */
export function checkMemoryPath(path: string): string {
  const checked = checkRelativePath(path.replace(/^(?:\.\/)+(?=.)/, ''))
  if (!checked.endsWith('.md')) throw new BadInputError(`path refused: ${JSON.stringify(path)}: memory files are Markdown and end in .md`, {path})
  return checked
}

/** A listing prefix (`episodes/`, `projects/my-app`, or empty for all); the same guard, a trailing `/` allowed. */
export function checkPrefix(prefix: string | undefined): string {
  if (prefix === undefined || prefix === '' || prefix === '.' || prefix === './') return ''
  const stripped = prefix.replace(/\/+$/, '')
  checkRelativePath(stripped)
  return prefix
}

export function matchesPrefix(path: string, prefix: string): boolean {
  return prefix === '' || path.startsWith(prefix)
}

/** Files `memory ls` lists when no limit is given. */
export const DEFAULT_LIST_LIMIT = 100

/** A `--limit` of a listing: a positive integer, `fallback` when none is given. */
export function checkLimit(limit: number | undefined, fallback: number): number {
  if (limit === undefined) return fallback
  if (!Number.isInteger(limit) || limit < 1) throw new BadInputError(`--limit must be a positive integer (got ${limit})`, {limit})
  return limit
}

/** A memory file that does not exist (exit 2, code NOT_FOUND). */
export class MemoryFileNotFoundError extends JarvisError {
  constructor(path: string) {
    super(`no memory file .memory/${path}`, {code: 'NOT_FOUND', exit: ExitCode.badInput, data: {path}})
  }
}

/** `my-app` style slugs: lowercase letters, digits, `-`, `_`, `.`; no `/`. */
export function checkSlug(slug: string, what = 'project slug'): string {
  if (!/^[a-z0-9][a-z0-9._-]{0,99}$/.test(slug) || slug.includes('..')) {
    throw new BadInputError(`bad ${what} ${JSON.stringify(slug)}: use lowercase letters, digits, -, _ and . (e.g. my-app)`, {slug})
  }
  return slug
}

/**
 * A file-name slug from a title: its lowercase words (letters and digits of any script, Latin ones without their
 * accents) joined by `-`, at most 60 characters; `episode` when none. A title in Japanese keeps its words: without
 * them, every such episode of a day was `episode.md`, `episode-2.md`…
 */
export function slugify(title: string): string {
  const words = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .normalize('NFC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '')
  // Cut by characters, not UTF-16 units: half of a surrogate pair is no file name.
  const slug = Array.from(words).slice(0, 60).join('').replace(/-+$/, '')
  return slug || 'episode'
}
