/**
 * What the search index keeps of each file so that no front matter is parsed again: `jarvis memory ls` from its rows,
 * in a process that watches the tree, must be what reading the files gives, byte for byte, and a process that does not
 * watch it never lists from the index; the summaries and bodies of recall and the prompt hook must be what parsing the
 * texts gives.
 */
import {mkdir, utimes, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeEach, describe, expect, it, vi} from 'vitest'

import {listFiles} from '../../src/files/tools.js'
import {memoryLs} from '../../src/ops/memory-ls.js'
import {renderEpisode} from '../../src/files/episode.js'
import {summaryOf, toSearchDocument} from '../../src/search/document.js'
import {recallMemory} from '../../src/ops/recall.js'
import {answeringLines} from '../../src/ops/recall-rules.js'
import {listIndexedFiles, resetSearchCache, searchDocuments, searchMemory, watchSearchIndex} from '../../src/search/index.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))
beforeEach(() => resetSearchCache())

const DAY_AGO = new Date(Date.now() - 86_400_000)

const FILES: Record<string, string> = {
  'decisions/db.md': '---\ntitle: Use Postgres\ntags: [Storage, ADR]\n---\n# Heading not shown\n\nWe chose Postgres.\n',
  'decisions/cache.md': '---\ntags: redis\n---\n# Only a heading\n\nRedis for sessions.\n',
  'notes/plain.md': '# Plain note\n\nNo front matter at all.\n',
  'notes/broken.md': '---\ntitle: [unclosed\n---\nBody.\n',
  'notes/bad-tags.md': '---\ntitle: Tags wrong\ntags: {a: 1}\n---\nBody.\n',
  'notes/never-closed.md': '---\ntitle: Open\nBody without a closing line.\n',
  'notes/data.json': '{"not": "markdown"}\n',
  'zz/last.md': '---\ntitle: "Quoted: with a colon"\n---\nLast.\n',
}

async function settledTree() {
  const dir = await tempDir('jarvis-search-listing-')
  dirs.push(dir)
  const {root} = await initTree(dir, {})
  const memory = join(root, '.memory')
  for (const [path, text] of Object.entries(FILES)) {
    await mkdir(join(memory, path, '..'), {recursive: true})
    await writeFile(join(memory, path), text)
  }
  for (const path of Object.keys(FILES)) await utimes(join(memory, path), DAY_AGO, DAY_AGO)
  for (const folder of ['decisions', 'notes', 'zz', '']) await utimes(join(memory, folder), DAY_AGO, DAY_AGO)
  await searchMemory(root, 'postgres', {embeddings: false})
  resetSearchCache()
  return {root, memory}
}

describe('memory ls from the search index of a watched tree', () => {
  it('lists what reading the files lists, byte for byte: titles, tags as written, problems, prefixes, limits', async () => {
    const {root} = await settledTree()
    const watch = watchSearchIndex(root)
    try {
      for (const [prefix, limit] of [[undefined, undefined], ['notes/', undefined], ['notes/b', 1], ['decisions', 5], ['nothing/', 3]] as const) {
        const accept = (path: string) => path.endsWith('.md') && path.startsWith(prefix ?? '')
        expect(await listIndexedFiles(root, accept, limit ?? 100)).toBeDefined() // answered by the index
        const fromIndex = await memoryLs({dir: root, prefix, limit})
        const fromFiles = await listFiles(root, prefix, limit, {cache: false})
        expect(JSON.stringify(fromIndex.files)).toBe(JSON.stringify(fromFiles))
      }
      const all = await memoryLs({dir: root})
      expect(all.files.map((f) => f.path)).toEqual(['decisions/cache.md', 'decisions/db.md', 'notes/bad-tags.md', 'notes/broken.md', 'notes/never-closed.md', 'notes/plain.md', 'zz/last.md'])
      expect(all.files.find((f) => f.path === 'decisions/db.md')).toMatchObject({title: 'Use Postgres', tags: ['Storage', 'ADR']})
      expect(all.files.find((f) => f.path === 'notes/broken.md')?.problem).toMatch(/notes\/broken\.md/)
    } finally {
      await watch.stop()
    }
  })

  it('lists an edit in place the watcher reported as the file is now', async () => {
    const {root, memory} = await settledTree()
    const watch = watchSearchIndex(root)
    try {
      await memoryLs({dir: root})
      await writeFile(join(memory, 'decisions/db.md'), '---\ntitle: Use MySQL after all\n---\nChanged.\n')
      watch.changed('decisions/db.md')
      const listed = await memoryLs({dir: root, prefix: 'decisions/'})
      expect(listed.files.find((f) => f.path === 'decisions/db.md')?.title).toBe('Use MySQL after all')
      expect(JSON.stringify(listed.files)).toBe(JSON.stringify(await listFiles(root, 'decisions/', undefined, {cache: false})))
    } finally {
      await watch.stop()
    }
  })

  it('is not used by a process that does not watch the tree, index or not: the files are listed as they are', async () => {
    const {root, memory} = await settledTree()
    // The index still says "Use Postgres": only a search would bring it up to date.
    await writeFile(join(memory, 'decisions/db.md'), '---\ntitle: Use MySQL after all\n---\nChanged.\n')
    expect(await listIndexedFiles(root, () => true, 100)).toBeUndefined()
    const listed = await memoryLs({dir: root, prefix: 'decisions/'})
    expect(listed.files.find((f) => f.path === 'decisions/db.md')?.title).toBe('Use MySQL after all')
    expect(JSON.stringify(listed.files)).toBe(JSON.stringify(await listFiles(root, 'decisions/', undefined, {cache: false})))
  })
})

