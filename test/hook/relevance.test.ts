/**
 * The prompt hook's relevance threshold: the rule itself (pure), then the rule over the real search on a 220-file
 * corpus (an agent's questions get their file; prompts about something else get nothing).
 */
import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {readPromptRecall} from '../../src/hook/context.js'
import {answeringLines, containsTerm, coveragePoints, ofAnotherProject, promptTerms, queryTerms, relevantFiles} from '../../src/hook/relevance.js'
import {MAX_QUERY_TERMS} from '../../src/ops/recall-rules.js'
import {toSearchDocument} from '../../src/search/document.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {QUERIES, writeCorpus} from '../search/corpus.js'

describe('the relevance rule', () => {
  it('takes the topic words of a prompt, not the words of talking to an assistant', () => {
    expect(promptTerms('Can you please help me fix the pgbouncer pooling mode? Thanks!')).toEqual(['fix', 'pgbouncer', 'pooling', 'mode'])
    expect(promptTerms('ok, continue')).toEqual(['continue'])
    expect(promptTerms('hi')).toEqual([])
    expect(promptTerms('Why is 2024 slow')).toEqual(['slow'])
  })

  it('takes the character pairs of Japanese, Chinese and Korean, without the pairs of Japanese grammar', () => {
    expect(promptTerms('デプロイが失敗した原因は？')).toEqual(['デプ', 'プロ', 'ロイ', '失敗', '原因'])
    expect(promptTerms('배포 실패 원인이 뭐야?')).toEqual(['배포', '실패', '원인', '인이', '뭐야'])
    expect(promptTerms('APIの設計 redis')).toEqual(['api', '設計', 'redis'])
    expect(promptTerms('今日はいい天気ですね')).toEqual(['今日', '天気'])
    expect(containsTerm('本番環境へのデプロイが失敗した', 'デプ')).toBe(true)
    expect(containsTerm('本番環境へのデプロイが失敗した', '原因')).toBe(false)
  })

  it('of a prompt with a log pasted in, weighs the words at its two ends: the question after the log, or before it', () => {
    const log = Array.from({length: 40}, (_, i) => `GET /api/cart${i + 1} 200 12ms req-${i + 1}`).join(' ')
    const question = 'How are the Stripe webhooks verified?'
    for (const prompt of [`${log} ${question}`, `${question}\n${log}`, `Why does this fail?\n${log}\n${question}`]) {
      const terms = queryTerms(prompt)
      expect(terms).toHaveLength(MAX_QUERY_TERMS)
      expect(terms).toEqual(expect.arrayContaining(['stripe', 'webhooks', 'verified']))
      // In the prompt's order, each once.
      expect(terms).toEqual(promptTerms(prompt).filter((term) => terms.includes(term)))
    }
    expect(queryTerms(`${log} ${question}`)).toContain('cart40')
    expect(queryTerms(`${log} ${question}`)).not.toContain('cart20')
    // A prompt of at most MAX_QUERY_TERMS terms is weighed whole.
    expect(queryTerms(question)).toEqual(promptTerms(question))
  })

  it('matches whole words with a plural or verb ending, nothing else', () => {
    expect(containsTerm('Run pgbouncers in transaction mode', 'pgbouncer')).toBe(true)
    expect(containsTerm('the repgbouncer tool', 'pgbouncer')).toBe(false)
    expect(containsTerm('short-lived SSH certificate', 'certificates')).toBe(true)
    expect(containsTerm('the job kept failing', 'fail')).toBe(true)
    expect(containsTerm('the invoice writer', 'write')).toBe(false)
    expect(containsTerm('a CPU limit', 'cpu')).toBe(true)
    expect(containsTerm('cpuset', 'cpu')).toBe(false)
  })

  it('scores coverage: 2 points in the title, tags or path, 1 in the body', () => {
    const file = {path: 'decisions/postgres/pgbouncer.md', title: 'Pooling mode', tags: ['database'], body: 'Transaction pooling. Deploys exhausted connections.'}
    expect(coveragePoints(file, ['pgbouncer'])).toBe(2)
    expect(coveragePoints(file, ['deploys'])).toBe(1)
    expect(coveragePoints(file, ['deploys', 'connections'])).toBe(2)
    expect(coveragePoints(file, ['haiku'])).toBe(0)
  })

  it('needs coverage and a score near the best: one common body word is not enough', () => {
    const files = [
      {path: 'a.md', score: 10, title: 'Pgbouncer', tags: [], body: 'pooling'},
      {path: 'b.md', score: 2, title: 'Other', tags: [], body: 'pgbouncer and pooling'},
      {path: 'c.md', score: 8, title: 'Deploys', tags: [], body: 'we write deploy notes'},
    ]
    expect(relevantFiles('pgbouncer pooling', files).map((f) => f.path)).toEqual(['a.md'])
    expect(relevantFiles('write a poem', files)).toEqual([])
    expect(relevantFiles('hello there', files)).toEqual([])
  })
})

