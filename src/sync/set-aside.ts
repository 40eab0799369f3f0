/**
 * What a round leaves aside besides the malformed and refused files: the server's files it cannot write here (a file
 * or folder of the other shape in the way, a folder this user may not write in) and the local files and folders this
 * user may not read. Each is named in the report's `invalid` with what to do (the sync exits 2 once the rest is
 * synced); none is deleted on either side. A change of the server's that the round did not apply for any reason
 * (these, or a file the user wrote meanwhile) is *held back*: the sync state must not say it was received, so the
 * next sync is shown it again (run.ts keeps the state's `seq`).
 */
import createDebug from 'debug'

import {unreadableProblem, UnreadableFileError} from '../errors.js'
import {isPermissionError, readMemoryFile, shapeInTheWay, type UnreadableEntry} from '../store/index.js'
import type {SyncResult} from './types.js'

const debug = createDebug('jarvis:sync')

export class SetAside {
  /** A change of the server's was left for the next sync. */
  heldBack = false
  private readonly named = new Set<string>()

  constructor(
    private readonly root: string,
    private readonly result: SyncResult,
  ) {}

  /** A change of the server's at `path` is left for the next sync: `why`, for the debug log. */
  holdBack(path: string, why: string): void {
    debug('%s: %s: left for the next sync', path, why)
    this.heldBack = true
  }

  /** A file or folder this user may not read: left as it is, named, and nothing under it acted on this round. */
  unreadable(entry: UnreadableEntry): void {
    this.name(entry.path, unreadableProblem(entry.folder))
  }

  /**
   * The server's file at `path` was not written here because its place is taken by a file or folder of the other
   * shape, or (`error`, when given) this user may not write there: named, true. False when neither is the case.
   */
  notWritten(path: string, error?: unknown): boolean {
    const inTheWay = shapeInTheWay(this.root, path)
    if (inTheWay?.kind === 'folder') {
      this.name(path, 'not written here: it is a folder on this machine and a file on the server; rename or move the folder (its files are then synced under their new names) and sync again')
    } else if (inTheWay !== undefined) {
      this.name(path, `not written here: .memory/${inTheWay.path} is a file on this machine, where the server has a folder; rename .memory/${inTheWay.path} (it is then synced under its new name) and sync again`)
    } else if (error !== undefined && isPermissionError(error)) {
      this.name(path, 'not written here: this user may not write in its folder (permission denied); give the folder back write access (chmod u+rwx) and sync again')
    } else return false
    return true
  }

  /**
   * The text of a local file, or null when there is none — or when this user may not read it, which is then named
   * (see `unreadable`).
   */
  async read(path: string): Promise<string | null> {
    try {
      return await readMemoryFile(this.root, path)
    } catch (error) {
      if (!(error instanceof UnreadableFileError)) throw error
      this.unreadable({path, folder: false})
      return null
    }
  }

  /** Whether `path` is named (set aside) in this round. */
  has(path: string): boolean {
    return this.named.has(path)
  }

  private name(path: string, problem: string): void {
    this.heldBack = true
    if (this.named.has(path)) return
    this.named.add(path)
    this.result.invalid.push({path, problems: [problem]})
  }
}
