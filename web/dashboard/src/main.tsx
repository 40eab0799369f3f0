/**
 * The dashboard's shell: sign-in, navigation between the pages (by the URL's hash, so the back button and links
 * work), the live connection and its state. Signing in again after a refused token keeps every page as it was, so
 * nothing typed is lost.
 */
import {render} from 'preact'
import {useEffect, useMemo, useState} from 'preact/hooks'

import {api, ApiError, messageOf, type StatusAnswer, whenUnauthorized} from './api.js'
import {Live, type LiveState} from './live.js'
import {AgentsPage} from './pages/agents.js'
import {AuditPage} from './pages/audit.js'
import {ConsentPage} from './pages/consent.js'
import {EventsPage} from './pages/events.js'
import {FilesPage} from './pages/files.js'
import {PinnedPage} from './pages/pinned.js'
import {ProjectPage} from './pages/project.js'
import {SearchPage} from './pages/search.js'
import {forgetToken, savedToken, saveToken} from './session.js'
import {Notice, SessionContext, type Tone} from './ui.js'

const PAGES = [
  {id: 'files', label: 'Memory files'},
  {id: 'events', label: 'Event log'},
  {id: 'pinned', label: 'Pinned memory'},
  {id: 'agents', label: 'Agents'},
  {id: 'project', label: 'Active project'},
  {id: 'search', label: 'Search'},
  {id: 'audit', label: 'Audit'},
] as const

function currentRoute(): {page: string; rest: string} {
  const hash = decodeURIComponent(location.hash.replace(/^#\/?/, ''))
  const [page, ...rest] = hash.split('/')
  return {page: PAGES.some((p) => p.id === page) ? page : 'files', rest: rest.join('/')}
}

/** The authorization request of an app waiting for the person's answer (`#/consent/<id>`, where /authorize sends the browser). */
function consentRequest(): string | null {
  return /^#\/consent\/([A-Za-z0-9_-]+)$/.exec(location.hash)?.[1] ?? null
}

function SignIn({message, tone = 'error', onSignedIn}: {message: string | null; tone?: Tone; onSignedIn: (token: string) => void}) {
  const [token, setToken] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await api<StatusAnswer>('GET', '/api/memory/status', undefined, token.trim())
      onSignedIn(token.trim())
    } catch (failure) {
      setError(failure instanceof ApiError && failure.status === 401 ? `This token was refused: ${failure.message}.` : messageOf(failure))
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class="signin" onSubmit={submit} aria-labelledby="signin-title">
      <h1 id="signin-title">Sign in to jarvis</h1>
      {message ? <Notice tone={tone}>{message}</Notice> : null}
      <p>
        Paste an agent's token (what the agent has in <code>JARVIS_TOKEN</code>). The page keeps it for this browser tab only,
        and sees what that agent may see.
      </p>
      <label for="token">Token</label>
      <input id="token" name="token" type="password" autocomplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
      {error ? <Notice tone="error">{error}</Notice> : null}
      <button type="submit" disabled={busy || token.trim() === ''}>
        {busy ? 'Checking…' : 'Sign in'}
      </button>
    </form>
  )
}

const LIVE_TEXT: Record<LiveState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  down: 'Connection to the server lost: reconnecting. Nothing you typed is lost.',
}

