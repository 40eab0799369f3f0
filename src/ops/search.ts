import {BadInputError, UnreachableError} from '../errors.js'
import {findRoot} from '../store/index.js'
import {searchMemoryFiles, type SearchHit} from '../search/index.js'
import {eventQueryOf, listEvents, type ListOptions, type ListResult} from './events/list.js'

export interface MemorySearchOptions extends ListOptions {
  query: string
  /** Memory files only: every tag must be present. */
  tags?: string[]
  /** Memory files only: under this path of `.memory/`. */
  prefix?: string
  /** The memory files' part as a jarvis running in the tree answers it (cli/warm.ts); undefined: searched here. */
  files?: Promise<MemoryFileHits | undefined>
}

/** The memory files' part of a search. */
export interface MemoryFileHits {
  hits: SearchHit[]
  mode: 'hybrid' | 'keyword'
  note?: string
}

/** What of the memory files' search a `memory search` takes: its files' filters and its limit (default 10). */
export function fileSearchOf(options: MemorySearchOptions): {query: string; limit: number; tags?: string[]; prefix?: string; since?: string; until?: string} {
  return {query: options.query, limit: options.limit ?? 10, tags: options.tags, prefix: options.prefix, since: options.since, until: options.until}
}

export interface MemorySearchResult {
  query: string
  /** Long-term memory files of this tree, ranked (keyword, or hybrid with embeddings). */
  files: MemoryFileHits | null
  /** Events of the shared log, ranked by the server; null when no server is configured. */
  events: ListResult | null
  notes: string[]
}

/**
 * `jarvis memory search`: the tree's memory files and the shared event log, each ranked by its own
 * engine. A configured server that cannot be reached stops the command (exit 3) rather
 * than answering from the files alone as if that were everything.
 */
export async function searchMemory(options: MemorySearchOptions): Promise<MemorySearchResult> {
  const notes: string[] = []
  let root: string | undefined
  try {
    root = findRoot(process.cwd(), options.dir)
  } catch {
    notes.push('not in a jarvis tree: memory files not searched')
  }
  // The files (local) and the event log (one request) are searched at the same time.
  const [files, events] = await Promise.all([
    root === undefined ? null : filesPart(root, options),
    listEvents(options).catch((error: unknown): null => {
      // The log cannot be read: say so (exit 3), and where the files alone can still be asked.
      if (error instanceof UnreachableError) throw new UnreachableError(`${error.message}\nthe shared event log could not be searched, so no answer is given as if it were complete; the memory files of this tree alone: jarvis recall ${JSON.stringify(options.query)}`, error.data, error)
      // No server anywhere: the files are all there is to search, and the answer says so.
      if (!(error instanceof BadInputError) || !error.message.startsWith('no server to talk to')) throw error
      return null
    }),
  ])
  if (files?.note) notes.push(files.note)
  if (events === null) notes.push('no server configured: the shared event log was not searched')
  else if (events.filters.q !== options.query) notes.push(`the shared event log was searched for the first ${eventQueryOf(options.query).length} characters of the query, as much as a server answers`)
  return {query: options.query, files: files ? {hits: files.hits, mode: files.mode, note: files.note} : null, events, notes}
}

/** The memory files' part: the warm answer when one came, else searched in this process. */
async function filesPart(root: string, options: MemorySearchOptions): Promise<MemoryFileHits> {
  return (await options.files) ?? searchMemoryFiles(root, options.query, fileSearchOf(options))
}
