/** What the session-start context lists of the memory files: the newest episodes, by the time each says. A temp tree. */
import {utimes} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {newestEpisodes} from '../../src/hook/context.js'
import {digestOf, recordEpisode} from '../../src/hook/episode.js'
import {initTree, readMemoryFile, writeMemoryFile} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

async function tree(): Promise<string> {
  const {root} = await initTree(await tempDir('jarvis-context-'), {})
  dirs.push(root)
  return root
}

const decided = (text: string) => digestOf([{kind: 'answer', text}])

describe('the newest episodes a session starts with', () => {
  it('are the sessions that changed last, whatever their ids; not the alphabetically last of the day', async () => {
    const root = await tree()
    const sessions = ['zz-first', 'yy-second', 'xx-third', 'ww-fourth']
    for (const [i, sessionId] of sessions.entries()) {
      const now = new Date(Date.parse('2026-12-07T10:00:00.000Z') + i * 60_000)
      await recordEpisode(root, {agent: 'claude', agentId: 'claude', sessionId, adds: true, digest: decided(`We decided to use approach ${sessionId} for the cache layer.`), now, lockTimeoutMs: 1000})
    }
    expect(await newestEpisodes(root, new Date('2026-12-07T12:00:00.000Z'), 3)).toEqual([
      'episodes/2026-12-07/claude-ww-fourth.md',
      'episodes/2026-12-07/claude-xx-third.md',
      'episodes/2026-12-07/claude-yy-second.md',
    ])
    // A later hook of the first session that adds to it makes it the newest; one that adds nothing leaves its time.
    await recordEpisode(root, {agent: 'claude', agentId: 'claude', sessionId: 'yy-second', adds: true, digest: decided('We decided to use approach yy-second for the cache layer.'), now: new Date('2026-12-07T11:00:00.000Z'), lockTimeoutMs: 1000})
    await recordEpisode(root, {agent: 'claude', agentId: 'claude', sessionId: 'zz-first', adds: true, digest: decided('We decided to keep a TTL of an hour.'), now: new Date('2026-12-07T11:30:00.000Z'), lockTimeoutMs: 1000})
    expect(await newestEpisodes(root, new Date('2026-12-07T12:00:00.000Z'), 3)).toEqual([
      'episodes/2026-12-07/claude-zz-first.md',
      'episodes/2026-12-07/claude-ww-fourth.md',
      'episodes/2026-12-07/claude-xx-third.md',
    ])
    expect(await readMemoryFile(root, 'episodes/2026-12-07/claude-zz-first.md')).toMatch(/^updated: 2026-12-07T11:30:00\.000Z$/m)
    expect(await readMemoryFile(root, 'episodes/2026-12-07/claude-yy-second.md')).toMatch(/^updated: 2026-12-07T10:01:00\.000Z$/m)
  })

  it('by the time the episode says, not its file time: a sync pull writes old episodes after new ones', async () => {
    const root = await tree()
    const times = {'old-a': '2026-12-05T09:00:00.000Z', 'new-b': '2026-12-07T16:00:00.000Z', 'old-c': '2026-12-07T08:00:00.000Z', 'new-d': '2026-12-07T15:00:00.000Z'}
    for (const [sessionId, at] of Object.entries(times)) {
      const written = await recordEpisode(root, {agent: 'gemini', agentId: 'gemini', sessionId, adds: true, digest: decided(`We decided to go with plan ${sessionId}.`), now: new Date(at), lockTimeoutMs: 1000})
      // Pulled in the order of the list, the older sessions last: their files are the newest.
      const pulled = new Date(Date.parse('2026-12-07T17:00:00.000Z') + Object.keys(times).indexOf(sessionId) * 1000)
      await utimes(join(root, '.memory', written.path), pulled, pulled)
    }
    expect(await newestEpisodes(root, new Date('2026-12-07T18:00:00.000Z'), 3)).toEqual([
      'episodes/2026-12-07/gemini-new-b.md',
      'episodes/2026-12-07/gemini-new-d.md',
      'episodes/2026-12-07/gemini-old-c.md',
    ])
    // An episode a person wrote (or one of an earlier version) says only its day; one older than 14 days is not listed.
    await writeMemoryFile(root, 'episodes/2026-12-06/cache-rollout.md', '---\ntitle: Cache rollout\ndate: 2026-12-06\nkind: episode\n---\n# Episode: Cache rollout\n')
    await recordEpisode(root, {agent: 'claude', agentId: 'claude', sessionId: 'older', adds: true, digest: decided('We decided to go with plan older.'), now: new Date('2026-11-01T10:00:00.000Z'), lockTimeoutMs: 1000})
    expect(await newestEpisodes(root, new Date('2026-12-07T18:00:00.000Z'), 10)).toEqual([
      'episodes/2026-12-07/gemini-new-b.md',
      'episodes/2026-12-07/gemini-new-d.md',
      'episodes/2026-12-07/gemini-old-c.md',
      'episodes/2026-12-06/cache-rollout.md',
      'episodes/2026-12-05/gemini-old-a.md',
    ])
  })
})
