/**
 * The event log: filters by scope, kind, agent and text; supersede an event with new content, or forget it, each
 * after a confirmation. Forgetting uses the log's own two steps: a `deprecation` event supersedes it (agents then
 * see the key withdrawn), and the cleanup deletes the superseded event, text and all.
 */
import {useCallback, useEffect, useState} from 'preact/hooks'

import {AGENT_IDS, api, ApiError, EVENT_KINDS, messageOf, query, type StoredEvent, webRunId, writesEvents} from '../api.js'
import {AnyOf, ConfirmDialog, EventCard, Notice, type Tone, useAnswerGuard, useLive, useSession} from '../ui.js'

interface Filters {
  scope: string
  kind: string
  agent: string
  q: string
  includeDeprecated: boolean
}

type Pending = {action: 'forget'; event: StoredEvent} | {action: 'supersede'; event: StoredEvent; content: string}

const LIST_LIMIT = 100

export function EventsPage() {
  const {agentId} = useSession()
  const [filters, setFilters] = useState<Filters>({scope: '', kind: '', agent: '', q: '', includeDeprecated: false})
  const [events, setEvents] = useState<StoredEvent[] | null>(null)
  const [total, setTotal] = useState(0)
  const [error, setError] = useState<string | null>(null)
  const [notice, setNotice] = useState<{tone: Tone; text: string} | null>(null)
  const [editing, setEditing] = useState<{id: string; content: string} | null>(null)
  const [pending, setPending] = useState<Pending | null>(null)

  const answers = useAnswerGuard()

  const load = useCallback(async () => {
    // An answer for filters typed earlier can come last: only the newest request's answer is shown.
    const current = answers.replacing()
    try {
      const answer = await api<{events: StoredEvent[]; total: number}>(
        'GET',
        `/v1/memory/events${query({scope: filters.scope, kind: filters.kind, agent: filters.agent, q: filters.q, include_deprecated: filters.includeDeprecated, limit: LIST_LIMIT})}`,
      )
      if (!current()) return
      setEvents(answer.events)
      setTotal(answer.total)
      setError(null)
    } catch (failure) {
      if (!current()) return
      setError(messageOf(failure))
      // Refused filters (400, 403): the list shown was for other filters, so it goes. A server away keeps the last one.
      if (failure instanceof ApiError && failure.status >= 400 && failure.status < 500) setEvents(null)
    }
  }, [answers, filters])

  useEffect(() => {
    // Typing in the text filter asks once the person pauses.
    const timer = window.setTimeout(() => void load(), 200)
    return () => window.clearTimeout(timer)
  }, [load])
  useLive((message) => {
    if (message.type === 'EVENT_APPENDED' || message.type === 'RECONNECTED') void load()
  })

  const set = (patch: Partial<Filters>) => setFilters((current) => ({...current, ...patch}))

  const confirm = async () => {
    if (pending === null) return
    const {event} = pending
    setPending(null)
    setNotice(null)
    try {
      if (pending.action === 'supersede') {
        const answer = await api<{event_id: string; warnings: string[]}>('POST', '/v1/memory/append', {
          run_id: webRunId(),
          scope: event.scope,
          kind: event.kind,
          dedupe_key: event.dedupe_key,
          confidence: event.confidence,
          content_md: pending.content,
          source: {system: 'web'},
          supersedes: event.event_id,
        })
        setEditing(null)
        setNotice({tone: 'success', text: `Superseded ${event.event_id} with ${answer.event_id}.${answer.warnings.length ? ` ${answer.warnings.join(' ')}` : ''}`})
      } else {
        if (!event.deprecated) {
          await api('POST', '/v1/memory/append', {
            run_id: webRunId(),
            scope: event.scope,
            kind: 'deprecation',
            dedupe_key: event.dedupe_key,
            confidence: 'high',
            content_md: `Forgotten by a person in the dashboard (was ${event.event_id}).`,
            source: {system: 'web'},
            supersedes: event.event_id,
          })
        }
        const answer = await api<{deleted: string[]}>('POST', '/v1/memory/cleanup', {older_than_days: 0, dry_run: false, event_ids: [event.event_id], scope: event.scope})
        setNotice(
          answer.deleted.includes(event.event_id)
            ? {tone: 'success', text: `Forgot ${event.event_id}: its text is deleted from the shared memory.`}
            : {tone: 'error', text: `${event.event_id} is superseded but was not deleted (it may be newer than this second); forget it again in a moment.`},
        )
      }
    } catch (failure) {
      setNotice({tone: 'error', text: messageOf(failure)})
    }
    await load()
  }

  return (
    <section aria-labelledby="events-title">
      <h1 id="events-title">Event log</h1>
      {agentId !== null && !writesEvents(agentId) ? (
        <Notice tone="info">
          This key speaks for {agentId}, which is not one of the event log's agents ({AGENT_IDS.join(', ')}): it reads the events, but cannot supersede or forget them. Sign in with an agent's key for that.
        </Notice>
      ) : null}
      <form class="filters" onSubmit={(e) => (e.preventDefault(), void load())} aria-label="Filters">
        <div>
          <label for="f-scope">Scope</label>
          <input id="f-scope" list="scope-list" placeholder="any" value={filters.scope} onInput={(e) => set({scope: e.currentTarget.value})} />
          <datalist id="scope-list">
            <option value="global" />
            <option value="project:*" />
            <option value="agent:*" />
            {writesEvents(agentId) ? <option value={`agent:${agentId}`} /> : null}
          </datalist>
        </div>
        <AnyOf id="f-kind" label="Kind" options={EVENT_KINDS} value={filters.kind} onChange={(kind) => set({kind})} />
        <AnyOf id="f-agent" label="Agent" options={AGENT_IDS} value={filters.agent} onChange={(agent) => set({agent})} />
        <div class="grow">
          <label for="f-text">Text</label>
          <input id="f-text" type="search" value={filters.q} onInput={(e) => set({q: e.currentTarget.value})} />
        </div>
        <div class="check">
          <input id="f-deprecated" type="checkbox" checked={filters.includeDeprecated} onChange={(e) => set({includeDeprecated: e.currentTarget.checked})} />
          <label for="f-deprecated">Show superseded</label>
        </div>
      </form>
      {notice ? <Notice tone={notice.tone}>{notice.text}</Notice> : null}
      {error ? <Notice tone="error">{error}</Notice> : null}
      {events === null ? (
        error ? null : <p>Loading…</p>
      ) : (
        <>
          <p class="count" aria-live="polite">
            {total === 0 ? 'No events match.' : `${total} event${total === 1 ? '' : 's'}${total > events.length ? `, the newest ${events.length} shown` : ''}.`}
          </p>
          <div class="event-list">
            {events.map((event) => (
              <EventCard key={event.event_id} event={event}>
                {editing?.id === event.event_id ? (
                  <form class="supersede" onSubmit={(e) => (e.preventDefault(), setPending({action: 'supersede', event, content: editing.content}))}>
                    <label for={`new-${event.event_id}`}>New content for {event.dedupe_key}</label>
                    <textarea id={`new-${event.event_id}`} rows={4} value={editing.content} onInput={(e) => setEditing({id: event.event_id, content: e.currentTarget.value})} />
                    <div class="actions">
                      <button type="submit" disabled={editing.content.trim() === ''}>
                        Supersede…
                      </button>
                      <button type="button" onClick={() => setEditing(null)}>
                        Cancel
                      </button>
                    </div>
                  </form>
                ) : !writesEvents(agentId) ? null : (
                  <div class="actions">
                    {event.deprecated ? null : (
                      <button type="button" onClick={() => setEditing({id: event.event_id, content: event.content_md})} aria-label={`Supersede ${event.dedupe_key}`}>
                        Supersede
                      </button>
                    )}
                    <button type="button" class="danger" onClick={() => setPending({action: 'forget', event})} aria-label={`Forget ${event.dedupe_key}`}>
                      Forget…
                    </button>
                  </div>
                )}
              </EventCard>
            ))}
          </div>
        </>
      )}
      <ConfirmDialog
        open={pending !== null}
        title={pending?.action === 'forget' ? 'Forget this event?' : 'Supersede this event?'}
        confirmLabel={pending?.action === 'forget' ? 'Forget' : 'Supersede'}
        onConfirm={() => void confirm()}
        onCancel={() => setPending(null)}
      >
        {pending?.action === 'forget' ? (
          <p>
            The text of <strong>{pending.event.dedupe_key}</strong> ({pending.event.event_id}, {pending.event.scope}) is deleted from the shared memory, and a
            deprecation note takes its place so that agents know it was withdrawn. This cannot be undone.
          </p>
        ) : pending ? (
          <p>
            A new event replaces <strong>{pending.event.dedupe_key}</strong> ({pending.event.event_id}) in what agents see at start; the old one stays in the log,
            marked superseded.
          </p>
        ) : null}
      </ConfirmDialog>
    </section>
  )
}
