/**
 * Runs one replica: read the three copies of every file, plan (plan.ts), then write — the backup first, then
 * `.memory/`, then the workspace, and the base only once both sides hold the new text. The caller holds the
 * tree lock. Every write is atomic; a side that moved since it was read is left for the next run.
 */
import {lstat, rm, stat} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import createDebug from 'debug'

import {SecretRefusedError} from '../errors.js'
import {parseJsonFile, type ReplicaState, replicaStateSchema} from '../schemas/index.js'
import {
  appendAudit,
  deleteMemoryFile,
  deleteNexusFile,
  formatJson,
  fsyncDir,
  hashText,
  nextBackupPath,
  readMemoryFile,
  readNexusFile,
  readStatCache,
  readTextIfExists,
  recordConflict,
  saveBackup,
  scanMemory,
  writeFileAtomic,
  writeMemoryFile,
  writeNexusFile,
} from '../store/index.js'
import {planReplica, type ReplicaAction, type ReplicaActionKind, type ReplicaSides} from './plan.js'

const debug = createDebug('jarvis:replica')

/** Where a kind keeps its files, and how they map to keys (paths under the replica's folder in `.memory/`). */
export interface ReplicaLayout {
  kind: string
  /** The replica's directory, absolute. */
  dir: string
  /** The workspace paths it replicates (relative, `/`-separated); regular files only. */
  listWorkspace(): Promise<string[]>
  keyOf(workspacePath: string): string | null
  workspacePathOf(key: string): string | null
}

/** Refuses (throws SecretRefusedError) a text that must not enter the shared memory; events/ provides it. */
export type Screen = (fields: Record<string, string>) => Promise<void>

export interface ReplicaRunOptions {
  root: string
  id: string
  folder: string
  layout: ReplicaLayout
  now: () => Date
  dryRun: boolean
  force: boolean
  screen: Screen
}

export interface ReplicaChange {
  action: Exclude<ReplicaActionKind, 'record'>
  /** Relative to `.memory/`. */
  memoryPath: string
  /** Relative to the replica's directory. */
  workspacePath: string
}

export interface ReplicaReport {
  id: string
  kind: string
  /** The replica's directory, absolute. */
  workspace: string
  folder: string
  /** Why nothing was done (paused, directory missing); not an error. */
  skipped?: string
  error?: {code: string; message: string}
  /** Done, or in a dry run, planned. */
  changes: ReplicaChange[]
  conflicts: {path: string; reason: string}[]
  /** The workspace text that lost a conflict, kept in `.memory/` (relative path), as sync keeps a local one. */
  backups: {path: string; backup: string}[]
  /** Deletions held back: more than half of the known files at once; `--force` lets them through. */
  held: ReplicaChange[]
  /** Not replicated: the text holds a secret or personal data. Nothing of it was written. */
  refused: {path: string; reason: string}[]
  /** Changed while this run worked on it: left alone for the next run. */
  left: string[]
  /** ai-memory, obsidian: files jarvis wrote (or in a dry run, would write), relative to the replica's directory. */
  written: string[]
  /** ai-memory, obsidian: files (or blocks) a person changed, kept as they are; why, and what was not written there. */
  kept: {path: string; reason: string}[]
  /** obsidian: a person's edits in jarvis's block, now events of the log (`source: obsidian`). */
  appended: {path: string; event_id: string; dedupe_key: string; status: string}[]
}

export function emptyReport(id: string, layout: Pick<ReplicaLayout, 'kind' | 'dir'>, folder: string): ReplicaReport {
  return {id, kind: layout.kind, workspace: layout.dir, folder, changes: [], conflicts: [], backups: [], held: [], refused: [], left: [], written: [], kept: [], appended: []}
}

const statePath = (id: string) => `replicas/${id}/state.json`
const basePath = (id: string, key: string) => `replicas/${id}/base/${key}`

