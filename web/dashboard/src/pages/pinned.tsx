/** Pinned memory as an agent reads it when it starts: the snapshot of the scopes it asks for. */
import {useCallback, useEffect, useState} from 'preact/hooks'

import {api, type ActiveProject, messageOf, query, type StoredEvent, writesEvents} from '../api.js'
import {EventCard, Markdown, Notice, useAnswerGuard, useLive, useSession} from '../ui.js'

interface Snapshot {
  pinned_md: string
  recent_events: StoredEvent[]
  ruleset_stamp: string
  snapshot_id: string
}

export function PinnedPage() {
  const {agentId} = useSession()
  const [scopes, setScopes] = useState<string | null>(null)
  const [snapshot, setSnapshot] = useState<Snapshot | null>(null)
  const [error, setError] = useState<string | null>(null)

  // What an agent of this token asks for by default: global, its own scope (a key outside the event log's agents,
  // a CI job's, keeps none), and the active project's.
  useEffect(() => {
    if (agentId === null || scopes !== null) return
    const own = writesEvents(agentId) ? `global,agent:${agentId}` : 'global'
    api<ActiveProject>('GET', '/api/projects/active').then(
      (active) => setScopes(`${own},project:${active.projectId}`),
      // No active project (404) or none readable: the agent's default scopes.
      () => setScopes(own),
    )
  }, [agentId, scopes])

  const answers = useAnswerGuard()
  const load = useCallback(async () => {
    if (scopes === null) return
    // The snapshot of scopes typed earlier can come last: only the newest request's answer is shown.
    const current = answers.replacing()
    try {
      const answer = await api<Snapshot>('GET', `/v1/memory/snapshot${query({scopes: scopes.replace(/\s+/g, ''), limit_recent: 20})}`)
      if (!current()) return
      setSnapshot(answer)
      setError(null)
    } catch (failure) {
      if (!current()) return
      // The snapshot of the scopes before is not what these scopes hold: shown under the error, it would pass for it.
      setSnapshot(null)
      setError(messageOf(failure))
    }
  }, [answers, scopes])
  useEffect(() => void load(), [load])
  useLive((message) => {
    if (message.type === 'EVENT_APPENDED' || message.type === 'RECONNECTED') void load()
  })

  return (
    <section aria-labelledby="pinned-title">
      <h1 id="pinned-title">Pinned memory</h1>
      <p>What an agent reads when it starts: the newest live event of each key in these scopes, then the recent events.</p>
      <form class="filters" onSubmit={(e) => (e.preventDefault(), void load())}>
        <div class="grow">
          <label for="p-scopes">Scopes (comma-separated)</label>
          <input id="p-scopes" value={scopes ?? ''} onChange={(e) => setScopes(e.currentTarget.value)} />
        </div>
      </form>
      {error ? <Notice tone="error">{error}</Notice> : null}
      {snapshot ? (
        <>
          {snapshot.pinned_md.trim() === '' ? <p>Nothing is pinned in these scopes.</p> : <Markdown text={snapshot.pinned_md} class="pinned" />}
          <p class="meta">
            {snapshot.ruleset_stamp} · snapshot {snapshot.snapshot_id}
          </p>
          <h2>Recent events</h2>
          {snapshot.recent_events.length === 0 ? <p>No recent events.</p> : null}
          <div class="event-list">
            {snapshot.recent_events.map((event) => (
              <EventCard key={event.event_id} event={event} />
            ))}
          </div>
        </>
      ) : error ? null : (
        <p>Loading…</p>
      )}
    </section>
  )
}
