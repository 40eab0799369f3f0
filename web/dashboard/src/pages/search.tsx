/** Search: memory files and events ranked for a query (what an agent's `memory_search` finds). */
import {useState} from 'preact/hooks'

import {api, messageOf, query, type StoredEvent} from '../api.js'
import {EventCard, Notice} from '../ui.js'

interface SearchAnswer {
  files: {hits: {path: string; title?: string; score: number; snippet: {line: number; text: string}[]}[]}
  events: {total: number; events: StoredEvent[]}
}

export function SearchPage() {
  const [text, setText] = useState('')
  const [answer, setAnswer] = useState<SearchAnswer | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  const submit = async (event: Event) => {
    event.preventDefault()
    if (text.trim() === '') return
    setBusy(true)
    try {
      setAnswer(await api<SearchAnswer>('GET', `/api/search${query({q: text.trim(), limit: 20})}`))
      setError(null)
    } catch (failure) {
      setError(messageOf(failure))
    } finally {
      setBusy(false)
    }
  }

  return (
    <section aria-labelledby="search-title">
      <h1 id="search-title">Search</h1>
      <form class="filters" role="search" onSubmit={submit}>
        <div class="grow">
          <label for="search-text">Search memory files and events</label>
          <input id="search-text" type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </div>
        <button type="submit" disabled={busy || text.trim() === ''}>
          Search
        </button>
      </form>
      {error ? <Notice tone="error">{error}</Notice> : null}
      {answer ? (
        <>
          <h2>Files</h2>
          {answer.files.hits.length === 0 ? <p>No file matches.</p> : null}
          <ul class="hits">
            {answer.files.hits.map((hit) => (
              <li key={hit.path}>
                <a href={`#/files/${hit.path.split('/').map(encodeURIComponent).join('/')}`}>{hit.title ? `${hit.title} (${hit.path})` : hit.path}</a>
                {hit.snippet.map((line) => (
                  <pre key={line.line} class="snippet">
                    {line.line}: {line.text}
                  </pre>
                ))}
              </li>
            ))}
          </ul>
          <h2>Events</h2>
          {answer.events.events.length === 0 ? <p>No event matches.</p> : null}
          <div class="event-list">
            {answer.events.events.map((event) => (
              <EventCard key={event.event_id} event={event} />
            ))}
          </div>
        </>
      ) : null}
    </section>
  )
}