function Dashboard({token, onSignOut}: {token: string; onSignOut: () => void}) {
  const live = useMemo(() => new Live(token), [token])
  const [liveState, setLiveState] = useState<LiveState>(live.state)
  const [agentId, setAgentId] = useState<string | null>(live.agentId)
  const [workspace, setWorkspace] = useState<string | null>(live.workspace)
  const [route, setRoute] = useState(currentRoute)
  useEffect(() => {
    const offState = live.onState((state) => {
      setLiveState(state)
      // A socket refused at the upgrade looks like a network failure to a browser: ask the API, whose 401
      // (a revoked or expired key) brings up the sign-in; any other failure leaves the page as it is.
      if (state === 'down') api<StatusAnswer>('GET', '/api/memory/status').catch(() => undefined)
    })
    setLiveState(live.state)
    setAgentId(live.agentId)
    setWorkspace(live.workspace)
    const offHello = live.subscribe((message) => {
      if (message.type === 'HELLO' && typeof message.agentId === 'string') setAgentId(message.agentId)
      if (message.type === 'HELLO' && typeof message.workspace === 'string') setWorkspace(message.workspace)
    })
    return () => {
      offState()
      offHello()
      live.close()
    }
  }, [live])
  useEffect(() => {
    const onHash = () => setRoute(currentRoute())
    window.addEventListener('hashchange', onHash)
    return () => window.removeEventListener('hashchange', onHash)
  }, [])
  const session = useMemo(() => ({live, agentId}), [live, agentId])
  return (
    <SessionContext.Provider value={session}>
      <header class="top">
        <a class="brand" href="#/files">
          jarvis
        </a>
        <nav aria-label="Pages">
          <ul>
            {PAGES.map((page) => (
              <li key={page.id}>
                <a href={`#/${page.id}`} aria-current={route.page === page.id ? 'page' : undefined}>
                  {page.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span class={`live live-${liveState}`} role="status" aria-live="polite">
            {liveState === 'down' ? 'Offline' : LIVE_TEXT[liveState]}
          </span>
          {agentId ? (
            <span class="agent-id">
              signed in as {agentId}
              {workspace && workspace !== 'default' ? ` · workspace ${workspace}` : ''}
            </span>
          ) : null}
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      {liveState === 'down' ? <Notice tone="error">{LIVE_TEXT.down}</Notice> : null}
      <main id="main">
        {route.page === 'files' ? <FilesPage path={route.rest} /> : null}
        {route.page === 'events' ? <EventsPage /> : null}
        {route.page === 'pinned' ? <PinnedPage /> : null}
        {route.page === 'agents' ? <AgentsPage /> : null}
        {route.page === 'project' ? <ProjectPage /> : null}
        {route.page === 'search' ? <SearchPage /> : null}
        {route.page === 'audit' ? <AuditPage /> : null}
      </main>
    </SessionContext.Provider>
  )
}

function App() {
  const [token, setToken] = useState<string | null>(savedToken)
  /** Set when the server refused the token while pages were open: a sign-in over them, which keep their state. */
  const [refused, setRefused] = useState<string | null>(null)
  const [consent, setConsent] = useState<string | null>(consentRequest)
  useEffect(() => whenUnauthorized((message) => setRefused(`The server refused the token: ${message}. Sign in again; nothing you typed is lost.`)), [])
  useEffect(() => {
    const onHash = () => setConsent(consentRequest())
    window.addEventListener('hashchange', onHash)
    return () => window.removeEventListener('hashchange', onHash)
  }, [])
  const signedIn = (next: string) => {
    saveToken(next)
    setRefused(null)
    setToken(next)
  }
  if (consent !== null) {
    if (token === null || refused !== null) {
      return <SignIn message={refused ?? 'An app asks to use your shared memory. Sign in with a jarvis token to answer it.'} tone={refused === null ? 'info' : 'error'} onSignedIn={signedIn} />
    }
    return (
      <main id="main">
        <ConsentPage id={consent} />
      </main>
    )
  }
  if (token === null) return <SignIn message={null} onSignedIn={signedIn} />
  return (
    <>
      <Dashboard
        token={token}
        onSignOut={() => {
          forgetToken()
          setToken(null)
        }}
      />
      {refused !== null ? (
        <div class="overlay" role="dialog" aria-modal="true" aria-labelledby="signin-title">
          <SignIn message={refused} onSignedIn={signedIn} />
        </div>
      ) : null}
    </>
  )
}

render(<App />, document.getElementById('app')!)
