/**
 * Writing the agents' files all or nothing. Every file is checked before any is written: one jarvis cannot write,
 * or that the user made read-only, stops the install naming it, with nothing changed. Then every new text goes to
 * a temp file beside its target, and only once all are complete are they renamed into place; a failure after
 * that (a folder changed meanwhile) puts back the files already written and removes the folders made for them.
 */
import {constants, existsSync} from 'node:fs'
import {access, readdir, rm, rmdir, stat} from 'node:fs/promises'
import {dirname, join, relative} from 'node:path'

import {FileNotWritableError} from '../errors.js'
import {AtomicBatch, type StagedFile, writeFileAtomic} from '../store/index.js'

export interface FileEdit {
  file: string
  /** What the file holds now; null: no file. Put back when a later write fails. */
  before: string | null
  /** The new text; null deletes the file. */
  after: string | null
}

/** Folders between `file` and its nearest existing ancestor, outermost first. */
export function missingDirs(file: string): string[] {
  const dirs: string[] = []
  for (let dir = dirname(file); !existsSync(dir) && dirname(dir) !== dir; dir = dirname(dir)) dirs.unshift(dir)
  return dirs
}

const modeOf = (mode: number): string => (mode & 0o777).toString(8).padStart(4, '0')

/** Writable by this process (the permission bits a non-root user meets, and ownership). */
const canWrite = (path: string, mode: number): Promise<boolean> =>
  access(path, mode).then(
    () => true,
    () => false,
  )

/** What stops a write: the file or folder, why, and what to do. */
interface Obstacle {
  path: string
  why: string
  fix: string
}

/**
 * What stops `edit`, or undefined. A file or folder with no write bit at all counts as read-only even where this
 * process could write it anyway (root): the user made it so, and a rename would replace the file without a word.
 */
async function obstacleTo(edit: FileEdit): Promise<Obstacle | undefined> {
  const {file} = edit
  if (edit.before !== null) {
    const info = await stat(file)
    if ((info.mode & 0o222) === 0) return {path: file, why: `is read-only (mode ${modeOf(info.mode)})`, fix: `make it writable (chmod u+w ${file})`}
    if (!(await canWrite(file, constants.W_OK))) return {path: file, why: `cannot be written by you (mode ${modeOf(info.mode)}, owner uid ${info.uid})`, fix: 'give yourself write access to it'}
  }
  // A new text is renamed into place and a deleted file unlinked: both write the folder (the nearest one that
  // exists, for a file in folders still to make).
  const folder = dirname(missingDirs(file)[0] ?? file)
  const info = await stat(folder)
  if (!info.isDirectory()) return {path: folder, why: 'is not a folder', fix: 'move it away'}
  if ((info.mode & 0o222) === 0) return {path: folder, why: `is a read-only folder (mode ${modeOf(info.mode)})`, fix: `make it writable (chmod u+w ${folder})`}
  if (!(await canWrite(folder, constants.W_OK | constants.X_OK))) return {path: folder, why: `is a folder you cannot write (mode ${modeOf(info.mode)}, owner uid ${info.uid})`, fix: 'give yourself write access to it'}
  return undefined
}

/**
 * Refuses before anything is written when a changed file cannot be written: one line per file or folder in the way,
 * naming it, the files jarvis would write there, and what to do.
 */
export async function checkWritable(edits: FileEdit[]): Promise<void> {
  const changed = edits.filter((edit) => edit.before !== edit.after)
  const obstacles = new Map<string, Obstacle & {files: string[]}>()
  for (const [index, obstacle] of (await Promise.all(changed.map(obstacleTo))).entries()) {
    if (obstacle === undefined) continue
    const seen = obstacles.get(obstacle.path) ?? {...obstacle, files: []}
    if (changed[index].file !== obstacle.path) seen.files.push(changed[index].file)
    obstacles.set(obstacle.path, seen)
  }
  if (obstacles.size === 0) return
  const lines = [...obstacles.values()].map(({path, why, fix, files}) => `  ${path} ${why}${files.length > 0 ? `, and jarvis writes ${files.map((file) => relative(path, file)).join(', ')} there` : ''}: ${fix}`)
  throw new FileNotWritableError(`cannot write the agents' files, so nothing was changed:\n${lines.join('\n')}\nthen run again`, {paths: [...obstacles.keys()]})
}

/**
 * Makes every edit or none: each new text complete in its temp file first, then the renames, then the deletions.
 * On a failure the files already written are put back as they were and the folders made for them removed.
 */
export async function writeFiles(edits: FileEdit[]): Promise<void> {
  const changed = edits.filter((edit) => edit.before !== edit.after)
  const made = [...new Set(changed.flatMap((edit) => (edit.after === null ? [] : missingDirs(edit.file))))]
  const batch = new AtomicBatch()
  const done: FileEdit[] = []
  let current: FileEdit | undefined
  try {
    const staged: Array<[FileEdit, StagedFile]> = []
    for (const edit of changed) {
      current = edit
      if (edit.after !== null) staged.push([edit, await batch.stage(edit.file, edit.after, {absent: edit.before === null})])
    }
    current = undefined
    await batch.makeDurable()
    for (const [edit, file] of staged) {
      current = edit
      if (!batch.commit(file)) throw new Error('its folder was removed meanwhile')
      done.push(edit)
    }
    for (const edit of changed.filter((e) => e.after === null)) {
      current = edit
      await rm(edit.file, {force: true})
      done.push(edit)
    }
    await batch.syncFolders()
  } catch (error) {
    await batch.abandon()
    const notBack = await putBack(done)
    for (const dir of made.sort((a, b) => b.length - a.length)) await rmdir(dir).catch(() => {})
    const reason = error instanceof Error ? error.message : String(error)
    const state = notBack.length === 0 ? 'nothing was changed' : `could not put back ${notBack.join(', ')} as it was`
    throw new FileNotWritableError(`could not write ${current?.file ?? 'the agents’ files'} (${reason}); ${state}`, {file: current?.file, notBack}, error)
  }
}

/** The files written, as they were before; the ones that could not be put back. */
async function putBack(done: FileEdit[]): Promise<string[]> {
  const failed: string[] = []
  for (const edit of [...done].reverse()) {
    const restore = edit.before === null ? rm(edit.file, {force: true}) : writeFileAtomic(edit.file, edit.before)
    await restore.catch(() => failed.push(edit.file))
  }
  return failed
}

/**
 * Of `dirs` (folders install made), the ones nothing is left in once `deleted` are gone: deepest first, a folder
 * holding only deleted files and such folders counts as empty, and so does one no longer there.
 */
export async function foldersLeftEmpty(dirs: string[], deleted: Set<string>): Promise<Set<string>> {
  const empty = new Set<string>()
  for (const dir of [...dirs].sort((a, b) => b.length - a.length)) {
    const names = await readdir(dir).catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? [] : undefined))
    if (names !== undefined && names.every((name) => deleted.has(join(dir, name)) || empty.has(join(dir, name)))) empty.add(dir)
  }
  return empty
}
