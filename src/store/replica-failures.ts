/**
 * `.nexus/replica-failures.json`: the last failure of each replica, kept until a later run of that replica
 * succeeds, so that `jarvis status` can say a replica is broken long after the sync that said so scrolled away.
 * Informational only: a damaged file reads as empty and is written anew, never a reason for a sync to fail.
 */
import {join} from 'node:path'

import {type ReplicaFailures, replicaFailuresSchema} from '../schemas/index.js'
import {readTextIfExists, writeFileAtomic} from './atomic.js'
import {nexusDir} from './root.js'
import {formatJson} from './sync-state.js'

export const REPLICA_FAILURES_FILE = '.nexus/replica-failures.json'

export interface ReplicaFailure {
  /** The replica's id (`.nexus/replicas/<id>/`). */
  id: string
  at: string
  kind: string
  workspace: string
  code: string
  message: string
}

/** What one run of a replica came to: `failure` when it failed, else it ran (a replica skipped or paused says nothing). */
export interface ReplicaOutcome {
  id: string
  failure?: Omit<ReplicaFailure, 'id'>
}

async function readFile(root: string): Promise<ReplicaFailures> {
  const text = await readTextIfExists(join(nexusDir(root), 'replica-failures.json'))
  if (text === null) return replicaFailuresSchema.parse({})
  try {
    return replicaFailuresSchema.parse(JSON.parse(text))
  } catch {
    return replicaFailuresSchema.parse({})
  }
}

/** The replicas whose last run failed, newest failure first. */
export async function readReplicaFailures(root: string): Promise<ReplicaFailure[]> {
  const {failures} = await readFile(root)
  return Object.entries(failures)
    .map(([id, failure]) => ({id, at: failure.at, kind: failure.kind, workspace: failure.workspace, code: failure.code, message: failure.message}))
    .sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0))
}

/** Records each failure and forgets the failure of each replica that ran cleanly; writes only when that changes something. */
export async function noteReplicaOutcomes(root: string, outcomes: readonly ReplicaOutcome[]): Promise<void> {
  const file = await readFile(root)
  const failures = {...file.failures}
  let changed = false
  for (const {id, failure} of outcomes) {
    if (failure) {
      failures[id] = failure
      changed = true
    } else if (failures[id] !== undefined) {
      delete failures[id]
      changed = true
    }
  }
  if (changed) await writeFileAtomic(join(nexusDir(root), 'replica-failures.json'), formatJson({...file, version: 1, failures}))
}
