/**
 * The coding-memory set's integrity, not its quality (the quality bench measures that): it is as large as promised,
 * every question names notes that exist, no question is asked twice, every note is a memory file jarvis reads, and
 * nothing in it is refused by jarvis's own secret and personal-data scan.
 */
import {describe, expect, it} from 'vitest'

import {findSensitive} from '../../src/events/index.js'
import {parseMemoryFile} from '../../src/files/index.js'
import {codingMemoryNotes, codingMemoryQuestions} from './coding-memory.js'

const notes = codingMemoryNotes()
const questions = codingMemoryQuestions()

describe('the coding-memory set', () => {
  it('holds at least 500 notes and 200 questions', () => {
    expect(notes.size).toBeGreaterThanOrEqual(500)
    expect(questions.length).toBeGreaterThanOrEqual(200)
  })

  it('names, for every question, notes that exist', () => {
    const missing = questions.flatMap((q) => (q.answers.length === 0 ? [`${q.question}: no answer named`] : q.answers.filter((path) => !notes.has(path)).map((path) => `${q.question}: ${path}`)))
    expect(missing).toEqual([])
  })

  it('asks no question twice', () => {
    const seen = new Map<string, number>()
    for (const q of questions) {
      const key = q.question.trim().toLowerCase().replace(/\s+/g, ' ')
      seen.set(key, (seen.get(key) ?? 0) + 1)
    }
    expect([...seen].filter(([, n]) => n > 1).map(([q]) => q)).toEqual([])
  })

  it('is made of Markdown memory files whose front matter parses', () => {
    const bad: string[] = []
    for (const [path, text] of notes) {
      if (!path.endsWith('.md')) bad.push(`${path}: not a .md file`)
      try {
        parseMemoryFile(path, text)
      } catch (error) {
        bad.push((error as Error).message)
      }
    }
    expect(bad).toEqual([])
  })

  it('passes the secret and personal-data scan that every write goes through', async () => {
    const fields: Record<string, string> = Object.fromEntries(notes)
    questions.forEach((q, i) => (fields[`questions.json #${i + 1}`] = q.question))
    const findings = await findSensitive(fields)
    expect(findings.map((f) => `${f.field}:${f.line}: ${f.kind} (${f.rule})`)).toEqual([])
  })
})
