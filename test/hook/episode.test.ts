/** The episode a recording hook writes: extraction, the union of later hooks, the file format, secrets. Pure parts and a temp tree. */
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import fc from 'fast-check'
import {afterAll, describe, expect, it} from 'vitest'

import {digestOf, episodePath, mergeDigests, parseDigest, patchTouches, recordEpisode, renderDigest, renderSessionEpisode, type SessionDigest} from '../../src/hook/episode.js'
import {codexItems, type DigestItem} from '../../src/hook/transcript.js'
import {parseCodexRollout} from '../../src/session/codex-read.js'
import {parseMemoryFile} from '../../src/files/index.js'
import {initTree} from '../../src/store/index.js'
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
  it('asks, decisions, files touched (relative to the session directory), the last answer', () => {
    expect(digestOf(items, '/repo')).toEqual({
      asks: ['Make the deploy script idempotent', 'Also add a test'],
      decisions: ['The root cause was a missing lock.', 'We decided to use flock instead of a pid file.'],
      files: [
        {path: 'scripts/deploy.sh', verbs: ['edited', 'read']},
        {path: 'test/deploy.test.sh', verbs: ['written']},
      ],
      lastAnswer: 'Added test/deploy.test.sh.',
    })
  })

  it('reads apply_patch headers and a Codex rollout without its injected context', () => {
    expect(patchTouches('*** Begin Patch\n*** Update File: src/a.ts\n@@\n*** Add File: src/b.ts\n*** Delete File: old.ts\n*** End Patch')).toEqual([
      ['src/a.ts', 'edited'],
      ['src/b.ts', 'created'],
      ['old.ts', 'deleted'],
    ])
    const rollout = codexItems(parseCodexRollout(codexRollout('s1', '/repo', [{prompt: 'Rename the flag', tools: [['Edit', {file_path: 'src/flags.ts'}]], answer: 'Renamed.'}]) + 'not json\n', 'rollout-s1.jsonl'))
    expect(rollout.cwd).toBe('/repo')
    expect(digestOf(rollout.items, rollout.cwd)).toEqual({asks: ['Rename the flag'], decisions: [], files: [{path: 'src/flags.ts', verbs: ['edited']}], lastAnswer: 'Renamed.'})
  })

  it('the summary reads back as it was written, and the union of two digests lists nothing twice', () => {
    const digest = digestOf(items, '/repo')
    expect(parseDigest(renderDigest(digest))).toEqual(digest)
    const later = digestOf([...items, {kind: 'ask', text: 'Ship it'}, {kind: 'tool', name: 'Write', input: {file_path: '/repo/scripts/deploy.sh'}}, {kind: 'answer', text: 'Shipped.'}], '/repo')
    const merged = mergeDigests(digest, later)
    expect(merged.asks).toEqual(['Make the deploy script idempotent', 'Also add a test', 'Ship it'])
    expect(merged.files[0]).toEqual({path: 'scripts/deploy.sh', verbs: ['written', 'edited', 'read']})
    expect(merged.lastAnswer).toBe('Shipped.')
    expect(mergeDigests(merged, later)).toEqual(merged)
  })

  it('for any digests: merging is idempotent and keeps everything either side had (within the bounds)', () => {
    const line = fc.string({minLength: 1, maxLength: 30}).map((s) => s.replace(/\s+/g, ' ').trim()).filter((s) => s !== '' && !s.startsWith('#'))
    const digest: fc.Arbitrary<SessionDigest> = fc.record({
      asks: fc.uniqueArray(line, {maxLength: 8}),
      decisions: fc.uniqueArray(line, {maxLength: 5}),
      files: fc.uniqueArray(fc.record({path: line.map((s) => s.replace(/[`()]/g, '_')), verbs: fc.subarray(['created', 'edited', 'read'], {minLength: 1})}), {maxLength: 5, selector: (f) => f.path}),
      lastAnswer: fc.option(line, {nil: undefined}),
    })
    fc.assert(
      fc.property(digest, digest, (a, b) => {
        const merged = mergeDigests(a, b)
        expect(mergeDigests(merged, b)).toEqual(merged)
        expect(parseDigest(renderDigest(merged))).toEqual(merged)
        for (const ask of [...a.asks, ...b.asks]) expect(merged.asks).toContain(ask)
        for (const file of [...a.files, ...b.files]) expect(merged.files.map((f) => f.path)).toContain(file.path)
      }),
      {numRuns: 200},
    )
  })

  it('the file: the episode template with front matter, a title from the first ask, one session one path', () => {
    const text = renderSessionEpisode({agent: 'gemini', sessionId: '7c2d9e1f-4a5b', date: '2026-09-01', project: 'demo'}, digestOf(items, '/repo'))
    const file = parseMemoryFile('episodes/2026-09-01/gemini-7c2d9e1f-4a5b.md', text)
    expect(file.frontMatter).toMatchObject({title: 'Gemini CLI session 7c2d9e1f: Make the deploy script idempotent', tags: ['session', 'gemini'], project: 'demo', kind: 'episode'})
    expect(file.body).toMatch(/^# Episode: Gemini CLI session 7c2d9e1f: Make the deploy script idempotent\nDate: 2026-09-01\nTopic: Make the deploy script idempotent\nOutcome: Added test\/deploy.test.sh.\nRefs: gemini session 7c2d9e1f-4a5b\n/)
    expect(episodePath('2026-09-01', 'chatgpt', 'Thread/../../etc')).toBe('episodes/2026-09-01/chatgpt-thread-etc.md')
  })
})

describe('recording an episode in a tree', () => {
  it('one file per session: the same digest twice changes nothing; a later hook extends it', async () => {
    const {root} = await initTree(await tempDir('jarvis-episode-'), {})
    dirs.push(root)
    const base = {agent: 'claude' as const, agentId: 'claude', sessionId: 's-1', startDate: '2026-09-01', now: new Date('2026-09-02T01:00:00Z'), lockTimeoutMs: 1000}
    const first = await recordEpisode(root, {...base, digest: digestOf(items.slice(0, 5), '/repo')})
    expect(first).toEqual({path: 'episodes/2026-09-01/claude-s-1.md', changed: true, leftOut: undefined})
    expect(await recordEpisode(root, {...base, digest: digestOf(items.slice(0, 5), '/repo')})).toMatchObject({changed: false})
    // The next day, without a start date (no transcript): the same file, extended.
    const later = await recordEpisode(root, {...base, startDate: undefined, digest: digestOf([{kind: 'answer', text: 'All done.'}])})
    expect(later).toMatchObject({path: 'episodes/2026-09-01/claude-s-1.md', changed: true})
    const text = await readFile(join(root, '.memory', later.path), 'utf8')
    expect(text).toContain('- Make the deploy script idempotent')
    expect(text).toContain('## Last answer\nAll done.')
  })

  it('a secret in one line leaves that line out; the rest is written', async () => {
    const {root} = await initTree(await tempDir('jarvis-episode-'), {})
    dirs.push(root)
    const token = fakeGithubToken()
    const digest = digestOf([{kind: 'ask', text: 'Deploy the app'}, {kind: 'ask', text: `Log in with ${token}`}, {kind: 'answer', text: 'Deployed.'}])
    const result = await recordEpisode(root, {agent: 'claude', agentId: 'claude', sessionId: 's-2', digest, now: new Date('2026-09-01T10:00:00Z'), lockTimeoutMs: 1000})
    expect(result.changed).toBe(true)
    expect(result.leftOut).toMatch(/^left out 1 line of the episode holding a GitHub/)
    const text = await readFile(join(root, '.memory', result.path), 'utf8')
    expect(text).toContain('- Deploy the app')
    expect(text).not.toContain(token)
  })
})