describe('what the index keeps of each text', () => {
  it('gives each hit the title, tags, body and summary that parsing its text gives (BOM, CRLF, no or broken front matter)', async () => {
    const dir = await tempDir('jarvis-search-documents-')
    dirs.push(dir)
    const {root} = await initTree(dir, {})
    const texts: Record<string, string> = {
      'bom.md': '\uFEFF---\ntitle: Harbour with a BOM\ntags: [Dock]\n---\nThe harbour crane.\n',
      'crlf.md': '---\r\ntitle: Harbour CRLF\r\nsummary: A harbour summary\r\n---\r\n# Heading\r\nThe harbour tug.\r\n',
      'plain.md': '# Harbour plain\n\nThe harbour pilot boards at dawn.\n',
      'broken.md': '---\ntitle: [harbour\n---\nThe harbour is closed.\n',
      'bom-plain.md': '\uFEFF# Harbour BOM plain\n\nThe harbour lights.\n',
    }
    for (const [path, text] of Object.entries(texts)) await writeFile(join(root, '.memory', path), text)
    await searchMemory(root, 'harbour', {embeddings: false})
    resetSearchCache()
    const {documents} = await searchDocuments(root, 'harbour', {embeddings: false, limit: 10})
    expect(documents.map((d) => d.hit.path).sort()).toEqual(Object.keys(texts).sort())
    for (const {hit, title, tags, body, summary} of documents) {
      const doc = toSearchDocument(hit.path, texts[hit.path])
      expect({title, tags, body, summary}).toEqual({title: doc.title, tags: doc.tags, body: doc.body, summary: summaryOf(doc)})
    }
    // recall shows each file by its line that answers the query, from the body the index kept: the same as from the texts.
    vi.stubEnv('JARVIS_EMBEDDINGS', 'off')
    const block = (await recallMemory({dir: root, query: 'harbour', limit: 5}).finally(() => vi.unstubAllEnvs())).block
    for (const path of Object.keys(texts)) {
      const doc = toSearchDocument(path, texts[path])
      expect(block).toContain(`- ${path}\n  Summary: “${(answeringLines({path, body: doc.body}, ['harbour']) ?? summaryOf(doc)).replace(/[“”]/g, '"')}”`)
    }
    expect(block).toContain('- crlf.md\n  Summary: “The harbour tug.”')
  })
})

describe('a summary line', () => {
  it('of a session episode without an outcome is its title and the first line under Summary, never empty', () => {
    const text = renderEpisode({title: 'Claude Code session 1a2b3c4d', tags: ['session', 'claude'], body: '## Files touched\n- src/x.ts (edited)\n', now: new Date('2026-12-07T12:00:00Z'), refs: 'claude session 1a2b3c4d'})
    expect(summaryOf(toSearchDocument('episodes/2026-12-07/claude-1a2b3c4d.md', text))).toBe('Claude Code session 1a2b3c4d — src/x.ts (edited)')
    // An empty summary in the front matter is none.
    expect(summaryOf(toSearchDocument('notes/a.md', '---\ntitle: Deploys\nsummary: ""\n---\n'))).toBe('Deploys')
  })

  it('of a file with a jarvis block is its first line of text, never the block marker', () => {
    const text = '---\ntitle: "app: project summary"\n---\n# Project app: summary\n\n<!-- jarvis:begin -->\nRolled up from 3 episodes.\n<!-- jarvis:end -->\n'
    expect(summaryOf(toSearchDocument('projects/app/summary.md', text))).toBe('app: project summary — Rolled up from 3 episodes.')
  })
})
