/**
 * Conflict backups (CONTRACT §4, "Backups are never overwritten"). The newest local copy that lost a conflict is
 * `<stem>.local.bak` beside the file (`PROJECT_MEMORY.md` → `PROJECT_MEMORY.local.bak`); an earlier, different
 * backup is first moved to the next number, `<stem>.local.<N>.bak` (N = highest existing + 1, so higher is newer).
 * Backups live only in `.memory/` on this machine; `scanMemory` skips them, so they are never synced.
 *
 * Whose backup is whose. Two files of one folder can share a stem (`notes.md` and `notes.json`), and then a name
 * cut at the extension cannot say which file a backup holds; restoring the wrong one puts one file's text into the
 * other. So:
 * - `.nexus/backup-owners.json` records the file of every backup written here: `status` and `resolve` go by it.
 * - A file does not start a chain where another file's backups are. While `notes.local.bak` waits for notes.md,
 *   notes.json's backups are `notes.json.local.bak` (`.local.<N>.bak`): its whole name, so a person looking at
 *   the folder sees whose backup it is without jarvis. Renaming every backup that way would change the contract's
 *   names for the common case and leave older trees' backups behind; sharing one chain and relying on the record
 *   alone would leave `notes.local.bak` holding notes.json's text, which the contract tells a person is
 *   notes.md's. A file whose stem no other file shares keeps `<stem>.local.bak`, and a file keeps writing where
 *   its backups are, so its newest is always first (see `chainFor` for the rare chain two files must share).
 * - A backup the record does not name (written by an older jarvis, or `.nexus/` was lost) belongs, as before, to
 *   the one file beside it with its stem (or its whole name). When several files could own it, nothing guesses:
 *   `status` names the files it could be, `resolve` refuses it, and a later save never joins its chain.
 */