describe('what the recall block says of a file: the line that answers the prompt', () => {
  let root: string
  beforeAll(async () => {
    root = (await initTree(await tempDir('jarvis-answering-'), {})).root
    await mkdir(join(root, '.memory', 'notes'), {recursive: true})
    await writeFile(join(root, '.memory', 'notes', 'staging.md'), 'Our staging database password rotates monthly; ask Priya for access.\nThe staging deploy runs from release/* via GitHub Actions, weekdays at 18:00 UTC.\n')
  })
  afterAll(async () => removeAll([root]))

  it('finds the note a Japanese, Korean or Chinese prompt asks about, and shows its answering line', async () => {
    const notes = {
      'notes/jp.md': '# デプロイ失敗\n本番環境へのデプロイが失敗した。原因はメモリ不足。\n',
      'notes/ko.md': '# 배포 실패\n프로덕션 배포가 실패했다. 원인은 메모리 부족.\n',
      'notes/zh.md': '# 部署失败\n生产环境部署失败，原因是内存不足。\n',
    }
    for (const [path, text] of Object.entries(notes)) await writeFile(join(root, '.memory', path), text)
    expect((await readPromptRecall({root, prompt: 'デプロイが失敗した原因は？'})).block).toBe('[MEMORY CONTEXT]\n- notes/jp.md\n  Summary: “本番環境へのデプロイが失敗した。原因はメモリ不足。”')
    expect((await readPromptRecall({root, prompt: '배포 실패 원인이 뭐야?'})).files).toEqual(['notes/ko.md'])
    expect((await readPromptRecall({root, prompt: '部署失败的原因是什么？'})).files).toEqual(['notes/zh.md'])
    expect((await readPromptRecall({root, prompt: '今日はいい天気ですね'})).block).toBe('')
  })

  it('the line holding most of the prompt words, not the first line of the file', async () => {
    const recall = await readPromptRecall({root, prompt: 'When does the staging deploy run?'})
    expect(recall.block).toBe('[MEMORY CONTEXT]\n- notes/staging.md\n  Summary: “The staging deploy runs from release/* via GitHub Actions, weekdays at 18:00 UTC.”')
    const access = await readPromptRecall({root, prompt: 'Who gives access to the staging database password?'})
    expect(access.block).toContain('Summary: “Our staging database password rotates monthly; ask Priya for access.”')
  })

  it('lines tied for the most prompt words, in file order; none holding one: what the file is about', () => {
    const body = '# Retries\n\nWebhooks retry three times.\n\n- Payments retry with backoff.\n```\nretry: 3\n```\n'
    expect(answeringLines({path: 'notes/retries.md', body}, ['webhooks', 'retry'])).toBe('Webhooks retry three times.')
    expect(answeringLines({path: 'notes/retries.md', body}, ['retry', 'webhooks', 'payments'])).toBe('Webhooks retry three times. Payments retry with backoff.')
    expect(answeringLines({path: 'notes/retries.md', body}, ['retry'])).toBe('Webhooks retry three times. Payments retry with backoff. retry: 3')
    expect(answeringLines({path: 'notes/retries.md', body}, ['haiku'])).toBeUndefined()
    // A session's episode: its own decision, not the header made from it nor a line that restates the prompt.
    const episode = '# Episode: Claude Code session s1: Staging deploys\nDate: 2026-09-01\nTopic: staging deploys\n\nSummary:\n## Decided\n- We moved the staging deploy to 18:00 UTC.\n\n## Learned\nWhen does the staging deploy run?\n'
    expect(answeringLines({path: 'episodes/2026-09-01/claude-s1.md', body: episode}, ['staging', 'deploy', 'run'])).toBe('We moved the staging deploy to 18:00 UTC.')
  })
})

