/** Small pieces every page uses: notices, a confirmation dialog, times, rendered Markdown, an event card. */
import type {ComponentChildren} from 'preact'
import {createContext} from 'preact'
import {useContext, useEffect, useMemo, useRef} from 'preact/hooks'

import type {StoredEvent} from './api.js'
import type {Live, LiveMessage} from './live.js'
import {renderMarkdown} from './markdown.js'

export interface Session {
  live: Live
  /** The signed-in token's agent, once the server said it (HELLO). */
  agentId: string | null
}

export const SessionContext = createContext<Session | null>(null)

export function useSession(): Session {
  const session = useContext(SessionContext)
  if (session === null) throw new Error('no session')
  return session
}

/** Calls `handler` for every live message while the component is shown. */
export function useLive(handler: (message: LiveMessage) => void): void {
  const {live} = useSession()
  const latest = useRef(handler)
  latest.current = handler
  useEffect(() => live.subscribe((message) => latest.current(message)), [live])
}

export interface AnswerGuard {
  /** Before a request whose answer replaces what is shown (other filters, another file): every earlier answer is now out of date. */
  replacing(): () => boolean
  /** Before a request whose answer adds to what is shown (an older page, new live entries): out of date once a replacing one begins. */
  adding(): () => boolean
  /** Whether the component is still on the page: an action's answer for a page the person left must not change what they see now. */
  shown(): boolean
}

/**
 * Answers arrive in any order: a slow one for the filter typed first can come after the one for the filter typed
 * last. Each request takes a check before it asks, and its answer is used only while the check holds, so what is
 * shown always answers what the page shows it for (the box, the file's name), never an earlier question.
 */
export function useAnswerGuard(): AnswerGuard {
  const state = useRef({generation: 0, shown: true})
  useEffect(
    () => () => {
      state.current.shown = false
    },
    [],
  )
  return useMemo(() => {
    const holds = (generation: number) => () => state.current.shown && state.current.generation === generation
    return {
      replacing: () => holds(++state.current.generation),
      adding: () => holds(state.current.generation),
      shown: () => state.current.shown,
    }
  }, [])
}

/** A labelled choice of one of `options`, or any (the empty value). */
export function AnyOf(props: {id: string; label: string; options: readonly string[]; value: string; onChange: (value: string) => void}) {
  return (
    <div>
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="">any</option>
        {props.options.map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
    </div>
  )
}

export type Tone = 'error' | 'info' | 'success'

/** A message the person must notice: errors are alerts (read at once by a screen reader), the rest polite. */
export function Notice({tone, children}: {tone: Tone; children: ComponentChildren}) {
  return (
    <div class={`notice notice-${tone}`} role={tone === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  )
}

/** A modal confirmation (the native dialog: focus kept inside, Escape cancels). */
export function ConfirmDialog(props: {open: boolean; title: string; children: ComponentChildren; confirmLabel: string; onConfirm: () => void; onCancel: () => void}) {
  const ref = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const dialog = ref.current
    if (!dialog) return
    if (props.open && !dialog.open) dialog.showModal()
    if (!props.open && dialog.open) dialog.close()
  }, [props.open])
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={(event) => (event.preventDefault(), props.onCancel())}>
      <h2 id="confirm-title">{props.title}</h2>
      <div>{props.children}</div>
      <div class="actions">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  )
}

export function Time({iso}: {iso?: string | null}) {
  if (!iso) return <span>—</span>
  const date = new Date(iso)
  return <time dateTime={iso} title={iso}>{date.toLocaleString()}</time>
}

export function Markdown({text, class: className}: {text: string; class?: string}) {
  return <div class={`markdown ${className ?? ''}`} dangerouslySetInnerHTML={{__html: renderMarkdown(text)}} />
}

const DAY_MS = 86_400_000

/** "kept for good", or how long it is kept and when it expires. */
export function ttlText(event: StoredEvent): string {
  if (event.ttl_days === 0) return 'kept for good'
  const expires = event.created_at ? new Date(Date.parse(event.created_at) + event.ttl_days * DAY_MS) : null
  const when = expires ? `${expires.getTime() < Date.now() ? 'expired' : 'expires'} ${expires.toLocaleDateString()}` : ''
  return `TTL ${event.ttl_days} day${event.ttl_days === 1 ? '' : 's'}${when ? `, ${when}` : ''}`
}

export function EventCard({event, children}: {event: StoredEvent; children?: ComponentChildren}) {
  return (
    <article class={`event${event.deprecated ? ' deprecated' : ''}`} aria-label={`${event.kind} ${event.dedupe_key} by ${event.agent_id}`} data-event-id={event.event_id}>
      <header>
        <span class={`kind kind-${event.kind}`}>{event.kind}</span> <strong class="key">{event.dedupe_key}</strong>
        <span class="meta">
          <span class="scope">{event.scope}</span> · <span class="agent">{event.agent_id}</span> · <Time iso={event.created_at} />
        </span>
      </header>
      <Markdown text={event.content_md} />
      <footer class="tags">
        <span class={`tag confidence-${event.confidence}`}>confidence {event.confidence}</span>
        <span class="tag ttl">{ttlText(event)}</span>
        {event.deprecated ? <span class="tag">superseded</span> : null}
        {event.ttl_candidate ? <span class="tag">past its TTL</span> : null}
        {event.masked ? <span class="tag">secret masked</span> : null}
        {event.supersedes ? <span class="tag">replaces {event.supersedes}</span> : null}
        <span class="id">{event.event_id}</span>
      </footer>
      {children}
    </article>
  )
}
