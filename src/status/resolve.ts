/**
 * `jarvis resolve <path> --keep server|local`: a person decides a conflict a sync left behind. The file holds the
 * server's side and the backup beside it the local one; `server` drops the backup, `local` puts the backup's text
 * back into the file as an ordinary edit (the next sync pushes it). One backup at a time, the newest: older
 * conflicts of the same file keep waiting, never dropped unseen. Logged in `.nexus/audit.jsonl`.
 */
import {basename} from 'node:path'

import {BadInputError} from '../errors.js'
import {openTree} from '../ops/context.js'
import {
  appendAudit,
  checkRelativePath,
  deleteMemoryFile,
  filesOfBackup,
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
    await deleteMemoryFile(tree.root, backup)
    await appendAudit(tree.root, {type: 'resolve', path: file, backup, keep: options.keep})
    return {file, backup, kept: options.keep, waiting: await listBackups(tree.root, file)}
  })
}

/** The memory file and the backup to decide: the named backup, or the newest backup of the named file. */
async function conflictOf(root: string, rel: string): Promise<{file: string; backup: string}> {
  if (isBackupName(basename(rel))) {
    if ((await readMemoryFile(root, rel)) === null) throw new BadInputError(`.memory/${rel} does not exist; \`jarvis status\` lists the backups that wait`, {path: rel})
    const files = await filesOfBackup(root, rel)
    if (files.length !== 1) {
      const which = files.length === 0 ? 'no memory file beside it has its name' : `it could belong to ${files.join(' or ')}`
      throw new BadInputError(`${rel}: ${which}; name the memory file instead: jarvis resolve <file> --keep server|local`, {path: rel, files})
    }
    return {file: files[0], backup: rel}
  }
  const [newest] = await listBackups(root, rel)
  if (!newest) throw new BadInputError(`no conflict backup of ${rel} is waiting; \`jarvis status\` lists the ones that are`, {path: rel})
  return {file: rel, backup: newest}
}
