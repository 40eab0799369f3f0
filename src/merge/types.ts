/**
 * Shapes the merge rules need. Deliberately loose (index signatures): a merge must carry
 * fields it does not know through untouched (seed 001 §12), and schemas/ validates elsewhere.
 */

export type Side = 'local' | 'remote'

export type MergeRule = 'active-project' | 'context-map' | 'worker-memory' | 'json' | 'markdown' | 'transcript' | 'text'

/**
 * - `lww`: both sides changed a last-writer-wins value; the older one lost.
 * - `key`: both sides changed a JSON key differently; remote won, local is in the backup.
 * - `edit-delete`: one side deleted what the other edited; the edit won.
 * - `task`: both sides changed the same recent task differently; the newer version won.
 * - `lines`: overlapping line edits; remote won, local is in the backup.
 * - `manual`: the path's strategy merges nothing; remote is in the file, local in the backup, for a person.
 */
export type ConflictKind = 'lww' | 'key' | 'edit-delete' | 'task' | 'lines' | 'manual'

export interface MergeConflict {
  kind: ConflictKind
  /** A dotted field path (`performance.errorRate`), `recentTasks[<taskId>]`, `lines 3-5` of the base, or `(document)`. */
  at: string
  /** The side whose value is in the merged result. */
  winner: Side
  /** The two competing values (for `lines`, the line ranges), so a report can show what lost. */
  local?: unknown
  remote?: unknown
}

/** `backup` is the local value to keep as `<name>.local.bak`, or null when nothing local was lost. */
export interface MergeResult<T> {
  merged: T
  conflicts: MergeConflict[]
  backup: T | null
}

export interface FileMerge {
  merged: string
  conflicts: MergeConflict[]
  backup: string | null
  rule: MergeRule
}

export type JsonObject = {[key: string]: unknown}

export interface RecentTask {
  taskId: string
  timestamp: string
  [key: string]: unknown
}

export interface WorkerMemory {
  lastActive?: string
  recentTasks?: RecentTask[]
  expertise?: {[topic: string]: unknown}
  context?: {lastFiles?: string[]; lastTopics?: string[]; knownIssues?: string[]; [key: string]: unknown}
  [key: string]: unknown
}

export interface UniversalMessage {
  role: string
  type?: string
  content?: {
    text?: string
    tool_use?: {tool_name?: string; tool_input?: unknown; [key: string]: unknown}
    tool_result?: {output?: string; error?: string; [key: string]: unknown}
    [key: string]: unknown
  }
  [key: string]: unknown
}

export interface TranscriptMerge<T extends UniversalMessage = UniversalMessage> {
  /** Every local message in local order, with the remote-only ones woven in, in remote order. */
  messages: T[]
  /** The remote messages that were not already present locally, in remote order. */
  added: T[]
}
