/**
 * Memory that stays right as it is used: the rules recall and the prompt hook put on top of the search (pure), then
 * the same question asked again and again over a real tree — the answering note stays first, however many sessions
 * repeated the question, and the newer of two notes on one thing comes first.
 */
import {mkdir, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {digestOf, renderSessionEpisode} from '../../src/hook/episode.js'
import {readPromptRecall} from '../../src/hook/context.js'
import {coveragePoints, evidenceTerms, orderForQuery, promptTerms, restatesQuery} from '../../src/ops/recall-rules.js'
import {recallMemory} from '../../src/ops/recall.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {echoEpisode, NOTE, QUESTION} from './echoes.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

/** An episode as the hooks write it now for a session that did something and answered by repeating the note it was given. */
function quotingEpisode(n: number): [string, string] {
  const digest = digestOf(
    [
      {kind: 'ask', text: QUESTION},
      {kind: 'tool', name: 'Read', input: {file_path: '/repo/src/billing/webhooks.ts'}},
      {kind: 'answer', text: 'Stripe webhooks are verified with the signing secret; a failed delivery is retried three times.'},
    ],
    '/repo',
    [NOTE.path],
  )
  const id = `q${String(n).padStart(7, '0')}-0000`
  return [`episodes/2026-10-${String(1 + (n % 28)).padStart(2, '0')}/claude-${id}.md`, renderSessionEpisode({agent: 'claude', sessionId: id, date: '2026-10-01'}, digest)]
}

async function treeWith(files: Array<[string, string]>): Promise<string> {
  const {root} = await initTree(await tempDir('jarvis-recall-rules-'), {})
  dirs.push(root)
  for (const [path, text] of files) {
    await mkdir(dirname(join(root, '.memory', path)), {recursive: true})
    await writeFile(join(root, '.memory', path), text)
  }
  return root
}

const body = (text: string) => text.replace(/^---\n[\s\S]*?\n---\n/, '')
const file = ([path, text]: [string, string], score: number) => ({path, score, tags: [], body: body(text)})

describe('the rules', () => {
  const terms = promptTerms(QUESTION)

  it('a line that only restates the query is an echo; a line that says more is not', () => {
    expect(restatesQuery(QUESTION, terms)).toBe(true)
    expect(restatesQuery('Stripe webhooks verified?', terms)).toBe(true)
    expect(restatesQuery('Stripe webhooks are verified with the signing secret', terms)).toBe(false)
    expect(restatesQuery('Stand-in model reply 3.', terms)).toBe(false)
  })

  it('an episode of echoes has no evidence; the note has all of it; an episode that did something keeps its own lines', () => {
    expect(evidenceTerms(file(echoEpisode(1), 50), terms)).toEqual([])
    expect(coveragePoints(file(echoEpisode(1), 50), terms)).toBe(0)
    expect(evidenceTerms({...file([NOTE.path, NOTE.text], 1), title: 'Billing', tags: ['billing', 'stripe']}, terms)).toEqual(['stripe', 'webhooks', 'verified'])
    expect(evidenceTerms(file(quotingEpisode(1), 1), terms)).toEqual(['stripe', 'webhooks', 'verified'])
    // An episode written with `memory episode` (no sections of a session's episode): every line is its own, its title too.
    const written = {path: 'episodes/2026-03-07/incident-postmortem.md', score: 1, title: 'Wrote the postmortem for the checkout outage', tags: [], body: '# Episode: Wrote the postmortem for the checkout outage\nDate: 2026-03-07\n\nSummary:\n- timeline agreed\n'}
    expect(evidenceTerms(written, promptTerms('postmortem checkout outage'))).toEqual(['postmortem', 'checkout', 'outage'])
  })

  it('echoes go last; an episode goes after the note it names; the newer of two files on one thing goes first', () => {
    const note = {...file([NOTE.path, NOTE.text], 3), title: 'Billing', tags: ['billing', 'stripe']}
    const order = orderForQuery(QUESTION, [file(echoEpisode(1), 40), file(quotingEpisode(1), 20), note, file(echoEpisode(2), 30)])
    expect(order.map((f) => f.path)).toEqual([NOTE.path, quotingEpisode(1)[0], echoEpisode(1)[0], echoEpisode(2)[0]])

    const old = {path: 'notes/retries-2025.md', score: 10, title: 'Webhook retries', tags: [], body: 'Stripe webhook deliveries are retried three times.'}
    const newer = {path: 'notes/retries.md', score: 8, title: 'Webhook retries', tags: [], body: 'Stripe webhook deliveries are retried five times.'}
    const dates = new Map([
      [old.path, '2025-03-01'],
      [newer.path, '2026-06-01'],
    ])
    expect(orderForQuery('stripe webhook retries', [old, newer], dates).map((f) => f.path)).toEqual([newer.path, old.path])
    // Far apart in score, or without dates, the search's order stands.
    expect(orderForQuery('stripe webhook retries', [old, {...newer, score: 2}], dates).map((f) => f.path)).toEqual([old.path, newer.path])
    expect(orderForQuery('stripe webhook retries', [old, newer]).map((f) => f.path)).toEqual([old.path, newer.path])
    // Two files that share only the query's words are not two versions of one thing: the search's order stands.
    const march = {path: 'sessions/session-03.md', score: 10, title: 'Caroline and Mel, session 3', tags: [], body: 'Caroline: I went to the support group yesterday, it was powerful.\nMel: Painting again this weekend with the kids.'}
    const june = {path: 'sessions/session-09.md', score: 9, title: 'Caroline and Mel, session 9', tags: [], body: 'Mel: The kids loved the camping trip by the lake.\nCaroline: The support group asked me to speak next month.'}
    const sessions = new Map([
      [march.path, '2023-03-08'],
      [june.path, '2023-06-27'],
    ])
    expect(orderForQuery('support group', [march, june], sessions).map((f) => f.path)).toEqual([march.path, june.path])
  })

  it('an episode found only through the notes it used goes after a note found by meaning', () => {
    // The session edited a file and named the notes it was given; one of them holds "brand" (portal-branding.md).
    const worked = digestOf(
      [
        {kind: 'tool', name: 'Edit', input: {file_path: '/repo/services/returns/src/handler.ts', old_string: 'a', new_string: 'b'}},
        {kind: 'answer', text: 'Changed services/returns/src/handler.ts; tests pass locally.'},
      ],
      '/repo',
      ['returns/portal-branding.md', 'returns/overview.md'],
    )
    const episode: [string, string] = ['episodes/2026-02-07/codex-e.md', renderSessionEpisode({agent: 'codex', sessionId: 'e', date: '2026-02-07'}, worked)]
    const branding = {path: 'returns/portal-branding.md', score: 9, title: 'Returns portal branding', tags: [], body: 'Each merchant sets the brand colours and logo of its returns portal.'}
    // The note that answers holds none of the query's words: the search found it by what it means.
    const answer = {path: 'faq/add-a-new-service.md', score: 4, title: 'Adding a service', tags: [], body: 'Run the generator: it creates the folder, the Dockerfile, the Helm chart and the CI job.'}
    const query = 'scaffold a brand new microservice'
    expect(evidenceTerms(file(episode, 6), promptTerms(query))).toEqual([])
    expect(orderForQuery(query, [branding, file(episode, 6), answer]).map((f) => f.path)).toEqual([branding.path, answer.path, episode[0]])
  })

  it('an episode that decided something about the query is news: it is not put behind the note it names', () => {
    const decided = digestOf([{kind: 'answer', text: 'We switched to five Stripe webhook retries instead of three.'}], '/repo', [NOTE.path])
    const episode: [string, string] = ['episodes/2026-10-02/claude-d.md', renderSessionEpisode({agent: 'claude', sessionId: 'd', date: '2026-10-02'}, decided)]
    const note = {...file([NOTE.path, NOTE.text], 3), title: 'Billing', tags: ['billing', 'stripe']}
    expect(orderForQuery('stripe webhook retries', [file(episode, 5), note]).map((f) => f.path)).toEqual([episode[0], NOTE.path])
  })
})

describe('the same question asked again and again (a real tree, the real search)', () => {
  it('the prompt hook shows the note first and every relevant file; before, the echoes pushed it under the threshold', async () => {
    const root = await treeWith([[NOTE.path, NOTE.text], echoEpisode(1), echoEpisode(2), quotingEpisode(1)])
    const recall = await readPromptRecall({root, prompt: QUESTION})
    expect(recall.files[0]).toBe(NOTE.path)
    expect(recall.files).toContain(quotingEpisode(1)[0])
    expect(recall.files).not.toContain(echoEpisode(1)[0])
    expect(recall.block).toContain('signing secret')
  })

  it('recall answers with the note first after 300 sessions asked it (R@1 stays), with the episodes behind it', async () => {
    // 200 sessions that read code and answered by repeating the note, and 100 episodes the earlier hooks wrote for
    // sessions that only asked (the question in their title: the search ranks all of them above the note).
    const sessions = [...Array.from({length: 200}, (_, n) => quotingEpisode(n)), ...Array.from({length: 100}, (_, n) => echoEpisode(n))]
    const other: [string, string] = ['notes/deploys.md', '---\ntitle: Deploys\n---\n# Deploys\n\nDeploys go out on Tuesdays after the canary ran for an hour.\n']
    const root = await treeWith([[NOTE.path, NOTE.text], other, ...sessions])
    for (const query of [QUESTION, 'stripe webhooks verified', 'webhook signing secret']) {
      const result = await recallMemory({dir: root, query, limit: 3})
      expect(result.hits[0]?.path, query).toBe(NOTE.path)
    }
    expect((await recallMemory({dir: root, query: 'when do deploys go out', limit: 3})).hits[0]?.path).toBe('notes/deploys.md')
    // The prompt hook too: the note first, no echo shown.
    const prompt = await readPromptRecall({root, prompt: QUESTION})
    expect(prompt.files[0]).toBe(NOTE.path)
    expect(prompt.files.filter((f) => f.startsWith('episodes/2026-09-'))).toEqual([])
  }, 120_000)

  it('recall puts the newer of two notes on the same thing first', async () => {
    const root = await treeWith([
      ['notes/retries-2025.md', '---\ntitle: Webhook retries\ndate: 2025-03-01\n---\n# Webhook retries\n\nStripe webhook deliveries are retried three times.\n'],
      ['notes/retries.md', '---\ntitle: Webhook retries\ndate: 2026-06-01\n---\n# Webhook retries\n\nStripe webhook deliveries are retried five times, with backoff.\n'],
    ])
    expect((await recallMemory({dir: root, query: 'stripe webhook retries', limit: 2})).hits.map((h) => h.path)).toEqual(['notes/retries.md', 'notes/retries-2025.md'])
  })
})
