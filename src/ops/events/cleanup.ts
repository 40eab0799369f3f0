/** `jarvis memory cleanup`. */
import createDebug from 'debug'

import {BadInputError} from '../../errors.js'
import type {CleanupResponse} from '../../protocol/events.js'
import {appendAudit} from '../../store/index.js'
import {openTreeIfAny, type TreeContext} from '../context.js'
import {checkScopes, type IdentityOptions, openEvents, parseDuration, underTreeLock, withoutPart} from './common.js'

const debug = createDebug('jarvis:memory')

export interface CleanupCandidate {
  event_id: string
  scope?: string
  kind?: string
  dedupe_key?: string
  agent_id?: string
  created_at?: string
  reason?: string
}

export interface CleanupOptions extends IdentityOptions {
  /** `30d`, `12h`, `2w`. */
  olderThan: string
  /** A scope or a family ending in `*` (`agent:*`). */
  scope?: string
  dryRun?: boolean
  /** The person approved on the command line. */
  yes?: boolean
  /** Asks a person; absent when there is nobody to ask (then only `yes` approves). */
  confirm?: ((candidates: CleanupCandidate[]) => Promise<boolean>) | null
}

export interface CleanupResult {
  server: string
  older_than: string
  older_than_days: number
  scope: string | null
  dry_run: boolean
  candidates: CleanupCandidate[]
  /** `--yes`, `prompt`, or null (a dry run, nothing to delete, or declined). */
  approved_by: '--yes' | 'prompt' | null
  declined: boolean
  deleted: string[]
  audited: boolean
}

function candidateOf(item: CleanupResponse['candidates'][number]): CleanupCandidate {
  const pick = (name: string) => (typeof item[name] === 'string' ? (item[name] as string) : undefined)
  const reason = pick('reason') ?? (item.deprecated === true ? 'deprecated' : item.ttl_candidate === true ? 'expired' : undefined)
  const candidate: CleanupCandidate = {event_id: item.event_id}
  for (const [name, value] of Object.entries({scope: pick('scope'), kind: pick('kind'), dedupe_key: pick('dedupe_key'), agent_id: pick('agent_id'), created_at: pick('created_at'), reason})) {
    if (value !== undefined) (candidate as unknown as Record<string, string>)[name] = value
  }
  return candidate
}

/**
 * `jarvis memory cleanup`: ask the server what is older than the limit and expired or deprecated,
 * then delete it only once a person approved — on the terminal, or with --yes. Without a terminal and without --yes
 * nothing is deleted (exit 2). Every deletion is recorded in the tree's audit log.
 */
export async function cleanupMemory(options: CleanupOptions): Promise<CleanupResult> {
  const days = parseDuration(options.olderThan, '--older-than')
  if (options.scope !== undefined && !/^(?:agent|project):\*$/.test(options.scope)) checkScopes([options.scope], '--scope')
  const tree = await openTreeIfAny(options.dir)
  const {client, identity} = await openEvents(tree, options)
  try {
    // The server counts whole days: ask for the whole days below the limit, and keep only what is older than it
    // (12h → the server's 0-day candidates created more than 12 hours ago). Only those ids are ever approved.
    const base = {older_than_days: Math.floor(days), ...(options.scope === undefined ? {} : {scope: options.scope})}
    const cutoff = Date.now() - days * 86_400_000
    const found = await client.cleanup({...base, dry_run: true}).catch((error: unknown) => {
      throw withoutPart(error, 'nothing was removed: there are no events on this server to clean up')
    })
    const candidates = found.candidates
      .map(candidateOf)
      .filter((c) => Number.isInteger(days) || (c.created_at !== undefined && Date.parse(c.created_at) < cutoff))
    const result: CleanupResult = {
      server: identity.server,
      older_than: options.olderThan,
      older_than_days: days,
      scope: options.scope ?? null,
      dry_run: Boolean(options.dryRun),
      candidates,
      approved_by: null,
      declined: false,
      deleted: [],
      audited: false,
    }
    if (options.dryRun || candidates.length === 0) return result

    if (options.yes) result.approved_by = '--yes'
    else {
      const confirm = options.confirm
      if (!confirm) {
        throw new BadInputError(
          `refusing to delete ${candidates.length} event(s) without a person's approval: there is no terminal to ask on; review them with --dry-run, then pass --yes`,
          {field: '--yes', candidates: candidates.map((c) => c.event_id)},
        )
      }
      if (!(await confirm(candidates))) {
        result.declined = true
        return result
      }
      result.approved_by = 'prompt'
    }

    // The lock first (not during the question): a busy tree stops the command before anything is deleted.
    return await underTreeLock(tree, 'jarvis memory cleanup', async () => {
      const done = await client.cleanup({...base, dry_run: false, event_ids: candidates.map((c) => c.event_id)})
      const deleted = new Set(done.deleted.map((item) => item.event_id))
      result.deleted = candidates.map((c) => c.event_id).filter((id) => deleted.has(id))
      result.audited = await auditDeletions(tree, candidates.filter((c) => deleted.has(c.event_id)), result, identity.server)
      return result
    })
  } finally {
    await client.close()
  }
}

async function auditDeletions(tree: TreeContext | undefined, deleted: CleanupCandidate[], result: CleanupResult, server: string): Promise<boolean> {
  if (!tree) {
    debug('not in a jarvis tree: %d deletion(s) are not written to any audit log', deleted.length)
    return false
  }
  if (deleted.length === 0) return true
  const at = new Date().toISOString()
  for (const event of deleted) {
    await appendAudit(tree.root, {at, type: 'delete', log: 'events', via: 'jarvis memory cleanup', server, ...event, older_than_days: result.older_than_days, approved_by: result.approved_by})
  }
  return true
}