async function readState(options: ReplicaRunOptions): Promise<ReplicaState> {
  const text = await readNexusFile(options.root, statePath(options.id))
  const fresh = {kind: options.layout.kind, path: options.layout.dir, folder: options.folder}
  if (text === null) return replicaStateSchema.parse(fresh)
  return {...parseJsonFile(replicaStateSchema, text, `.nexus/${statePath(options.id)}`), ...fresh}
}

/** The base copy, trusted only when it matches the hash the state recorded (else: no base, so no deletion). */
async function readBaseCopy(options: ReplicaRunOptions, state: ReplicaState, key: string): Promise<string | null> {
  const recorded = state.files[key]
  if (!recorded) return null
  const text = await readNexusFile(options.root, basePath(options.id, key))
  if (text !== null && hashText(text) === recorded.hash) return text
  debug('%s: base of %s missing or torn; merging two-way', options.id, key)
  return null
}

async function gather(options: ReplicaRunOptions, state: ReplicaState): Promise<ReplicaSides[]> {
  const {root, folder, layout} = options
  const keys = new Set<string>()
  for (const path of await layout.listWorkspace()) {
    const key = layout.keyOf(path)
    if (key !== null) keys.add(key)
  }
  // The stat cache only spares hashing; scanMemory still lists every file as it is now.
  for (const path of (await scanMemory(root, await readStatCache(root))).keys()) {
    if (path.startsWith(`${folder}/`)) keys.add(path.slice(folder.length + 1))
  }
  for (const key of Object.keys(state.files)) keys.add(key)
  const files: ReplicaSides[] = []
  for (const key of [...keys].sort()) {
    const workspacePath = layout.workspacePathOf(key)
    if (workspacePath === null) continue // another agent's file in the folder: not OpenClaw's, left alone
    if (await isSymlink(join(layout.dir, workspacePath))) continue // writing over it would replace the link
    const memoryPath = `${folder}/${key}`
    files.push({
      memoryPath,
      workspacePath,
      base: await readBaseCopy(options, state, key),
      workspace: await readTextIfExists(join(layout.dir, workspacePath)),
      memory: await readMemoryFile(root, memoryPath),
    })
  }
  return files
}

async function isSymlink(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => null))?.isSymbolicLink() ?? false
}

function change(action: ReplicaAction): ReplicaChange {
  return {action: action.kind as ReplicaChange['action'], memoryPath: action.memoryPath, workspacePath: action.workspacePath}
}

function reasonOf(conflict: ReplicaAction['conflicts'][number]): string {
  const kept = conflict.kept === 'memory' ? 'the .memory/ copy' : 'the workspace copy'
  return conflict.kind === 'edit-delete' ? `deleted on one side, edited on the other: ${kept} kept` : `${conflict.kind} conflict at ${conflict.at}: ${kept} kept`
}

/** Plans and (unless a dry run) carries out one replica. */
export async function runReplica(options: ReplicaRunOptions): Promise<ReplicaReport> {
  const {root, id, layout} = options
  const report = emptyReport(id, layout, options.folder)
  const info = await stat(layout.dir).catch(() => null)
  if (!info?.isDirectory()) {
    report.skipped = `${layout.dir} is not a directory (is ${layout.kind} installed here, and is the path right?)`
    return report
  }
  const state = await readState(options)
  const plan = planReplica(await gather(options, state), {force: options.force})
  report.held = plan.held.map(change)
  if (options.dryRun) {
    for (const action of plan.actions) {
      if (action.kind !== 'record') report.changes.push(change(action))
      if (action.backup !== null) report.backups.push({path: action.memoryPath, backup: await nextBackupPath(root, action.memoryPath)})
      for (const conflict of action.conflicts) report.conflicts.push({path: action.memoryPath, reason: reasonOf(conflict)})
    }
    return report
  }
  let moved = false
  for (const action of plan.actions) moved = (await apply(options, state, action, report)) || moved
  if (!moved) return report
  const at = options.now().toISOString()
  await writeNexusFile(root, statePath(id), formatJson({...state, updatedAt: at}))
  const paths = (kind: ReplicaActionKind) => report.changes.filter((c) => c.action === kind).map((c) => c.memoryPath)
  await appendAudit(root, {
    at, type: 'replicate', replica: id, kind: layout.kind, workspace: layout.dir, folder: options.folder,
    toMemory: paths('to-memory'), toWorkspace: paths('to-workspace'), merged: paths('merge'),
    deleted: [...paths('delete-memory'), ...paths('delete-workspace')], backups: report.backups.length, conflicts: report.conflicts.length,
  })
  return report
}

