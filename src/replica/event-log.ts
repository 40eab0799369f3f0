/**
 * What the event replicas (ai-memory, obsidian) share: the event log they read and write, handed in by the
 * operations layer (the same client as `jarvis memory list`), their state in `.nexus/replicas/<id>/`, and the rule
 * that a file a person edited is theirs. Unlike an openclaw replica they mirror no folder of `.memory/`: they
 * write the event log out, and a person's edit comes back as an event.
 */
import {SecretRefusedError} from '../errors.js'
import {type EventReplicaState, eventReplicaStateSchema, type MemoryEvent, parseJsonFile, type StoredMemoryEvent} from '../schemas/index.js'
import {formatJson, hashText, readNexusFile, writeNexusFile} from '../store/index.js'
import type {ReplicaReport, Screen} from './run.js'

export interface EventLogQuery {
  scope: string
  kind?: string
  dedupeKey?: string
  /** created_at ≥ since (ISO). */
  since?: string
  /** created_at < until (ISO). */
  until?: string
}

/** The server's event log as a replica sees it. */
export interface ReplicaEventLog {
  /** The agent this tree writes as: the author of the events a person's edit becomes. */
  agentId: string
  /** Every event that matches, superseded ones included, oldest first. */
  list(query: EventLogQuery): Promise<StoredMemoryEvent[]>
  /** Appends one event; the same key and event sent again is stored once. A secret refused by the server is SecretRefusedError. */
  append(event: MemoryEvent, idempotencyKey: string): Promise<{event_id: string; status: string}>
}

export interface EventReplicaRunOptions {
  root: string
  id: string
  /** The replica's directory, absolute. */
  dir: string
  /** The scopes shown; the first project scope (else the first) is where a person's new text is written. */
  scopes: string[]
  log: ReplicaEventLog
  now: () => Date
  dryRun: boolean
  screen: Screen
}

/** Oldest first: by created_at, then event_id (ids of one server grow with time). */
export function byTime(a: StoredMemoryEvent, b: StoredMemoryEvent): number {
  const at = a.created_at ?? ''
  const bt = b.created_at ?? ''
  return at < bt ? -1 : at > bt ? 1 : a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0
}

const statePath = (id: string) => `replicas/${id}/state.json`
export const eventBasePath = (id: string, path: string) => `replicas/${id}/base/${path}`

export async function readEventState(root: string, id: string, kind: string, dir: string): Promise<EventReplicaState> {
  const text = await readNexusFile(root, statePath(id))
  const fresh = {kind, path: dir}
  if (text === null) return eventReplicaStateSchema.parse(fresh)
  return {...parseJsonFile(eventReplicaStateSchema, text, `.nexus/${statePath(id)}`), ...fresh}
}

export async function writeEventState(root: string, id: string, state: EventReplicaState, at: string): Promise<void> {
  await writeNexusFile(root, statePath(id), formatJson({...state, updatedAt: at}))
}

/**
 * Whose a file is now: `jarvis` when its text is what jarvis last wrote there (or it is missing and jarvis never
 * wrote it), `person` when someone changed, created or deleted it since. A person's file is never written over.
 */
export function ownerOf(current: string | null, recorded: {hash: string} | undefined): 'jarvis' | 'person' {
  if (current === null) return recorded ? 'person' : 'jarvis'
  return recorded !== undefined && hashText(current) === recorded.hash ? 'jarvis' : 'person'
}

/** Runs the secret check on `fields`; a refusal is reported for `path` (with the check's own message) and answers false. */
export async function screened(screen: Screen, fields: Record<string, string>, path: string, report: ReplicaReport): Promise<boolean> {
  try {
    await screen(fields)
    return true
  } catch (error) {
    if (!(error instanceof SecretRefusedError)) throw error
    report.refused.push({path, reason: error.message})
    return false
  }
}

/** The scope a person's new text is written to: the tree's project, else the first scope shown. */
export function writeScope(scopes: string[]): string {
  return scopes.find((scope) => scope.startsWith('project:')) ?? scopes[0]
}