describe("another project's files", () => {
  let root: string
  beforeAll(async () => {
    root = (await initTree(await tempDir('jarvis-projects-'), {})).root
    const files = {
      // Pulled from the shop tree of the workspace: a session's episode and a note, both marked as shop's.
      'episodes/2026-12-07/claude-s1.md': '---\ntitle: Claude Code session s1\ntags: [session, claude]\ndate: 2026-12-07\nproject: shop\nkind: episode\n---\n# Episode: Claude Code session s1\n\nSummary:\n## Decided\n- We decided to log every failed delivery to Sentry.\n',
      'notes/deliveries.md': '---\ntitle: Failed deliveries\nproject: "shop"\n---\nEvery failed delivery is logged to Sentry with the order id.\n',
      // The workspace's: no project named.
      'notes/sentry.md': '---\ntitle: Sentry\n---\nSentry is the error tracker of every project; a failed delivery or job is logged there with its id.\n',
    }
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(root, '.memory', path, '..'), {recursive: true})
      await writeFile(join(root, '.memory', path), text)
    }
  })
  afterAll(async () => removeAll([root]))

  it('a file is another project\'s when its front matter names a project and the tree has another', () => {
    expect(toSearchDocument('notes/a.md', '---\ntitle: A\nproject: shop # the webshop\n---\nbody\n').project).toBe('shop')
    expect(toSearchDocument('notes/a.md', "---\nproject: 'shop'\n---\nbody\n").project).toBe('shop')
    expect(toSearchDocument('notes/a.md', '---\ntitle: A\nmeta:\n  project: shop\n---\nproject: shop\n').project).toBeUndefined()
    expect(toSearchDocument('PROJECT_MEMORY.md', '# Memory\n\nproject: shop\n').project).toBeUndefined()
    expect(ofAnotherProject('shop', 'blog')).toBe(true)
    expect(ofAnotherProject('blog', 'blog')).toBe(false)
    expect(ofAnotherProject(undefined, 'blog')).toBe(false)
    expect(ofAnotherProject('shop', undefined)).toBe(false)
  })

  it("a prompt of the blog gets the workspace's note, never shop's episode or note", async () => {
    const prompt = 'Where is a failed delivery logged, Sentry?'
    expect((await readPromptRecall({root, prompt, project: 'blog'})).files).toEqual(['notes/sentry.md'])
    // shop's own sessions are given them; a tree without a project, every file.
    expect((await readPromptRecall({root, prompt, project: 'shop'})).files).toEqual(expect.arrayContaining(['notes/deliveries.md', 'notes/sentry.md']))
    expect((await readPromptRecall({root, prompt})).files).toEqual(expect.arrayContaining(['notes/deliveries.md', 'notes/sentry.md']))
  })
})

describe('the threshold over the real search (220 memory files)', () => {
  let root: string
  beforeAll(async () => {
    root = (await initTree(await tempDir('jarvis-relevance-'), {})).root
    await writeCorpus(join(root, '.memory'))
  })
  afterAll(async () => removeAll([root]))

  // The corpus's typo queries are left out: the threshold counts only words of the prompt itself (see relevance.ts).
  const TYPOS = new Set(['kubernets autoscaler', 'meilisaerch', 'postgr upgrad'])

  it('an agent question about a file brings that file', async () => {
    for (const {query, expected} of QUERIES.filter((q) => !TYPOS.has(q.query))) {
      const recall = await readPromptRecall({root, prompt: `Can you look into ${query} for me?`})
      expect(recall.files.filter((f) => expected.includes(f)), query).not.toEqual([])
      expect(recall.block.split('\n')[0]).toBe('[MEMORY CONTEXT]')
    }
  })

  it('a question with a long log pasted after it, or before it: the file of the question, weighed by the words at the ends', async () => {
    const {query, expected} = QUERIES[0]
    const log = Array.from({length: 4000}, (_, i) => `frame${i}`).join(' ')
    const after = await readPromptRecall({root, prompt: `Can you look into ${query}? Here is the log:\n${log}`})
    expect(after.files.filter((f) => expected.includes(f)), query).not.toEqual([])
    const before = await readPromptRecall({root, prompt: `${log}\nCan you look into ${query}?`})
    expect(before.files.filter((f) => expected.includes(f)), query).not.toEqual([])
    // The rules weigh as many words as the search is asked for: each costs a test of every line of every candidate.
    expect(queryTerms(`${query} ${log}`)).toHaveLength(MAX_QUERY_TERMS)
  })

  it.each([
    'Write a haiku about autumn leaves falling in Kyoto',
    'What is the capital of Australia?',
    'Explain the difference between a list and a tuple in Python',
    'hi',
    'thanks, that is all for today',
    'Translate good morning into French',
  ])('an unrelated prompt brings nothing: %s', async (prompt) => {
    const recall = await readPromptRecall({root, prompt})
    expect(recall).toEqual({block: '', files: []})
  })
})
