/**
 * The sync planner: PURE. From three views of every path — the local tree, the base recorded at the
 * last sync, and the server — it decides what to do with each file. Three-way, never by timestamps of
 * local files (contract §4): a file changed only locally is pushed, only remotely is pulled, on both
 * sides is merged; the same content on both sides is no conflict.
 */

/** What this machine recorded for a path at its last sync. */
export interface BaseEntry {
  hash: string
  rev?: number
  updatedAt?: string
}

/** What the server says about a path. `rev`/`hash` are absent on a seed-style (timestamp) server. */
export interface RemoteEntry {
  updatedAt?: string
  hash?: string
  rev?: number
  deleted?: boolean
}

export type Action =
  | {kind: 'push'; path: string; baseRev: number | null}
  | {kind: 'pull'; path: string}
  | {kind: 'merge'; path: string; baseRev: number | null}
  | {kind: 'delete-remote'; path: string; baseRev: number | null}
  | {kind: 'delete-local'; path: string}
  /** Both sides already agree (or both deleted): only the recorded base moves. */
  | {kind: 'record'; path: string; remote: RemoteEntry | null}

export type SyncMode = 'revision' | 'timestamp'

/** Each local file's hash by path: a map, or a view of a scan's entries. */
export interface LocalHashes extends Iterable<[string, string]> {
  get(path: string): string | undefined
  has(path: string): boolean
  keys(): Iterable<string>
}

export interface PlanInput {
  mode: SyncMode
  local: LocalHashes
  base: Readonly<Record<string, BaseEntry>>
  remote: Readonly<Record<string, RemoteEntry>>
  /**
   * With `status?since=N` the server lists only what changed after N: a path it does not list is
   * unchanged since our base. On a full listing, a path it does not list is unknown to the server.
   */
  remoteIsIncremental: boolean
  /** Paths to leave alone this round (malformed local files): neither pushed nor overwritten. */
  skip?: ReadonlySet<string>
  /**
   * Per path, the hashes of every text an earlier sync pushed without hearing back (killed, connection lost), until
   * one is acknowledged. A server holding any of them is holding our own write: the local file descends from it
   * and supersedes it, there is nothing to merge. All of them, not the last: a push that landed unacknowledged,
   * then one that never landed, leave the server with the first.
   */
  pending?: Readonly<Record<string, readonly string[]>>
  /** `pathsToPlan` of this input, sorted, when the caller has them already. */
  paths?: readonly string[]
}

export interface Plan {
  actions: Action[]
  /** Deletions this plan would make, on either side, and how many files the base knew. */
  deletions: number
  knownFiles: number
}

function remoteChanged(mode: SyncMode, base: BaseEntry, remote: RemoteEntry): boolean {
  if (mode === 'revision' && remote.rev !== undefined && base.rev !== undefined) return remote.rev !== base.rev
  if (remote.hash !== undefined) return remote.hash !== base.hash || Boolean(remote.deleted)
  return !sameInstant(remote.updatedAt, base.updatedAt) || Boolean(remote.deleted)
}

/**
 * Two `updatedAt`s of the server name the same moment, however each is written (`…T10:00:00Z` and
 * `…T10:00:00.000Z`: a push answer and a status may format it differently). An unknown one matches nothing: a base
 * recorded without the server's time is checked against the server's content instead.
 */
export function sameInstant(a: string | null | undefined, b: string | null | undefined): boolean {
  if (a === undefined || b === undefined) return false
  if (a === null || b === null) return a === b
  if (a === b) return true
  const [x, y] = [Date.parse(a), Date.parse(b)]
  return !Number.isNaN(x) && x === y
}

function baseRevOf(base: BaseEntry | undefined, remote: RemoteEntry | undefined): number | null {
  // The push must name the revision we merged against: the remote one when we just looked at it.
  if (remote?.rev !== undefined) return remote.rev
  return base?.rev ?? null
}

