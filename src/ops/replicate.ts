/**
 * `jarvis replicate`: the configured replicas (src/replica/), with the secret check of every other door and, for
 * the replicas that write the event log out (ai-memory, obsidian), the same event-log client as `jarvis memory list`.
 */
import {SecretRefusedError} from '../errors.js'
import {assertNoSensitive} from '../events/index.js'
import type {EventsClient} from '../protocol/events.js'
import {byTime, type EventLogQuery} from '../replica/event-log.js'
import {type OpenEventLog, type ReplicasResult, runReplicas} from '../replica/ops.js'
import type {StoredMemoryEvent} from '../schemas/index.js'
import {openTree} from './context.js'
import {asSecretRefusal, checkAgent, openEvents} from './events/common.js'

export interface ReplicateOptions {
  dir?: string
  server?: string
  agent?: string
  dryRun?: boolean
  force?: boolean
  now?: () => Date
  home?: string
}

export async function replicate(options: ReplicateOptions): Promise<ReplicasResult> {
  const openEventLog = async () => {
    const tree = await openTree(options.dir)
    const {client, identity} = await openEvents(tree, options)
    return eventLogOver(client, checkAgent(identity.agentId, "to write a person's edits in a replica as"), {closes: true})
  }
  return runReplicas({dir: options.dir, dryRun: options.dryRun, force: options.force, now: options.now, home: options.home, screen: assertNoSensitive, openEventLog})
}

/** The list endpoint's largest page. */
const PAGE = 500

/**
 * The event log of `client` as a replica reads and writes it: every matching event, superseded ones included,
 * page after page; an append refused by the server's secret check is the same SecretRefusedError as ours.
 * `closes`: whether closing the log closes the client (not when a sync lends its own).
 */
export function eventLogOver(client: EventsClient, agentId: string, options: {closes: boolean}): OpenEventLog {
  return {
    agentId,
    async list(query: EventLogQuery): Promise<StoredMemoryEvent[]> {
      const seen = new Map<string, StoredMemoryEvent>()
      let until = query.until
      for (;;) {
        const page = await client.events({scope: query.scope, kind: query.kind, dedupe_key: query.dedupeKey, since: query.since, until, include_deprecated: true, limit: PAGE})
        const fresh = page.events.filter((event) => !seen.has(event.event_id))
        for (const event of fresh) seen.set(event.event_id, event)
        const oldest = page.events.map((event) => event.created_at ?? '').sort()[0]
        if (page.events.length < PAGE || fresh.length === 0 || !oldest) break
        // `until` is exclusive: one millisecond past the oldest seen, so events sharing its time are not skipped.
        until = new Date(Date.parse(oldest) + 1).toISOString()
      }
      return [...seen.values()].sort(byTime)
    },
    async append(event, idempotencyKey) {
      try {
        return await client.append(event, idempotencyKey)
      } catch (error) {
        const refusal = asSecretRefusal(error, event.dedupe_key)
        if (refusal instanceof SecretRefusedError) throw refusal
        throw error
      }
    },
    close: async () => (options.closes ? client.close() : undefined),
  }
}
