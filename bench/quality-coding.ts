/**
 * The coding-memory set (test/fixtures/coding-memory) as a corpus for the quality bench: its notes are one tree's
 * `.memory/`, its questions are asked in that tree.
 */
import {codingMemoryNotes, codingMemoryQuestions} from '../test/search/coding-memory.js'
import type {Corpus} from './quality-measure.js'

export function codingCorpus(): Corpus {
  return {files: codingMemoryNotes(), questions: codingMemoryQuestions().map((q) => ({query: q.question, answers: q.answers}))}
}
