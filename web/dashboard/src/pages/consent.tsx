/**
 * An app (ChatGPT, Claude, …) asks to use the shared memory: the person, signed in with a jarvis key, sees which app
 * and where it will be sent back, and grants one agent identity, the key's workspace and a role — or refuses. Either
 * way the browser then goes back to the app. The server decides what the key may grant (server/oauth/consent.ts);
 * the page only offers that: an agent the event log does not know (a typo) is named as such before Allow, which it
 * disables, as the server would refuse it.
 */
import {useEffect, useState} from 'preact/hooks'

import {AGENT_IDS, api, messageOf, writesEvents} from '../api.js'
import {Notice} from '../ui.js'
import type {ConsentOutcome, ConsentView} from '../../../../src/server/oauth/consent-wire.js'

const RESOURCE_TEXT = {mcp: 'the memory tools (MCP)', api: 'the REST API'} as const

/** Why an app cannot be allowed as `agent`, as the server says it: an agent outside the event log's. */
function unknownAgent(agent: string): string {
  return `${agent} is not one of the agents that write the shared event log (${AGENT_IDS.join(', ')}): an app allowed as ${agent} could sign in, but every memory it saves would be refused.`
}

export function ConsentPage({id}: {id: string}) {
  const [view, setView] = useState<ConsentView | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [agent, setAgent] = useState('')
  const [role, setRole] = useState<'read' | 'write'>('write')
  const [busy, setBusy] = useState(false)
  const [leaving, setLeaving] = useState<string | null>(null)

  useEffect(() => {
    api<ConsentView>('GET', `/api/oauth/authorizations/${encodeURIComponent(id)}`).then(
      (found) => {
        setView(found)
        setAgent('any' in found.agents ? found.suggestedAgent : found.agents.only)
        setRole(found.roles.includes('write') ? 'write' : 'read')
      },
      (failure) => setError(messageOf(failure)),
    )
  }, [id])

  const answer = async (allow: boolean) => {
    setBusy(true)
    setError(null)
    try {
      const outcome = await api<ConsentOutcome>('POST', `/api/oauth/authorizations/${encodeURIComponent(id)}`, allow ? {allow, agent: agent.trim(), role} : {allow})
      setLeaving(allow ? `Allowed. Taking you back to ${view?.client.name ?? 'the app'}…` : `Refused. Taking you back to ${view?.client.name ?? 'the app'}…`)
      location.assign(outcome.redirect)
    } catch (failure) {
      setError(messageOf(failure))
      setBusy(false)
    }
  }

  if (view === null) {
    return (
      <section class="signin consent" aria-labelledby="consent-title">
        <h1 id="consent-title">An app asks to use your shared memory</h1>
        {error ? <Notice tone="error">{error}</Notice> : <p>Loading the request…</p>}
      </section>
    )
  }
  const fixedAgent = 'only' in view.agents ? view.agents.only : null
  const chosen = fixedAgent ?? agent.trim()
  const refusedAgent = chosen !== '' && !writesEvents(chosen)
  return (
    <form
      class="signin consent"
      aria-labelledby="consent-title"
      onSubmit={(event) => {
        event.preventDefault()
        void answer(true)
      }}
    >
      <h1 id="consent-title">
        Allow <strong class="app-name">{view.client.name}</strong> to use your shared memory?
      </h1>
      <p>
        It will reach {RESOURCE_TEXT[view.resourceKind]} of this server, in the workspace <strong>{view.workspace}</strong>, and then go back to{' '}
        <strong class="redirect-host">{view.client.redirectHost}</strong>.
      </p>
      <p class="hint">Only allow it if you started this from that app: the name is what the app calls itself; the address it goes back to is what proves it.</p>
      {fixedAgent === null ? (
        <>
          <label for="consent-agent">It acts as the agent</label>
          <input id="consent-agent" name="agent" list="consent-agents" required value={agent} onInput={(e) => setAgent(e.currentTarget.value)} />
          <datalist id="consent-agents">
            {AGENT_IDS.map((id) => (
              <option key={id} value={id} />
            ))}
          </datalist>
          {refusedAgent ? <Notice tone="error">{unknownAgent(chosen)} Choose one of them.</Notice> : null}
        </>
      ) : (
        <>
          <p>
            It acts as the agent <strong class="agent-name">{fixedAgent}</strong> (the agent of the token you signed in with).
          </p>
          {refusedAgent ? (
            <Notice tone="error">
              {unknownAgent(fixedAgent)} Sign out and sign in with the token of one of them, or with an admin key.
            </Notice>
          ) : view.suggestedAgent !== fixedAgent ? (
            <Notice tone="info">
              This app is usually the agent <strong>{view.suggestedAgent}</strong>: to let it act as {view.suggestedAgent}, sign out and sign in with {view.suggestedAgent}
              's token or an admin key.
            </Notice>
          ) : null}
        </>
      )}
      <fieldset class="roles">
        <legend>It may</legend>
        {view.roles.map((option) => (
          <label key={option} class="check">
            <input type="radio" name="role" value={option} checked={role === option} onChange={() => setRole(option)} />
            {option === 'write' ? 'read and write the memory' : 'only read the memory'}
          </label>
        ))}
      </fieldset>
      <p class="hint">
        What the app does is the agent {fixedAgent ?? (agent.trim() || '…')}'s: it sees what that agent sees, its private notes included, and nothing more. You can take it
        back at any time: <code>jarvis serve token list</code> and <code>jarvis serve token revoke</code>.
      </p>
      {error ? <Notice tone="error">{error}</Notice> : null}
      {leaving ? <Notice tone="success">{leaving}</Notice> : null}
      <div class="actions consent-actions">
        <button type="button" disabled={busy} onClick={() => void answer(false)}>
          Deny
        </button>
        <button type="submit" disabled={busy || agent.trim() === '' || refusedAgent}>
          Allow
        </button>
      </div>
    </form>
  )
}