export function planSync(input: PlanInput): Plan {
  const {mode, local, base, remote, remoteIsIncremental} = input
  const actions: Action[] = []

  for (const path of input.paths ?? [...pathsToPlan(input)].sort()) {
    if (input.skip?.has(path)) continue
    const localHash = local.get(path)
    const baseEntry = base[path]
    let remoteEntry: RemoteEntry | undefined = remote[path]
    // Incremental listing: silence means "as it was at our base".
    if (remoteEntry === undefined && remoteIsIncremental && baseEntry) remoteEntry = {...baseEntry}
    const remoteLive = remoteEntry !== undefined && !remoteEntry.deleted

    if (!baseEntry) {
      // Never synced here: nothing can be a deletion, whatever is missing is simply not there yet.
      if (localHash !== undefined && !remoteLive) actions.push({kind: 'push', path, baseRev: remoteEntry?.rev ?? null})
      else if (localHash === undefined && remoteLive) actions.push({kind: 'pull', path})
      else if (localHash !== undefined && remoteLive) {
        if (remoteEntry!.hash === localHash) actions.push({kind: 'record', path, remote: remoteEntry!})
        else if (isOwnUnacknowledgedWrite(input, path, remoteEntry!)) actions.push({kind: 'push', path, baseRev: remoteEntry!.rev ?? null})
        else actions.push({kind: 'merge', path, baseRev: remoteEntry!.rev ?? null})
      }
      continue
    }

    const localChanged = localHash !== baseEntry.hash
    // A server that has no record of a file we synced lost it: upload again, never delete locally.
    const serverForgot = remoteEntry === undefined
    const changedRemotely = serverForgot ? false : remoteChanged(mode, baseEntry, remoteEntry!)

    if (serverForgot) {
      if (localHash !== undefined) actions.push({kind: 'push', path, baseRev: null})
      else actions.push({kind: 'record', path, remote: null})
      continue
    }

    if (!localChanged && !changedRemotely) continue

    if (localChanged && !changedRemotely) {
      if (localHash !== undefined) actions.push({kind: 'push', path, baseRev: baseRevOf(baseEntry, remoteEntry)})
      else if (remoteLive) actions.push({kind: 'delete-remote', path, baseRev: baseRevOf(baseEntry, remoteEntry)})
      else actions.push({kind: 'record', path, remote: null})
      continue
    }

    if (!localChanged && changedRemotely) {
      if (remoteLive) actions.push({kind: 'pull', path})
      else if (localHash !== undefined) actions.push({kind: 'delete-local', path})
      else actions.push({kind: 'record', path, remote: null})
      continue
    }

    // Changed on both sides.
    if (localHash === undefined && !remoteLive) actions.push({kind: 'record', path, remote: null})
    else if (localHash === undefined) actions.push({kind: 'pull', path}) // an edit beats a deletion
    else if (!remoteLive) actions.push({kind: 'push', path, baseRev: remoteEntry!.rev ?? null}) // an edit beats a deletion
    else if (remoteEntry!.hash !== undefined && remoteEntry!.hash === localHash) actions.push({kind: 'record', path, remote: remoteEntry!})
    else if (isOwnUnacknowledgedWrite(input, path, remoteEntry!)) actions.push({kind: 'push', path, baseRev: remoteEntry!.rev ?? null})
    else actions.push({kind: 'merge', path, baseRev: baseRevOf(baseEntry, remoteEntry)})
  }

  const deletions = actions.filter((a) => a.kind === 'delete-local' || a.kind === 'delete-remote').length
  return {actions, deletions, knownFiles: Object.keys(base).length}
}

/**
 * Every path of the three sides; after an incremental listing only those that can need an action: a path the
 * server did not list is as at our base there, so with its local file as at its base too there is nothing to do.
 * Spares a sort and an entry per file of a large tree where a few files changed.
 */
export function pathsToPlan(input: PlanInput): Set<string> {
  const {local, base, remote} = input
  if (!input.remoteIsIncremental) return new Set([...local.keys(), ...Object.keys(base), ...Object.keys(remote)])
  const paths = new Set(Object.keys(remote))
  for (const [path, hash] of local) if (base[path]?.hash !== hash) paths.add(path)
  for (const path in base) if (!local.has(path)) paths.add(path)
  return paths
}

function isOwnUnacknowledgedWrite(input: PlanInput, path: string, remote: RemoteEntry): boolean {
  return remote.hash !== undefined && (input.pending?.[path]?.includes(remote.hash) ?? false)
}

/**
 * The mass-deletion guard (contract §4, rclone's --max-delete): a sync that would delete more than
 * half of the files it knew stops and asks for --force. Deleting a single file is always allowed, so
 * that removing the last note of a tiny tree is not a ceremony.
 */
export function exceedsDeletionGuard(plan: Plan): boolean {
  return plan.deletions > 1 && plan.deletions * 2 > plan.knownFiles
}

export function summarisePlan(plan: Plan): Record<Action['kind'], string[]> {
  const summary: Record<Action['kind'], string[]> = {push: [], pull: [], merge: [], 'delete-remote': [], 'delete-local': [], record: []}
  for (const action of plan.actions) summary[action.kind].push(action.path)
  return summary
}
