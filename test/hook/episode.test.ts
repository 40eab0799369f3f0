/** The episode a recording hook writes: extraction, the union of later hooks, the file format, secrets. Pure parts and a temp tree. */
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import fc from 'fast-check'
import {afterAll, describe, expect, it} from 'vitest'

import {addsToMemory, digestOf, episodePath, mergeDigests, parseDigest, patchTouches, recordEpisode, renderDigest, renderSessionEpisode, memoryFilesUsed, type SessionDigest, shellReads, withoutEchoes} from '../../src/hook/episode.js'
import type {HookAgent} from '../../src/hook/events.js'
import {codexItems, type DigestItem, readTranscriptItems} from '../../src/hook/transcript.js'
import {parseCodexRollout} from '../../src/session/codex-read.js'
import {parseMemoryFile} from '../../src/files/index.js'
import {initTree, withTreeLock} from '../../src/store/index.js'
import {fakeGithubToken} from '../cli/memory-helpers.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {codexRollout} from './helpers.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

const items: DigestItem[] = [
  {kind: 'ask', text: 'Make the deploy script idempotent'},
  {kind: 'tool', name: 'Read', input: {file_path: '/repo/scripts/deploy.sh'}},
  {kind: 'tool', name: 'Edit', input: {file_path: '/repo/scripts/deploy.sh', old_string: 'a', new_string: 'b'}},
  {kind: 'tool', name: 'Bash', input: {command: 'bash scripts/deploy.sh --dry-run'}},
  {kind: 'answer', text: 'The root cause was a missing lock. We decided to use flock instead of a pid file.\n\n```sh\nflock -n /tmp/x\n```'},
  {kind: 'ask', text: 'Also add a test'},
  {kind: 'tool', name: 'write_file', input: {file_path: '/repo/test/deploy.test.sh', content: 'x'}},
  {kind: 'answer', text: 'Added test/deploy.test.sh.'},
]

