import createDebug from 'debug'
import {z} from 'zod'

import {BadInputError, SchemaError, UnreachableError} from '../errors.js'
import type {MemoryClient} from '../protocol/client.js'
import {memoryEventSchema, parseWith} from '../schemas/index.js'
import {appendAudit, readOutbox, removeFromOutbox} from '../store/index.js'

const debug = createDebug('jarvis:outbox')

/**
 * Sends what was queued while the server was away. Entries leave the outbox only once the server
 * accepted them; the server treats a replay as a no-op (a task is keyed by its taskId, a memory event by
 * its Idempotency-Key, which is the outbox entry id), so a crash between sending and removing sends it
 * twice and counts it once.
 */
export async function flushOutbox(root: string, client: MemoryClient): Promise<OutboxReport> {
  const entries = await readOutbox(root)
  if (entries.length === 0) return {sent: 0, left: 0}
  // Loaded for an outbox to send only: its answers' schemas would load zod into every sync (scripts/bundle.mjs).
  const {EventsClient} = await import('../protocol/events.js')
  const events = EventsClient.over(client)
  const sent: string[] = []
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
      // The server answered but refused this entry (or it no longer fits its schema): keep it for a person, do not
      // block the others. Only a server we cannot reach at all stops the sync.
      const answered = error instanceof BadInputError || error instanceof SchemaError || (error instanceof UnreachableError && error.data.status !== undefined)
      if (!answered) {
        if (sent.length > 0) await removeFromOutbox(root, sent)
        throw error
      }
      left++
      refused++
      debug('outbox entry %s refused: %s', entry.id, error.message)
      await appendAudit(root, {at: new Date().toISOString(), type: 'error', reason: 'outbox entry refused', id: entry.id, message: error.message})
    }
  }
  if (sent.length > 0) await removeFromOutbox(root, sent)
  return {sent: sent.length, left, ...(refused > 0 ? {refused} : {})}
}

/** What a sync did with the outbox: sent, and left (of them, refused by the server: kept for a person). */
export interface OutboxReport {
  sent: number
  left: number
  refused?: number
}
