import createDebug from 'debug'
import {z} from 'zod'

import {BadInputError, SchemaError, UnreachableError} from '../errors.js'
import {type MemoryClient, missingPart, SERVER_PARTS} from '../protocol/client.js'
import {memoryEventSchema, parseWith} from '../schemas/index.js'
import {appendAudit, readOutbox, removeFromOutbox} from '../store/index.js'

const debug = createDebug('jarvis:outbox')

/**
 * Sends what was queued while the server was away. Entries leave the outbox only once the server
 * accepted them; the server treats a replay as a no-op (a task is keyed by its taskId, a memory event by
 * its Idempotency-Key, which is the outbox entry id), so a crash between sending and removing sends it
 * twice and counts it once. An entry for a part of the protocol the server does not have (no event log: its route
 * answers 404) would wait for good: it leaves the outbox, and the audit log keeps it whole, where a person finds it.
 */
export async function flushOutbox(root: string, client: MemoryClient): Promise<OutboxReport> {
  const entries = await readOutbox(root)
  if (entries.length === 0) return {sent: 0, left: 0}
  // Loaded for an outbox to send only: its answers' schemas would load zod into every sync (scripts/bundle.mjs).
  const {EventsClient} = await import('../protocol/events.js')
  const events = EventsClient.over(client)
  const sent: string[] = []
  const dropped: string[] = []
  const missing = new Set<string>()
  let left = 0
  let refused = 0
  for (const entry of entries) {
    try {
      if (entry.kind === 'task-result') await client.syncTask(entry.payload, z.unknown())
      else if (entry.kind === 'active-project') {
        // As the person switched: from this CLI, or from another client (the chat bot) while the server was away.
        const {projectId, switchedBy} = entry.payload as {projectId?: unknown; switchedBy?: unknown}
        await client.switchProject(String(projectId), switchedBy === 'user-web' ? 'user-web' : 'user-cli')
      }
      else if (entry.kind === 'memory-event') {
        const event = parseWith(memoryEventSchema, entry.payload, `.nexus/outbox.jsonl entry ${entry.id}`)
        const answer = await events.append(event, entry.id)
        debug('outbox entry %s delivered as event %s (%s)', entry.id, answer.event_id, answer.status)
      } else {
        left++
        continue
      }
      sent.push(entry.id)
    } catch (error) {
      const part = missingPart(error)
      if (part !== undefined) {
        dropped.push(entry.id)
        missing.add(SERVER_PARTS[part].lacks)
        debug('outbox entry %s dropped: %s', entry.id, (error as Error).message)
        await appendAudit(root, {at: new Date().toISOString(), type: 'error', reason: 'outbox entry dropped', id: entry.id, kind: entry.kind, payload: entry.payload, message: (error as Error).message})
        continue
      }
      // The server answered but refused this entry (or it no longer fits its schema): keep it for a person, do not
      // block the others. Only a server we cannot reach at all stops the sync.
      const answered = error instanceof BadInputError || error instanceof SchemaError || (error instanceof UnreachableError && error.data.status !== undefined)
      if (!answered) {
        if (sent.length + dropped.length > 0) await removeFromOutbox(root, [...sent, ...dropped])
        throw error
      }
      left++
      refused++
      debug('outbox entry %s refused: %s', entry.id, error.message)
      await appendAudit(root, {at: new Date().toISOString(), type: 'error', reason: 'outbox entry refused', id: entry.id, message: error.message})
    }
  }
  if (sent.length + dropped.length > 0) await removeFromOutbox(root, [...sent, ...dropped])
  return {sent: sent.length, left, ...(refused > 0 ? {refused} : {}), ...(dropped.length > 0 ? {dropped: dropped.length, missing: [...missing]} : {})}
}

/**
 * What a sync did with the outbox: sent, and left (of them, refused by the server: kept for a person); dropped, for
 * a server without their part of the protocol (`missing`: what it lacks), each kept in the audit log.
 */
export interface OutboxReport {
  sent: number
  left: number
  refused?: number
  dropped?: number
  missing?: string[]
}
