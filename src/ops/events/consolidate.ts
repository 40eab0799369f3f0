/** `jarvis memory consolidate`: the janitor. */
import createDebug from 'debug'

import type {ConsolidateResponse} from '../../protocol/events.js'
import {appendAudit} from '../../store/index.js'
import {openTreeIfAny} from '../context.js'
import {openEvents, type ServerOptions, underTreeLock, withoutPart} from './common.js'

const debug = createDebug('jarvis:memory')

export interface ConsolidateOptions extends ServerOptions {
  agent?: string
}

export interface ConsolidateResult {
  server: string
  changed: boolean
  pinned: number
  ttl_candidates: number
  ttl_candidate_ids: string[]
  conflicts: {scope: string; dedupe_key: string; event_ids: string[]; agents?: string[]; resolution_event_id: string | null}[]
  masked: {event_id: string; findings: {kind: string; rule?: string; field?: string; line?: number; column?: number}[]}[]
  /** Whether the conflicts and maskings were recorded in `.nexus/audit.jsonl` (only inside a tree). */
  audited: boolean
}

function idsOf(value: number | (string | {event_id: string})[]): {count: number; ids: string[]} {
  if (typeof value === 'number') return {count: value, ids: []}
  const ids = value.map((item) => (typeof item === 'string' ? item : item.event_id))
  return {count: ids.length, ids}
}

/** `jarvis memory consolidate`: the server's janitor; every masking and conflict also goes to the tree's audit log. */
export async function consolidateMemory(options: ConsolidateOptions): Promise<ConsolidateResult> {
  const tree = await openTreeIfAny(options.dir)
  const {client, identity} = await openEvents(tree, options)
  try {
    // Inside a tree the lock is taken first: a busy tree stops the command before the server changes anything,
    // so no masking or conflict goes unaudited.
    return await underTreeLock(tree, 'jarvis memory consolidate', async () => {
      const answer = await client.consolidate().catch((error: unknown) => {
        throw withoutPart(error, 'nothing was consolidated: the janitor works on a server\'s event log')
      })
      const result = consolidationResult(answer, identity.server)
      if (!tree) {
        debug('not in a jarvis tree: %d conflict(s) and %d masking(s) are not written to any audit log', result.conflicts.length, result.masked.length)
        return result
      }
      const at = new Date().toISOString()
      for (const c of result.conflicts) await appendAudit(tree.root, {at, type: 'conflict', log: 'events', via: 'jarvis memory consolidate', server: identity.server, ...c})
      for (const m of result.masked) await appendAudit(tree.root, {at, type: 'mask', log: 'events', via: 'jarvis memory consolidate', server: identity.server, ...m})
      result.audited = true
      return result
    })
  } finally {
    await client.close()
  }
}

function consolidationResult(answer: ConsolidateResponse, server: string): ConsolidateResult {
  const ttl = idsOf(answer.ttl_candidates)
  return {
    server,
    changed: answer.changed ?? (answer.conflicts.length > 0 || answer.masked.length > 0),
    pinned: idsOf(answer.pinned).count,
    ttl_candidates: ttl.count,
    ttl_candidate_ids: ttl.ids,
    conflicts: answer.conflicts.map((c) => ({
      scope: c.scope,
      dedupe_key: c.dedupe_key,
      event_ids: c.event_ids,
      ...(Array.isArray(c.agents) ? {agents: c.agents.map(String)} : {}),
      resolution_event_id: c.resolution_event_id ?? null,
    })),
    // Only where and what kind: a finding never carries the secret itself.
    masked: answer.masked.map((m) => ({event_id: m.event_id, findings: m.findings.map(({kind, rule, field, line, column}) => ({kind, rule, field, line, column}))})),
    audited: false,
  }
}