/** One file. Returns true when the base moved (so the state must be written). */
async function apply(options: ReplicaRunOptions, state: ReplicaState, action: ReplicaAction, report: ReplicaReport): Promise<boolean> {
  if (!(await admitted(options, action, report))) return false
  const {root, id, now} = options
  if (action.backup !== null) {
    // The workspace played "local", `.memory/` "remote" (plan.ts); what the conflict was between goes first, as in sync.
    const sides = {base: action.backupBase ?? null, remote: action.expected.memory ?? '', merged: action.base ?? ''}
    await recordConflict(root, action.memoryPath, action.backup, sides, now().toISOString())
    const saved = await saveBackup(root, action.memoryPath, action.backup)
    report.backups.push({path: action.memoryPath, backup: saved.path})
    await appendAudit(root, {at: now().toISOString(), type: 'backup', path: action.memoryPath, backup: saved.path, replica: id, side: 'workspace'})
  }
  for (const conflict of action.conflicts) {
    const reason = reasonOf(conflict)
    report.conflicts.push({path: action.memoryPath, reason})
    await appendAudit(root, {at: now().toISOString(), type: 'conflict', path: action.memoryPath, replica: id, reason})
  }
  await writeSides(options, action)
  // Both sides hold the new text: only now may the base say so.
  const key = action.memoryPath.slice(options.folder.length + 1)
  if (action.base === null) {
    await deleteNexusFile(root, basePath(id, key))
    delete state.files[key]
  } else {
    await writeNexusFile(root, basePath(id, key), action.base)
    state.files[key] = {hash: hashText(action.base)}
  }
  if (action.kind !== 'record') report.changes.push(change(action))
  return true
}

/** False (and reported) when the text for `.memory/` holds a secret, or a side moved since it was read. */
async function admitted(options: ReplicaRunOptions, action: ReplicaAction, report: ReplicaReport): Promise<boolean> {
  if (action.memory.op === 'write') {
    try {
      await options.screen({[`.memory/${action.memoryPath}`]: action.memory.text})
    } catch (error) {
      if (!(error instanceof SecretRefusedError)) throw error
      report.refused.push({path: action.memoryPath, reason: error.message.replace(/^refused: the event holds/, 'it holds')})
      return false
    }
  }
  // Checked after the (slow) screen, right before writing: an agent may be writing its notes meanwhile.
  const workspace = await readTextIfExists(join(options.layout.dir, action.workspacePath))
  if (workspace === action.expected.workspace && (await readMemoryFile(options.root, action.memoryPath)) === action.expected.memory) return true
  report.left.push(action.memoryPath)
  return false
}

/** `.memory/` first (it is what the other agents read), then the workspace; each write atomic. */
async function writeSides(options: ReplicaRunOptions, action: ReplicaAction): Promise<void> {
  const wsFile = join(options.layout.dir, action.workspacePath)
  if (action.memory.op === 'write') await writeMemoryFile(options.root, action.memoryPath, action.memory.text)
  if (action.memory.op === 'delete') await deleteMemoryFile(options.root, action.memoryPath)
  if (action.workspace.op === 'write') await writeFileAtomic(wsFile, action.workspace.text)
  if (action.workspace.op === 'delete') {
    await rm(wsFile, {force: true})
    await fsyncDir(dirname(wsFile))
  }
}
