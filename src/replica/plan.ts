/**
 * The replica planner: PURE. For every file it gets three texts — the workspace copy, the `.memory/` copy and
 * the base (both sides as the last replication left them) — and decides what to write where, by the rules of
 * `jarvis sync` (CONTRACT §4): changed on one side → copy to the other; on both → the file's merge rule, the
 * `.memory/` side winning an overlap (it is the shared copy, like the server in sync) and the workspace text
 * kept as a backup; a deletion only when the base proves the file existed; an edit beats a deletion.
 */
import {mergeFileText} from '../merge/index.js'

/** One file as the three copies stand; null = no such file (or, for the base, no trustworthy base). */
export interface ReplicaSides {
  /** Path relative to `.memory/`: names the merge rule and the file in reports. */
  memoryPath: string
  /** Path relative to the replica's own directory. */
  workspacePath: string
  base: string | null
  workspace: string | null
  memory: string | null
}

export type SideWrite = {op: 'keep'} | {op: 'write'; text: string} | {op: 'delete'}

/** `record`: both sides already agree (or are both gone); only the base moves. */
export type ReplicaActionKind = 'to-memory' | 'to-workspace' | 'merge' | 'delete-memory' | 'delete-workspace' | 'record'

export interface ReplicaConflict {
  kind: string
  at: string
  /** The side whose text is now on both sides. */
  kept: 'memory' | 'workspace'
}

export interface ReplicaAction {
  kind: ReplicaActionKind
  memoryPath: string
  workspacePath: string
  memory: SideWrite
  workspace: SideWrite
  /** The base after the action: the text both sides now hold, or null (none). */
  base: string | null
  /** The workspace text that lost a conflict: saved as a backup before anything is written. */
  backup: string | null
  /** With a backup: the base its conflict was merged against (what `jarvis resolve --keep local` merges from). */
  backupBase?: string | null
  conflicts: ReplicaConflict[]
  /** What the plan was made against: the executor writes nothing if either side moved since. */
  expected: {workspace: string | null; memory: string | null}
}

export interface ReplicaPlan {
  actions: ReplicaAction[]
  /** Deletions held back by the mass-deletion guard: nothing of them is done. */
  held: ReplicaAction[]
  /** Files the base knew. */
  known: number
}

const KEEP: SideWrite = {op: 'keep'}

function writeOrKeep(current: string | null, text: string): SideWrite {
  return current === text ? KEEP : {op: 'write', text}
}

function action(file: ReplicaSides, kind: ReplicaActionKind, fields: Partial<ReplicaAction> & {base: string | null}): ReplicaAction {
  const {memoryPath, workspacePath, workspace, memory} = file
  return {kind, memoryPath, workspacePath, memory: KEEP, workspace: KEEP, backup: null, conflicts: [], expected: {workspace, memory}, ...fields}
}

/** The action for one file, or null when there is nothing to do. */
export function planFile(file: ReplicaSides): ReplicaAction | null {
  const {base, workspace: ws, memory: mem} = file
  if (ws === mem) return ws === base ? null : action(file, 'record', {base: ws})
  const wsChanged = ws !== base
  const memChanged = mem !== base
  // Without a base (first run, or a lost one) a missing copy equals the base, so the other copy is new:
  // nothing can turn into a deletion.
  if (wsChanged && memChanged) return planBoth(file)
  if (wsChanged) return ws === null ? action(file, 'delete-memory', {memory: {op: 'delete'}, base: null}) : action(file, 'to-memory', {memory: {op: 'write', text: ws}, base: ws})
  return mem === null ? action(file, 'delete-workspace', {workspace: {op: 'delete'}, base: null}) : action(file, 'to-workspace', {workspace: {op: 'write', text: mem}, base: mem})
}

/** Both sides differ from the base and from each other. */
function planBoth(file: ReplicaSides): ReplicaAction {
  const {base, workspace: ws, memory: mem} = file
  // One side deleted what the other edited: the edit beats the deletion.
  if (ws === null) return action(file, 'to-workspace', {workspace: {op: 'write', text: mem!}, base: mem, conflicts: [editDelete('memory')]})
  if (mem === null) return action(file, 'to-memory', {memory: {op: 'write', text: ws}, base: ws, conflicts: [editDelete('workspace')]})
  // The workspace plays "local", `.memory/` "remote": on an overlap the shared copy wins, as the server does in sync.
  const merge = mergeFileText(file.memoryPath, base, ws, mem)
  return action(file, 'merge', {
    memory: writeOrKeep(mem, merge.merged),
    workspace: writeOrKeep(ws, merge.merged),
    base: merge.merged,
    backup: merge.backup,
    ...(merge.backup === null ? {} : {backupBase: base}),
    conflicts: merge.conflicts.map((c) => ({kind: c.kind, at: c.at, kept: c.winner === 'local' ? 'workspace' : 'memory'})),
  })
}

function editDelete(kept: ReplicaConflict['kept']): ReplicaConflict {
  return {kind: 'edit-delete', at: '(file)', kept}
}

/**
 * Every file's action, in path order. Deletions are held back unless `force`, as `jarvis sync` holds a mass
 * deletion: more than half of the known files deleted at once (a wiped or re-created workspace), or every known
 * file gone from one side at once, even a single one (an empty folder mounted or made where the workspace was, a
 * `.memory/` folder moved away): that is a lost folder far more often than a person deleting all their notes.
 * Deleting one file of several is always allowed.
 */
export function planReplica(files: readonly ReplicaSides[], options: {force?: boolean} = {}): ReplicaPlan {
  const sorted = [...files].sort((a, b) => (a.memoryPath < b.memoryPath ? -1 : a.memoryPath > b.memoryPath ? 1 : 0))
  const actions = sorted.map(planFile).filter((a): a is ReplicaAction => a !== null)
  const knownFiles = files.filter((f) => f.base !== null)
  const known = knownFiles.length
  const deletions = actions.filter(isDeletion)
  const tooMany = deletions.length > 1 && deletions.length * 2 > known
  const sideEmptied = known > 0 && (knownFiles.every((f) => f.workspace === null) || knownFiles.every((f) => f.memory === null))
  if (options.force || deletions.length === 0 || (!tooMany && !sideEmptied)) return {actions, held: [], known}
  return {actions: actions.filter((a) => !isDeletion(a)), held: deletions, known}
}

export function isDeletion(action: ReplicaAction): boolean {
  return action.kind === 'delete-memory' || action.kind === 'delete-workspace'
}
