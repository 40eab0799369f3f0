/**
 * The audit log: what was pushed, which pushes met a conflict, which secrets were refused or masked, which events
 * were superseded or forgotten, project switches and keys — newest first, filtered by kind and agent, live. A token
 * reads its own agent's entries; an admin key reads everyone's (the server decides, the page shows its answer).
 */
import {useCallback, useEffect, useState} from 'preact/hooks'

import {AGENT_IDS, api, type AuditAnswer, type AuditEntry, AUDIT_KINDS, messageOf, query} from '../api.js'
import {AnyOf, Notice, Time, useAnswerGuard, useLive} from '../ui.js'

const PAGE_SIZE = 50

/** Words for each kind, as a person reads the list. */
const KIND_TEXT: Record<string, string> = {
  push: 'pushed',
  conflict: 'conflict',
  refused: 'secret refused',
  mask: 'secret masked',
  supersede: 'superseded',
  forget: 'forgotten',
  'switch-project': 'project switched',
  key: 'key',
}

/** Kinds whose count is the number of files (push, conflict) or of events (forget, mask): a long list is cut at 200. */
const FILE_KINDS = new Set(['push', 'conflict', 'switch-project'])
const EVENT_KINDS_COUNTED = new Set(['forget', 'mask'])

function Names({label, names, count}: {label: string; names: string[]; count: number}) {
  if (names.length === 0) return null
  const more = count > names.length ? ` and ${count - names.length} more` : ''
  return (
    <p class="names">
      <span class="label">{label}:</span> {names.map((name, index) => (
        <span key={name}>
          {index > 0 ? ', ' : ''}
          <code>{name}</code>
        </span>
      ))}
      {more}
    </p>
  )
}

export function AuditPage() {
  const [filters, setFilters] = useState({kind: '', agent: ''})
  const [entries, setEntries] = useState<AuditEntry[] | null>(null)
  const [nextBefore, setNextBefore] = useState<number | null>(null)
  const [error, setError] = useState<string | null>(null)

  const answers = useAnswerGuard()

  const page = useCallback((before?: number) => api<AuditAnswer>('GET', `/api/audit${query({kind: filters.kind, agent: filters.agent, limit: PAGE_SIZE, before})}`), [filters])

  /** The newest page for the filters, replacing the list (filters changed). */
  const load = useCallback(async () => {
    const current = answers.replacing()
    try {
      const answer = await page()
      if (!current()) return
      setEntries(answer.entries)
      setNextBefore(answer.next_before)
      setError(null)
    } catch (failure) {
      if (current()) setError(messageOf(failure))
    }
  }, [answers, page])

  /**
   * Entries newer than the list's newest, put on top: what the person loaded with "Show older entries" stays. Pages
   * back until the list's newest entry is reached, so that no entry between is left out.
   */
  const addNewer = useCallback(async () => {
    if (entries === null) return void load()
    const newest = entries[0]?.seq ?? 0
    const current = answers.adding()
    try {
      const newer: AuditEntry[] = []
      let before: number | undefined
      for (;;) {
        const answer = await page(before)
        newer.push(...answer.entries.filter((entry) => entry.seq > newest))
        if (answer.next_before === null || answer.entries.some((entry) => entry.seq <= newest)) break
        before = answer.next_before
      }
      if (!current()) return
      // Two live entries close together ask twice: an entry both answers hold is shown once.
      setEntries((shown) => (shown === null ? newer : [...newer.filter((entry) => entry.seq > (shown[0]?.seq ?? 0)), ...shown]))
      setError(null)
    } catch (failure) {
      if (current()) setError(messageOf(failure))
    }
  }, [answers, entries, load, page])

  const older = async () => {
    if (nextBefore === null) return
    const current = answers.adding()
    try {
      const answer = await page(nextBefore)
      if (!current()) return
      setEntries((shown) => {
        const known = new Set(shown?.map((entry) => entry.seq))
        return [...(shown ?? []), ...answer.entries.filter((entry) => !known.has(entry.seq))]
      })
      setNextBefore(answer.next_before)
    } catch (failure) {
      if (current()) setError(messageOf(failure))
    }
  }

  useEffect(() => void load(), [load])
  useLive((message) => {
    if (message.type === 'AUDIT_APPENDED' || message.type === 'RECONNECTED') void addNewer()
  })

  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <p class="hint">
        Pushes, conflicts, refused and masked secrets, superseded and forgotten events, project switches and keys. A token sees its own agent's entries;
        an admin key sees everyone's. Secrets are never shown: only where they were found.
      </p>
      <form class="filters" onSubmit={(e) => (e.preventDefault(), void load())} aria-label="Filters">
        <AnyOf id="a-kind" label="Kind" options={AUDIT_KINDS} value={filters.kind} onChange={(kind) => setFilters((current) => ({...current, kind}))} />
        <AnyOf id="a-agent" label="Agent" options={AGENT_IDS} value={filters.agent} onChange={(agent) => setFilters((current) => ({...current, agent}))} />
      </form>
      {error ? <Notice tone="error">{error}</Notice> : null}
      {entries === null ? (
        <p>Loading…</p>
      ) : (
        <>
          <p class="count" aria-live="polite">
            {entries.length === 0 ? 'No audit entries match.' : `${entries.length}${nextBefore === null ? '' : '+'} entr${entries.length === 1 ? 'y' : 'ies'}, newest first.`}
          </p>
          <ol class="audit-list">
            {entries.map((entry) => (
              <li key={entry.seq} class={`audit audit-${entry.kind}`} data-kind={entry.kind} aria-label={`${KIND_TEXT[entry.kind] ?? entry.kind} by ${entry.agent}`}>
                <header>
                  <span class={`kind kind-${entry.kind}`}>{KIND_TEXT[entry.kind] ?? entry.kind}</span> <span class="agent">{entry.agent}</span>
                  <span class="meta">
                    <Time iso={entry.at} /> · #{entry.seq}
                  </span>
                </header>
                <p class="detail">{entry.detail}</p>
                <Names label="Files" names={entry.paths} count={FILE_KINDS.has(entry.kind) ? entry.count : entry.paths.length} />
                <Names label="Events" names={entry.event_ids} count={EVENT_KINDS_COUNTED.has(entry.kind) ? entry.count : entry.event_ids.length} />
              </li>
            ))}
          </ol>
          {nextBefore !== null ? (
            <button type="button" onClick={() => void older()}>
              Show older entries
            </button>
          ) : null}
        </>
      )}
    </section>
  )
}
