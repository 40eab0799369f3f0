/** The active project of every client: shown live, and switched from here as `user-web`. */
import {useCallback, useEffect, useRef, useState} from 'preact/hooks'

import {api, type ActiveProject, ApiError, liveFiles, messageOf} from '../api.js'
import {Notice, Time, type Tone, useLive} from '../ui.js'

const PROJECT_DIR = /^projects\/([^/]+)\//

export function ProjectPage() {
  const [active, setActive] = useState<ActiveProject | null>(null)
  const [known, setKnown] = useState<string[]>([])
  const [error, setError] = useState<string | null>(null)
  const [notice, setNotice] = useState<{tone: Tone; text: string} | null>(null)
  const [next, setNext] = useState('')
  const [busy, setBusy] = useState(false)
  // The switch this page made: its own broadcast, arriving after the answer, must not replace the notice that says so.
  const ownSwitch = useRef<string | null>(null)

  const load = useCallback(async () => {
    try {
      setActive(await api<ActiveProject>('GET', '/api/projects/active'))
      setError(null)
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 404) setActive(null)
      else setError(messageOf(failure))
    }
    try {
      const slugs = new Set(Object.keys(await liveFiles()).flatMap((path) => PROJECT_DIR.exec(path)?.[1] ?? []))
      setKnown([...slugs].sort())
    } catch {
      // Suggestions only.
    }
  }, [])
  useEffect(() => void load(), [load])
  useLive((message) => {
    if (message.type === 'STATE_CHANGED') {
      setActive({projectId: String(message.projectId), switchedAt: String(message.switchedAt), switchedBy: message.switchedBy as ActiveProject['switchedBy']})
      if (String(message.switchedAt) === ownSwitch.current) return
      setNotice({tone: 'info', text: `The active project is now ${String(message.projectId)} (switched by ${String(message.switchedBy)}).`})
    } else if (message.type === 'RECONNECTED') void load()
  })

  const submit = async (event: Event) => {
    event.preventDefault()
    const projectId = next.trim()
    if (projectId === '') return
    setBusy(true)
    setNotice(null)
    try {
      const switched = await api<ActiveProject>('POST', '/api/projects/active', {projectId, switchedBy: 'user-web'})
      ownSwitch.current = switched.switchedAt
      setActive(switched)
      setNotice({tone: 'success', text: `Switched every client to ${projectId}.`})
      setNext('')
    } catch (failure) {
      setNotice({tone: 'error', text: messageOf(failure)})
    } finally {
      setBusy(false)
    }
  }

  return (
    <section aria-labelledby="project-title">
      <h1 id="project-title">Active project</h1>
      {error ? <Notice tone="error">{error}</Notice> : null}
      {active ? (
        <dl class="active-project">
          <dt>Project</dt>
          <dd class="project-id">{active.projectId}</dd>
          <dt>Switched</dt>
          <dd>
            <Time iso={active.switchedAt} /> by {active.switchedBy}
          </dd>
        </dl>
      ) : (
        <p>No active project has been set.</p>
      )}
      {notice ? <Notice tone={notice.tone}>{notice.text}</Notice> : null}
      <form class="filters" onSubmit={submit}>
        <div class="grow">
          <label for="project-id">Switch every client to project</label>
          <input id="project-id" list="known-projects" value={next} onInput={(e) => setNext(e.currentTarget.value)} required maxLength={200} />
          <datalist id="known-projects">
            {known.map((slug) => (
              <option key={slug} value={slug} />
            ))}
          </datalist>
        </div>
        <button type="submit" disabled={busy || next.trim() === ''}>
          Switch
        </button>
      </form>
    </section>
  )
}