describe('what an episode says', () => {
  it('decisions, files touched (relative to the session directory), what it learned, the memory it was given; not the prompts', () => {
    expect(digestOf(items, '/repo', ['notes/deploy.md', 'episodes/2026-08-31/claude-x.md'])).toEqual({
      decisions: ['The root cause was a missing lock.', 'We decided to use flock instead of a pid file.'],
      files: [
        {path: 'scripts/deploy.sh', verbs: ['edited', 'read']},
        {path: 'test/deploy.test.sh', verbs: ['written']},
      ],
      learned: 'Added test/deploy.test.sh.',
      sources: ['notes/deploy.md'],
    })
  })

  it('a question states no decision; a memory_read names its note; a session that only asked adds nothing', () => {
    const asked: DigestItem[] = [
      {kind: 'ask', text: 'Should we switch to Postgres? We decided on MySQL last year.'},
      {kind: 'tool', name: 'mcp__jarvis__memory_read', input: {path: 'decisions/db.md'}},
      {kind: 'answer', text: 'Yes: MySQL was chosen for replication.'},
    ]
    const digest = digestOf(asked, '/repo')
    expect(digest).toEqual({decisions: ['We decided on MySQL last year.', 'Yes: MySQL was chosen for replication.'], files: [], learned: 'Yes: MySQL was chosen for replication.', sources: ['decisions/db.md']})
    // Typed without a question mark, a question is still one; what a person states is still a decision.
    for (const question of ['what was decided about isolating carrier adapters', 'Quick question: which services can lithium batteries go with', 'Can we switch to Postgres instead of MySQL']) {
      expect(digestOf([{kind: 'ask', text: question}]).decisions, question).toEqual([])
    }
    expect(digestOf([{kind: 'ask', text: 'Do not retry twice, we decided on one retry.'}]).decisions).toEqual(['Do not retry twice, we decided on one retry.'])
    const onlyAsked: DigestItem[] = [
      {kind: 'ask', text: 'How are the Stripe webhooks verified?'},
      {kind: 'tool', name: 'mcp__jarvis__recall', input: {query: 'stripe webhooks'}},
      {kind: 'answer', text: 'With the signing secret, retried three times.'},
    ]
    expect(addsToMemory(digestOf(onlyAsked), onlyAsked)).toBe(false)
    const ranTests: DigestItem[] = [...onlyAsked, {kind: 'tool', name: 'Bash', input: {command: 'npm test'}}]
    expect(addsToMemory(digestOf(ranTests), ranTests)).toBe(true)
  })

  it("reading a memory file with the agent's own tools is memory used, not a file touched, and adds nothing", () => {
    const readTheNote: DigestItem[] = [
      {kind: 'ask', text: 'How are the Stripe webhooks verified?'},
      {kind: 'tool', name: 'Read', input: {file_path: '/repo/.memory/notes/billing.md'}},
      {kind: 'tool', name: 'read_file', input: {absolute_path: '/repo/.memory/runbooks/stripe.md'}},
      {kind: 'tool', name: 'read_many_files', input: {paths: ['.memory/notes/billing.md']}},
      {kind: 'tool', name: 'Bash', input: {command: "sed -n '1,120p' .memory/decisions/retries.md"}},
      {kind: 'answer', text: 'With the signing secret, retried three times.'},
    ]
    const digest = digestOf(readTheNote, '/repo', [], '/repo/.memory')
    expect(digest).toMatchObject({files: [], sources: ['notes/billing.md', 'runbooks/stripe.md', 'decisions/retries.md']})
    expect(addsToMemory(digest, readTheNote, '/repo', '/repo/.memory')).toBe(false)
    // A file read outside the memory is the world; a memory file written is a change the session made.
    const readCode: DigestItem[] = [...readTheNote, {kind: 'tool', name: 'Read', input: {file_path: '/repo/src/billing.ts'}}]
    expect(addsToMemory(digestOf(readCode, '/repo', [], '/repo/.memory'), readCode, '/repo', '/repo/.memory')).toBe(true)
    const wroteNote: DigestItem[] = [...readTheNote, {kind: 'tool', name: 'Edit', input: {file_path: '/repo/.memory/notes/billing.md'}}]
    expect(digestOf(wroteNote, '/repo', [], '/repo/.memory').files).toEqual([{path: '.memory/notes/billing.md', verbs: ['edited']}])
  })

  it('a shell command only prints files: cat, head, tail, sed -n; anything piped, chained or redirected is not', () => {
    expect(shellReads('cat .memory/a.md .memory/b.md')).toEqual(['.memory/a.md', '.memory/b.md'])
    expect(shellReads('head -n 50 "/repo/.memory/a.md"')).toEqual(['/repo/.memory/a.md'])
    expect(shellReads("sed -n '1,120p' .memory/a.md")).toEqual(['.memory/a.md'])
    for (const other of ["sed -i 's/a/b/' .memory/a.md", 'cat .memory/a.md > b.md', 'cat .memory/a.md | tee b.md', 'cat a.md; rm b.md', 'rm .memory/a.md', 'cat', 'cat $(ls)']) {
      expect(shellReads(other), other).toBeUndefined()
    }
  })

  it('a decision or an answer that repeats a memory file the session used is left out; what it adds is kept', () => {
    const note = '# Stripe webhooks\n\nWebhooks are verified with the signing secret. We chose three retries instead of five, with backoff.\n'
    const digest = digestOf(
      [
        {kind: 'answer', text: 'According to the memory: we chose three retries instead of five, with backoff.'},
        {kind: 'tool', name: 'Edit', input: {file_path: '/repo/src/webhooks.ts'}},
        {kind: 'answer', text: 'Done. We decided to log every rejected signature instead of dropping it silently.'},
      ],
      '/repo',
      ['notes/billing.md'],
    )
    expect(withoutEchoes(digest, [note])).toEqual({...digest, decisions: ['We decided to log every rejected signature instead of dropping it silently.']})
    const echoedAnswer = {...digest, learned: 'Webhooks are verified with the signing secret, and retried three times with backoff.'}
    expect(withoutEchoes(echoedAnswer, [note]).learned).toBeUndefined()
    expect(withoutEchoes(echoedAnswer, [])).toEqual(echoedAnswer)
  })

  it('a decision that reverses or changes what the memory said is kept, though its topic words are the same', () => {
    const note = '---\ntitle: Webhook logging\n---\nWe decided to log every failed stripe webhook verification attempt. Retries: 3, with backoff.\n'
    const answers = [
      'We decided not to log every failed stripe webhook verification attempt.',
      "We decided we won't log every failed stripe webhook verification attempt.",
      'We decided to retry failed stripe webhook deliveries 5 times, with backoff.',
    ]
    const digest = digestOf(answers.map((text) => ({kind: 'answer' as const, text})), '/repo', ['notes/webhook-logging.md'])
    expect(withoutEchoes(digest, [note]).decisions).toEqual(digest.decisions)
    // Said the same way round, it is still an echo.
    const same = digestOf([{kind: 'answer', text: 'As before, we decided to log every failed stripe webhook verification attempt.'}], '/repo', ['notes/webhook-logging.md'])
    expect(withoutEchoes(same, [note]).decisions).toEqual([])
  })

  it('a decision that only restates a shared event the session was shown is an echo; a new number or a reversal is not', () => {
    const event = 'We use PostgreSQL 16 for the shop database'
    const told = digestOf([{kind: 'answer', text: 'We decided to use PostgreSQL 16 for the shop database, as pinned in the memory.'}])
    expect(told.decisions).toHaveLength(1)
    expect(withoutEchoes(told, [event])).toEqual({decisions: [], files: [], learned: undefined, sources: []})
    for (const news of ['We decided to use PostgreSQL 17 for the shop database, as pinned in the memory.', 'We decided not to use PostgreSQL 16 for the shop database any more.', 'We decided to use PostgreSQL 16 for the shop database and Redis for its sessions cache.']) {
      expect(withoutEchoes(digestOf([{kind: 'answer', text: news}]), [event]).decisions, news).toEqual([news])
    }
    // The words that frame a decision say nothing of its topic: framing alone is never an echo.
    expect(withoutEchoes(digestOf([{kind: 'answer', text: 'We decided and agreed on PostgreSQL, as already noted.'}]), [event]).decisions).toHaveLength(1)
  })

  it('an episode the session read counts as memory it used: an answer quoting it is an echo too', () => {
    const items: DigestItem[] = [
      {kind: 'ask', text: 'how do we ship lithium batteries'},
      {kind: 'tool', name: 'Read', input: {file_path: '/repo/.memory/episodes/2026-02-12/claude-s1.md'}},
      {kind: 'tool', name: 'Edit', input: {file_path: '/repo/src/hazmat.ts'}},
      {kind: 'answer', text: 'According to the memory: lithium batteries only go with the ground services, we decided that in February.'},
    ]
    expect(memoryFilesUsed(items, '/repo', ['notes/shipping.md'], '/repo/.memory')).toEqual(['notes/shipping.md', 'episodes/2026-02-12/claude-s1.md'])
    const episode = '# Episode: Claude Code session s1\n\n## Decided\n- Lithium batteries only go with the ground services; we decided that in February.\n'
    const digest = digestOf(items, '/repo', ['notes/shipping.md'], '/repo/.memory')
    expect(digest.sources).toEqual(['notes/shipping.md'])
    expect(withoutEchoes(digest, [episode])).toMatchObject({decisions: [], learned: undefined, files: [{path: 'src/hazmat.ts', verbs: ['edited']}]})
  })

  it('reads apply_patch headers and a Codex rollout without its injected context', () => {
    expect(patchTouches('*** Begin Patch\n*** Update File: src/a.ts\n@@\n*** Add File: src/b.ts\n*** Delete File: old.ts\n*** End Patch')).toEqual([
      ['src/a.ts', 'edited'],
      ['src/b.ts', 'created'],
      ['old.ts', 'deleted'],
    ])
    const rollout = codexItems(parseCodexRollout(codexRollout('s1', '/repo', [{prompt: 'Rename the flag', tools: [['Edit', {file_path: 'src/flags.ts'}]], answer: 'Renamed.'}]) + 'not json\n', 'rollout-s1.jsonl'))
    expect(rollout.cwd).toBe('/repo')
    expect(digestOf(rollout.items, rollout.cwd)).toEqual({decisions: [], files: [{path: 'src/flags.ts', verbs: ['edited']}], learned: 'Renamed.', sources: []})
  })

  it('the summary reads back as it was written, and the union of two digests lists nothing twice', () => {
    const digest = digestOf(items, '/repo', ['notes/deploy.md'])
    expect(parseDigest(renderDigest(digest))).toEqual(digest)
    const later = digestOf([...items, {kind: 'ask', text: 'Ship it'}, {kind: 'tool', name: 'Write', input: {file_path: '/repo/scripts/deploy.sh'}}, {kind: 'answer', text: 'Shipped.'}], '/repo', ['runbooks/ship.md'])
    const merged = mergeDigests(digest, later)
    expect(merged.sources).toEqual(['notes/deploy.md', 'runbooks/ship.md'])
    expect(merged.files[0]).toEqual({path: 'scripts/deploy.sh', verbs: ['written', 'edited', 'read']})
    expect(merged.learned).toBe('Shipped.')
    expect(mergeDigests(merged, later)).toEqual(merged)
  })

  it('an episode of an earlier version keeps what it decided, touched and answered; its prompts are left behind', () => {
    const old = '# Episode: Claude Code session 1a2b3c4d: How are the Stripe webhooks verified?\nDate: 2026-09-01\n\nSummary:\n## Asked\n- How are the Stripe webhooks verified?\n\n## Decided\n- We chose three retries.\n\n## Files touched\n- `src/hooks.ts` (edited)\n\n## Last answer\nWith the signing secret.\n'
    expect(parseDigest(old)).toEqual({decisions: ['We chose three retries.'], files: [{path: 'src/hooks.ts', verbs: ['edited']}], learned: 'With the signing secret.', sources: []})
  })

  it('for any digests: merging is idempotent and keeps everything either side had (within the bounds)', () => {
    const line = fc.string({minLength: 1, maxLength: 30}).map((s) => s.replace(/\s+/g, ' ').trim()).filter((s) => s !== '' && !s.startsWith('#') && s !== 'Summary:')
    const digest: fc.Arbitrary<SessionDigest> = fc.record({
      decisions: fc.uniqueArray(line, {maxLength: 5}),
      files: fc.uniqueArray(fc.record({path: line.map((s) => s.replace(/[`()]/g, '_')), verbs: fc.subarray(['created', 'edited', 'read'], {minLength: 1})}), {maxLength: 5, selector: (f) => f.path}),
      learned: fc.option(line, {nil: undefined}),
      sources: fc.uniqueArray(line.map((s) => `notes/${s.replace(/\s/g, '-')}.md`), {maxLength: 4}),
    })
    fc.assert(
      fc.property(digest, digest, (a, b) => {
        const merged = mergeDigests(a, b)
        expect(mergeDigests(merged, b)).toEqual(merged)
        expect(parseDigest(renderDigest(merged))).toEqual(merged)
        for (const decision of [...a.decisions, ...b.decisions]) expect(merged.decisions).toContain(decision)
        for (const source of [...a.sources, ...b.sources]) expect(merged.sources).toContain(source)
        for (const file of [...a.files, ...b.files]) expect(merged.files.map((f) => f.path)).toContain(file.path)
      }),
      {numRuns: 200},
    )
  })

  it('the file: the episode template with front matter, a title from what the session decided, one session one path', () => {
    const text = renderSessionEpisode({agent: 'gemini', sessionId: '7c2d9e1f-4a5b', date: '2026-09-01', project: 'demo'}, digestOf(items, '/repo'))
    const file = parseMemoryFile('episodes/2026-09-01/gemini-7c2d9e1f-4a5b.md', text)
    expect(file.frontMatter).toMatchObject({title: 'Gemini CLI session 7c2d9e1f: The root cause was a missing lock.', tags: ['session', 'gemini'], project: 'demo', kind: 'episode'})
    expect(file.body).toMatch(/^# Episode: Gemini CLI session 7c2d9e1f: The root cause was a missing lock.\nDate: 2026-09-01\nTopic: The root cause was a missing lock.\nOutcome: Added test\/deploy.test.sh.\nRefs: gemini session 7c2d9e1f-4a5b\n/)
    expect(file.body).not.toContain('idempotent')
    const changedOnly = renderSessionEpisode({agent: 'claude', sessionId: 'abc', date: '2026-09-01'}, digestOf(items.slice(0, 4), '/repo'))
    expect(changedOnly).toContain('title: "Claude Code session abc: changed scripts/deploy.sh"')
    expect(episodePath('2026-09-01', 'chatgpt', 'Thread/../../etc')).toBe('episodes/2026-09-01/chatgpt-thread-etc.md')
  })

  it('a Codex episode is tagged and referred to as the jarvis agent chatgpt, the name its file has', () => {
    const text = renderSessionEpisode({agent: 'codex', sessionId: '0198c1d2-7a3b', date: '2026-09-01'}, digestOf(items, '/repo'))
    const file = parseMemoryFile(episodePath('2026-09-01', 'chatgpt', '0198c1d2-7a3b'), text)
    expect(file.frontMatter.tags).toEqual(['session', 'chatgpt'])
    expect(file.body).toContain('\nRefs: chatgpt session 0198c1d2-7a3b\n')
    expect(file.body).toContain('# Episode: Codex CLI session 0198c1d2:')
    expect(text).not.toMatch(/\bcodex\b/)
  })
})

describe('each agent’s real transcript becomes an episode without injected text (fixtures/hook-context)', () => {
  const FIXTURES = new URL('../../fixtures/hook-context/', import.meta.url).pathname
  const INJECTED = /\[MEMORY CONTEXT\]|\[JARVIS SHARED MEMORY\]|hook_context|system-reminder|shared memory could not be read/
  const cases: Array<[HookAgent, string]> = [
    ['claude', 'claude/transcript.jsonl'],
    ['gemini', 'gemini/transcript.jsonl'],
    ['gemini', 'gemini/transcript-unreadable.jsonl'],
    ['codex', 'codex/rollout.jsonl'],
  ]
  for (const [agent, file] of cases) {
    it(`${file}: the question is read as the person typed it, and nothing of the hooks' context reaches the episode`, async () => {
      const read = await readTranscriptItems(agent, join(FIXTURES, file))
      expect(read.items.filter((i) => i.kind === 'ask').map((i) => (i as {text: string}).text)).toEqual(['How are the Stripe webhooks verified?'])
      // Rendered as the recording hook would write it (given the note the prompt hook showed).
      const digest = digestOf(read.items, read.cwd, ['notes/billing.md'])
      const text = renderSessionEpisode({agent, sessionId: 'fixture', date: '2026-09-01'}, digest)
      expect(text).not.toMatch(INJECTED)
      expect(text).not.toContain('How are the Stripe webhooks verified?')
    })
  }
})

describe('recording an episode in a tree', () => {
  it('one file per session: the same digest twice changes nothing; a later hook extends it', async () => {
    const {root} = await initTree(await tempDir('jarvis-episode-'), {})
    dirs.push(root)
    const base = {agent: 'claude' as const, agentId: 'claude', sessionId: 's-1', adds: true, startDate: '2026-09-01', now: new Date('2026-09-02T01:00:00Z'), lockTimeoutMs: 1000}
    const first = await recordEpisode(root, {...base, digest: digestOf(items.slice(0, 5), '/repo')})
    expect(first).toEqual({path: 'episodes/2026-09-01/claude-s-1.md', changed: true, leftOut: undefined})
    expect(await recordEpisode(root, {...base, digest: digestOf(items.slice(0, 5), '/repo')})).toMatchObject({changed: false})
    // The next day, without a start date (no transcript), from a hook that saw only an answer: the same file, extended.
    const later = await recordEpisode(root, {...base, adds: false, startDate: undefined, digest: digestOf([{kind: 'answer', text: 'All done.'}])})
    expect(later).toMatchObject({path: 'episodes/2026-09-01/claude-s-1.md', changed: true})
    const text = await readFile(join(root, '.memory', later.path), 'utf8')
    expect(text).toContain('- We decided to use flock instead of a pid file.')
    expect(text).toContain('## Learned\nAll done.')
  })

  it('a session that only asked writes no episode', async () => {
    const {root} = await initTree(await tempDir('jarvis-episode-'), {})
    dirs.push(root)
    const asked: DigestItem[] = [{kind: 'ask', text: 'How are the Stripe webhooks verified?'}, {kind: 'answer', text: 'With the signing secret.'}]
    const result = await recordEpisode(root, {agent: 'gemini', agentId: 'gemini', sessionId: 's-3', adds: false, digest: digestOf(asked, '/repo', ['notes/billing.md']), now: new Date('2026-09-01T10:00:00Z'), lockTimeoutMs: 1000})
    expect(result).toMatchObject({changed: false, skipped: true})
    await expect(readFile(join(root, '.memory', result.path), 'utf8')).rejects.toThrow(/ENOENT/)
  })

  it('a secret in one line leaves that line out; the rest is written', async () => {
    const {root} = await initTree(await tempDir('jarvis-episode-'), {})
    dirs.push(root)
    const token = fakeGithubToken()
    const digest = digestOf([{kind: 'ask', text: 'We decided to deploy the app on Fridays.'}, {kind: 'answer', text: `We decided to log in with ${token} from now on.`}, {kind: 'answer', text: 'Deployed.'}])
    const result = await recordEpisode(root, {agent: 'claude', agentId: 'claude', sessionId: 's-2', adds: true, digest, now: new Date('2026-09-01T10:00:00Z'), lockTimeoutMs: 1000})
    expect(result.changed).toBe(true)
    expect(result.leftOut).toMatch(/^left out 1 line of the episode holding a GitHub/)
    const text = await readFile(join(root, '.memory', result.path), 'utf8')
    expect(text).toContain('- We decided to deploy the app on Fridays.')
    expect(text).not.toContain(token)
  })

  it('a tree locked past the wait loses nothing: the digest waits in .nexus/, and the next hook that gets the lock writes it first', async () => {
    const {root} = await initTree(await tempDir('jarvis-episode-'), {})
    dirs.push(root)
    const decided = (text: string) => digestOf([{kind: 'answer', text}])
    const session = {agent: 'codex' as const, agentId: 'chatgpt', sessionId: 's-locked', adds: true, startDate: '2026-09-01', lockTimeoutMs: 50}
    const pending = () => readdir(join(root, '.nexus', 'pending-episodes')).catch(() => [] as string[])
    // Another jarvis (a sync) holds the tree while the session's last turns end.
    let release!: () => void
    let locked!: () => void
    const taken = new Promise<void>((resolve) => (locked = resolve))
    const holder = withTreeLock(root, {command: 'jarvis sync'}, () => new Promise<void>((resolve) => ((release = resolve), locked())))
    await taken
    try {
      const stop = await recordEpisode(root, {...session, digest: decided('We decided to use Redis for the job queue.'), now: new Date('2026-09-01T10:00:00Z')})
      expect(stop).toMatchObject({path: 'episodes/2026-09-01/chatgpt-s-locked.md', changed: false, kept: expect.stringMatching(/is locked by process \d+.*: the episode waits in \.nexus\/pending-episodes\/\S+\.json/)})
      const end = await recordEpisode(root, {...session, digest: decided('We decided to keep the jobs for a week.'), now: new Date('2026-09-01T10:05:00Z')})
      expect(end.kept).toBeDefined()
      await expect(readFile(join(root, '.memory', stop.path), 'utf8')).rejects.toThrow(/ENOENT/)
      expect(await pending()).toHaveLength(2)
    } finally {
      release()
      await holder
    }
    // The next hook of any session writes them into their episode before its own.
    const next = await recordEpisode(root, {...session, agent: 'claude', agentId: 'claude', sessionId: 's-next', digest: decided('We decided to pin Node 20.'), now: new Date('2026-09-01T11:00:00Z')})
    expect(next).toMatchObject({path: 'episodes/2026-09-01/claude-s-next.md', changed: true, earlier: [{path: 'episodes/2026-09-01/chatgpt-s-locked.md', changed: true}, {path: 'episodes/2026-09-01/chatgpt-s-locked.md', changed: true}]})
    const episode = await readFile(join(root, '.memory', 'episodes', '2026-09-01', 'chatgpt-s-locked.md'), 'utf8')
    expect(episode).toContain('- We decided to use Redis for the job queue.\n- We decided to keep the jobs for a week.')
    expect(parseMemoryFile('x.md', episode).frontMatter.updated).toBe('2026-09-01T10:05:00.000Z')
    expect(await pending()).toEqual([])
    expect((await recordEpisode(root, {...session, sessionId: 's-next', agent: 'claude', agentId: 'claude', digest: decided('We decided to pin Node 20.'), now: new Date('2026-09-01T11:00:00Z')})).earlier).toBeUndefined()
  })
})
