/**
 * The keyword ranking skips a word's prefix query when the vocabulary holds no longer word starting with it, and
 * counts the exact query's rows in its place (src/search/fts.ts). That holds only if FTS5 then answers both queries
 * with the same rows and the same bm25, bit for bit: checked here on random texts whose words share beginnings.
 */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {toSearchDocument} from '../../src/search/document.js'
import {FtsEngine} from '../../src/search/fts.js'
import {MemoryTextIndex} from '../../src/search/keyword.js'
import {openRowDatabase} from '../../src/store/sqlite-open.js'

/** Short words over few letters: many are prefixes of others, many are not. */
const word = fc.stringMatching(/^[abc][abc0-9]{1,5}$/)
const text = fc.array(word, {minLength: 1, maxLength: 20}).map((words) => `# ${words[0]}\n\n${words.join(' ')}\n`)

describe('the prefix query of a word no longer word starts with', () => {
  it('finds the rows of the exact query, with the same bm25', () => {
    fc.assert(
      fc.property(fc.array(text, {minLength: 1, maxLength: 12}), (texts) => {
        const db = openRowDatabase(':memory:')
        const engine = new FtsEngine(db)
        texts.forEach((body, i) => engine.add(i + 1, toSearchDocument(`n${i}.md`, body)))
        const vocabulary = (db.prepare('SELECT term FROM terms').all() as Array<[string]>).map(([term]) => term)
        const match = db.prepare('SELECT rowid, bm25(docs, 3, 2, 1.5, 1) FROM docs WHERE docs MATCH ?')
        for (const term of vocabulary) {
          if (term.length < 3 || vocabulary.some((other) => other !== term && other.startsWith(term))) continue
          expect(match.all(`"${term}"*`)).toEqual(match.all(`"${term}"`))
        }
        db.close()
      }),
      {numRuns: 60},
    )
  })

  it('ranks as the prefix query would: a word with longer ones beside it still counts them', () => {
    const index = new MemoryTextIndex()
    index.set('a.md', '# A\n\ndeploy the service\n', 'h1', '2026-01-01T00:00:00Z')
    index.set('b.md', '# B\n\ndeployed yesterday\n', 'h2', '2026-01-01T00:00:00Z')
    index.set('c.md', '# C\n\nstatus report\n', 'h3', '2026-01-01T00:00:00Z')
    expect(index.search('deploy', {}, 10).map((hit) => hit.path)).toEqual(['a.md', 'b.md'])
    expect(index.search('status', {}, 10).map((hit) => [hit.path, hit.terms])).toEqual([['c.md', ['status']]])
  })
})
