/**
 * `jarvis resolve <path> --keep server|local`: a person decides a conflict a sync left behind. The file holds the
 * server's side and the backup beside it the local one; `server` drops the backup, `local` puts the backup's text
 * back into the file as an ordinary edit (the next sync pushes it). One backup at a time, the newest: older
 * conflicts of the same file keep waiting, never dropped unseen. Logged in `.nexus/audit.jsonl`. A file's backups
 * are its own (store/backup.ts): `notes.md` never gets the backup of `notes.json`, which shares its stem.
 */
import {basename} from 'node:path'

import {BadInputError} from '../errors.js'
import {openTree} from '../ops/context.js'
import {
  appendAudit,
  attributeBackups,
  checkRelativePath,
  deleteBackup,
  filesOfBackup,
  findBackups,
  isBackupName,
  listBackups,
  readMemoryFile,
  withTreeLock,
  writeMemoryFile,
} from '../store/index.js'

export interface ResolveOptions {
  dir?: string
  /** The memory file (or its backup), relative to `.memory/`; a leading `.memory/` is accepted. */
  path: string
  keep: 'server' | 'local'
}

export interface ResolveResult {
  file: string
  backup: string
  kept: 'server' | 'local'
  /** Older backups of the same file, still waiting. */
  waiting: string[]
}

export async function resolveConflict(options: ResolveOptions): Promise<ResolveResult> {
  const tree = await openTree(options.dir)
  const rel = checkRelativePath(options.path.replace(/^\.memory\//, ''))
  return withTreeLock(tree.root, {timeoutMs: tree.config.sync.lockTimeout, command: 'resolve'}, async () => {
    const {file, backup} = await conflictOf(tree.root, rel)
    if (options.keep === 'local') {
      const text = await readMemoryFile(tree.root, backup)
      if (text === null) throw new BadInputError(`${backup} disappeared; nothing was changed`, {path: backup})
      await writeMemoryFile(tree.root, file, text)
    }
    await deleteBackup(tree.root, backup)
    await appendAudit(tree.root, {type: 'resolve', path: file, backup, keep: options.keep})
    return {file, backup, kept: options.keep, waiting: await listBackups(tree.root, file)}
  })
}

/** The memory file and the backup to decide: the named backup, or the newest backup of the named file. */
async function conflictOf(root: string, rel: string): Promise<{file: string; backup: string}> {
  if (isBackupName(basename(rel))) {
    if ((await readMemoryFile(root, rel)) === null) throw new BadInputError(`.memory/${rel} does not exist; \`jarvis status\` lists the backups that wait`, {path: rel})
    const files = await filesOfBackup(root, rel)
    if (files.length > 1) throw doubtful(rel, files)
    if (files.length === 0) throw new BadInputError(`${rel}: no memory file beside it has its name; name the memory file instead: jarvis resolve <file> --keep server|local`, {path: rel, files})
    return {file: files[0], backup: rel}
  }
  const [newest] = await listBackups(root, rel)
  if (newest) return {file: rel, backup: newest}
  // A backup an older jarvis left beside two files of one stem may be this file's: say so rather than "nothing".
  const maybe = (await attributeBackups(root, await findBackups(root))).find((owner) => owner.file === null && owner.candidates.includes(rel))
  if (maybe) throw doubtful(maybe.path, maybe.candidates)
  throw new BadInputError(`no conflict backup of ${rel} is waiting; \`jarvis status\` lists the ones that are`, {path: rel})
}

/**
 * An unrecorded backup (an older jarvis wrote it) beside several files named like it: jarvis cannot tell whose it
 * is, and restoring it into the wrong file is the mistake this refuses to make.
 */
function doubtful(backup: string, files: string[]): BadInputError {
  return new BadInputError(
    `.memory/${backup} was left by an older jarvis and could be the backup of ${files.join(' or ')}; jarvis cannot tell which. Open it, copy what you want to keep into the right file, then delete it`,
    {path: backup, files},
  )
}