import {type Dirent} from 'node:fs'
import {readdir, readFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import createDebug from 'debug'

import {parseJsonFile} from '../schemas/parse.js'
import {type BackupOwners, backupOwnersSchema} from '../schemas/nexus.js'
import {fsyncDir, linkNoClobber, readTextIfExists, writeFileAtomic} from './atomic.js'
import {resolveInside} from './inside.js'
import {checkRelativePath, isBackupName, isIgnoredMemoryPath} from './paths.js'
import {memoryDir, nexusDir} from './root.js'
import {formatJson} from './sync-state.js'
import {deleteMemoryFile} from './tree.js'

const debug = createDebug('jarvis:store')

export const BACKUP_OWNERS_FILE = '.nexus/backup-owners.json'

export type BackupResult = {path: string; rotated?: string; unchanged?: undefined} | {path: string; unchanged: true; rotated?: undefined}

/** Whose a backup is: `file`, or null when an unrecorded backup could be any of `candidates` (or none of them). */
export interface BackupOwner {
  path: string
  file: string | null
  candidates: string[]
}

/** The stem of a file name: without its last extension (`a.b.md` → `a.b`); a dotfile or a name without one stays whole. */
function stemOf(name: string): string {
  const dot = name.lastIndexOf('.')
  return dot > 0 ? name.slice(0, dot) : name
}

/** `a/b/` of `a/b/c.md`, `''` at the top. */
function dirOf(rel: string): string {
  return rel.slice(0, rel.lastIndexOf('/') + 1)
}

function nameOf(rel: string): string {
  return rel.slice(rel.lastIndexOf('/') + 1)
}

/** `<chain>.local.bak`, or the numbered `<chain>.local.<N>.bak`. */
function chainName(chain: string, n?: number): string {
  return `${chain}.local${n === undefined ? '' : `.${n}`}.bak`
}

/** The chain a backup name belongs to and its number (the newest, `.local.bak`, is Infinity). */
function parseBackupName(name: string): {chain: string; n: number} | null {
  const match = /^(.+)\.local(?:\.(\d+))?\.bak$/.exec(name)
  if (!match) return null
  return {chain: match[1], n: match[2] === undefined ? Number.POSITIVE_INFINITY : Number(match[2])}
}

function newestFirst(paths: string[]): string[] {
  const n = (path: string) => parseBackupName(nameOf(path))?.n ?? 0
  return [...paths].sort((a, b) => n(b) - n(a) || (a < b ? -1 : a > b ? 1 : 0))
}

/** Relative path of the newest backup of `rel` under the contract's name, or of its numbered backup N. */
export function backupPathFor(rel: string, n?: number): string {
  const clean = checkRelativePath(rel)
  return dirOf(clean) + chainName(stemOf(nameOf(clean)), n)
}

// --- the record -------------------------------------------------------------------------------------------------

/** `.nexus/backup-owners.json`; missing → empty, malformed → SchemaError naming it (never a guess about whose). */
async function readOwnersFile(root: string): Promise<BackupOwners> {
  const text = await readTextIfExists(join(nexusDir(root), 'backup-owners.json'))
  if (text === null) return backupOwnersSchema.parse({})
  return parseJsonFile(backupOwnersSchema, text, BACKUP_OWNERS_FILE)
}

async function writeOwnersFile(root: string, file: BackupOwners, backups: Record<string, string>): Promise<void> {
  const sorted = Object.fromEntries(Object.entries(backups).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  await writeFileAtomic(join(nexusDir(root), 'backup-owners.json'), formatJson({...file, version: 1, backups: sorted}))
}

// --- one folder -------------------------------------------------------------------------------------------------

/** The backups and the memory files of one folder of `.memory/` (names), with the record. */
interface Folder {
  /** `''` or `a/b/`. */
  dir: string
  backups: string[]
  files: string[]
  owners: Record<string, string>
}

async function readFolder(root: string, dir: string, owners: Record<string, string>): Promise<Folder> {
  const abs = dir === '' ? memoryDir(root) : await resolveInside(memoryDir(root), dir.slice(0, -1))
  let entries: Dirent[]
  try {
    entries = await readdir(abs, {withFileTypes: true})
  } catch {
    entries = []
  }
  const folder: Folder = {dir, backups: [], files: [], owners}
  for (const entry of entries) {
    if (!entry.isFile()) continue
    if (isBackupName(entry.name)) folder.backups.push(entry.name)
    else if (!isIgnoredMemoryPath(entry.name)) folder.files.push(entry.name)
  }
  return folder
}

/** Whose the backup `name` of `folder` is: the record first; unrecorded, the one file beside it that it is named after. */
function ownerIn(folder: Folder, name: string): BackupOwner {
  const path = folder.dir + name
  const recorded = folder.owners[path]
  if (recorded !== undefined) return {path, file: recorded, candidates: [recorded]}
  const parsed = parseBackupName(name)
  const candidates = parsed ? folder.files.filter((file) => file === parsed.chain || stemOf(file) === parsed.chain).map((file) => folder.dir + file) : []
  return {path, file: candidates.length === 1 ? candidates[0] : null, candidates}
}

/**
 * True when the backup `name` (in `rel`'s folder) is `rel`'s: recorded so; or unrecorded, named after `rel`, and
 * no other file beside it could own it (so the backup of a file that is gone stays its own).
 */
function isBackupOf(folder: Folder, name: string, rel: string): boolean {
  const recorded = folder.owners[folder.dir + name]
  if (recorded !== undefined) return recorded === rel
  const parsed = parseBackupName(name)
  const fileName = nameOf(rel)
  if (!parsed || (parsed.chain !== fileName && parsed.chain !== stemOf(fileName))) return false
  return ownerIn(folder, name).candidates.every((candidate) => candidate === rel)
}

/**
 * The chain `rel`'s next backup goes to. Where its backups already are, so that one chain holds them all and its
 * newest is always first (higher numbers newer). Otherwise its stem (the contract's name) unless that chain holds
 * another file's backups, or ones nobody can attribute; then its whole name.
 */
function chainFor(folder: Folder, rel: string): string {
  const mine = newestFirst(folder.backups.filter((backup) => isBackupOf(folder, backup, rel)))
  if (mine.length > 0) return parseBackupName(mine[0])!.chain
  const name = nameOf(rel)
  const stem = stemOf(name)
  const taken = (chain: string) => folder.backups.some((backup) => parseBackupName(backup)?.chain === chain)
  if (!taken(stem)) return stem
  // Both names taken only when a file has no extension to keep (`notes` beside `notes.md`) or three files fight over
  // two names (`a.md`, `a.json`, `a.md.txt`): share the chain; rotation keeps every backup, the record whose each is.
  return name
}

// --- what the commands call -------------------------------------------------------------------------------------

/** Every backup of `rel` that exists, newest first: `.local.bak`, then `.local.N.bak` by N descending. */
export async function listBackups(root: string, rel: string): Promise<string[]> {
  const clean = checkRelativePath(rel)
  const folder = await readFolder(root, dirOf(clean), (await readOwnersFile(root)).backups)
  return newestFirst(folder.backups.filter((name) => isBackupOf(folder, name, clean)).map((name) => folder.dir + name))
}

/** Every conflict backup in `.memory/`, relative paths, sorted. */
export async function findBackups(root: string): Promise<string[]> {
  const base = memoryDir(root)
  let entries: string[]
  try {
    entries = await readdir(base, {recursive: true})
  } catch {
    return []
  }
  return entries
    .map((entry) => entry.split('\\').join('/'))
    .filter((rel) => isBackupName(nameOf(rel)))
    .sort()
}

/**
 * The memory files a backup can belong to: the one the record names, else the files beside it named like it
 * (`plan.local.bak` → `plan.md`, `plan.json`; `plan.json.local.bak` → `plan.json`). One means it is that file's.
 */
export async function filesOfBackup(root: string, backupRel: string): Promise<string[]> {
  const clean = checkRelativePath(backupRel)
  const folder = await readFolder(root, dirOf(clean), (await readOwnersFile(root)).backups)
  return ownerIn(folder, nameOf(clean)).candidates
}

/** Whose each backup is (for `jarvis status`), in the order given; a folder is read once. */
export async function attributeBackups(root: string, backups: string[]): Promise<BackupOwner[]> {
  const owners = (await readOwnersFile(root)).backups
  const folders = new Map<string, Folder>()
  const out: BackupOwner[] = []
  for (const backup of backups) {
    const clean = checkRelativePath(backup)
    const dir = dirOf(clean)
    let folder = folders.get(dir)
    if (!folder) folders.set(dir, (folder = await readFolder(root, dir, owners)))
    out.push(ownerIn(folder, nameOf(clean)))
  }
  return out
}

/** One file's waiting backups, newest first; `file` null: an unrecorded backup that could be any of `candidates`. */
export interface BackupsOfFile {
  file: string | null
  backups: string[]
  candidates?: string[]
}

/** `backups` under the file each belongs to, files sorted, the doubtful ones last (for `jarvis status`). */
export async function backupsByFile(root: string, backups: string[]): Promise<BackupsOfFile[]> {
  const byFile = new Map<string, string[]>()
  const doubtful: BackupsOfFile[] = []
  for (const owner of await attributeBackups(root, backups)) {
    if (owner.file === null) doubtful.push({file: null, backups: [owner.path], candidates: owner.candidates})
    else byFile.set(owner.file, [...(byFile.get(owner.file) ?? []), owner.path])
  }
  const files = [...byFile.keys()].sort()
  return [...files.map((file) => ({file, backups: newestFirst(byFile.get(file)!)})), ...doubtful]
}

/** Where `saveBackup(root, rel, …)` would put the newest backup now (a dry run reports it). */
export async function nextBackupPath(root: string, rel: string): Promise<string> {
  const clean = checkRelativePath(rel)
  const folder = await readFolder(root, dirOf(clean), (await readOwnersFile(root)).backups)
  return folder.dir + chainName(chainFor(folder, clean))
}

/** Deletes a backup (a person decided it) and forgets whose it was; false when it was not there. */
export async function deleteBackup(root: string, backupRel: string): Promise<boolean> {
  const clean = checkRelativePath(backupRel)
  if (!isBackupName(nameOf(clean))) throw new Error(`deleteBackup: ${clean} is not a backup name`)
  const removed = await deleteMemoryFile(root, clean)
  // After the file: a crash between the two leaves a record of a backup that is gone, which nothing reads.
  const file = await readOwnersFile(root)
  if (file.backups[clean] !== undefined) {
    const rest = {...file.backups}
    delete rest[clean]
    await writeOwnersFile(root, file, rest)
  }
  return removed
}

async function readIfExists(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

function isExists(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'EEXIST'
}

/**
 * Saves `content` as the newest backup of `rel` (a path relative to `.memory/`). Returns the backup's path
 * (relative to `.memory/`) and, when an earlier different backup had to make room, where it went; or
 * `{path, unchanged: true}` when the newest backup already holds exactly this content (nothing is written).
 * Never overwrites a backup with different content, and moves another file's backup (to the next number, the
 * record following it) only in a chain two files must share (see `chainFor`). Call it before touching the file
 * itself, holding the tree lock.
 *
 * Order, so that a crash never leaves a backup attributed to the wrong file: (1) the old newest is linked to its
 * number (never over an existing name, and past every number the record mentions); (2) the record is written,
 * naming the moved backup's file and `rel` for the new newest; (3) the new newest is written. Killed after (1),
 * the moved backup is unrecorded and attributed by its name; after (2), the record names a backup not yet there.
 */
export async function saveBackup(root: string, rel: string, content: string | Uint8Array): Promise<BackupResult> {
  const clean = checkRelativePath(rel)
  const base = memoryDir(root)
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content)
  // Every step refuses to replace an existing name; if something appeared meanwhile, look again.
  for (let attempt = 0; ; attempt++) {
    const ownersFile = await readOwnersFile(root)
    const folder = await readFolder(root, dirOf(clean), ownersFile.backups)
    const chain = chainFor(folder, clean)
    const newestRel = folder.dir + chainName(chain)
    const newestAbs = await resolveInside(base, newestRel)
    const existing = await readIfExists(newestAbs)
    const newestIsMine = existing !== null && isBackupOf(folder, chainName(chain), clean)
    if (existing !== null && newestIsMine && existing.equals(bytes)) {
      debug('backup %s already holds this content', newestRel)
      return {path: newestRel, unchanged: true}
    }
    const record = {...ownersFile.backups}
    // What is certain now stays certain: a file that appears later beside an unrecorded backup cannot make it doubtful.
    for (const name of folder.backups) {
      const file = ownerIn(folder, name).file ?? (isBackupOf(folder, name, clean) ? clean : null)
      if (file !== null) record[folder.dir + name] = file
    }
    // Backups deleted by hand are forgotten (their numbers are not reused before the record is written again).
    for (const path of Object.keys(record)) if (dirOf(path) === folder.dir && !folder.backups.includes(nameOf(path))) delete record[path]
    let rotated: string | undefined
    if (existing !== null) {
      const previousOwner = newestIsMine ? clean : ownerIn(folder, chainName(chain)).file
      let next = 1
      for (const path of [...folder.backups.map((name) => folder.dir + name), ...Object.keys(ownersFile.backups)]) {
        const parsed = dirOf(path) === folder.dir ? parseBackupName(nameOf(path)) : null
        if (parsed?.chain === chain && Number.isFinite(parsed.n)) next = Math.max(next, parsed.n + 1)
      }
      for (;;) {
        const candidate = folder.dir + chainName(chain, next)
        try {
          await linkNoClobber(newestAbs, await resolveInside(base, candidate))
          await fsyncDir(dirname(newestAbs))
          rotated = candidate
          break
        } catch (error) {
          if (!isExists(error)) throw error
          next++ // that number is taken: the next one, never an overwrite
        }
      }
      if (previousOwner === null) delete record[rotated]
      else record[rotated] = previousOwner
      debug('backup %s moved to %s', newestRel, rotated)
    }
    record[newestRel] = clean
    await writeOwnersFile(root, ownersFile, record)
    try {
      await writeFileAtomic(newestAbs, bytes, {exclusive: true})
    } catch (error) {
      if (isExists(error) && attempt < 10) continue
      throw error
    }
    return rotated === undefined ? {path: newestRel} : {path: newestRel, rotated}
  }
}
