/**
 * The coding-memory set (test/fixtures/coding-memory): the memory of a fictional software team — decisions, runbooks,
 * gotchas, conventions, incidents, API quirks, config locations — as Markdown files under `notes/`, and questions in
 * `questions.json`, each phrased in other words than the note that answers it and naming its answering note(s) by path
 * relative to `notes/` (which is `.memory/` when the set is a tree). Read by the quality bench and its integrity test.
 */
import {readdirSync, readFileSync} from 'node:fs'
import {join, relative, sep} from 'node:path'
import {fileURLToPath} from 'node:url'

export const CODING_MEMORY_DIR = fileURLToPath(new URL('../fixtures/coding-memory', import.meta.url))

export interface CodingQuestion {
  question: string
  /** Paths relative to `notes/` of the notes that answer it. */
  answers: string[]
}

function walk(dir: string): string[] {
  return readdirSync(dir, {withFileTypes: true}).flatMap((entry) => (entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)]))
}

/** Every note, by its path relative to `notes/` (with `/`), sorted. */
export function codingMemoryNotes(dir = CODING_MEMORY_DIR): Map<string, string> {
  const notes = join(dir, 'notes')
  return new Map(
    walk(notes)
      .map((file) => [relative(notes, file).split(sep).join('/'), readFileSync(file, 'utf8')] as [string, string])
      .sort(([a], [b]) => a.localeCompare(b)),
  )
}

export function codingMemoryQuestions(dir = CODING_MEMORY_DIR): CodingQuestion[] {
  return JSON.parse(readFileSync(join(dir, 'questions.json'), 'utf8')) as CodingQuestion[]
}
