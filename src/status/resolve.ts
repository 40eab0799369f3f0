/**
 * `jarvis resolve <path> --keep server|local`: a person decides a conflict a sync left behind. The file holds the
 * sync's merge, where the server's side won the overlap; the backup beside it holds the local document from before
 * the merge. Logged in `.nexus/audit.jsonl`, one line per backup decided. A file's backups are its own
 * (store/backup.ts): `notes.md` never gets the backup of `notes.json`, which shares its stem.
 *
 * `server` drops one backup, the newest (or the one named): older conflicts of the same file keep waiting, never
 * dropped unseen.
 *
 * `local` puts your side of the disagreement back as an ordinary edit (the next sync pushes it) and keeps every
 * other change — the other side's clean edits, and anything written since. The backup is your whole pre-merge
 * document, so writing it back would silently undo the other side's clean edits; instead the record of the conflict
 * (store/conflict-records.ts) gives its base and the other side's text, and only the overlaps change
 * (merge/keep-local.ts). Named by its file, every backup of the file is decided, newest first, so your newest side
 * wins: an older conflict's lines go back only where the file still holds what that sync left, and where a newer
 * side of yours replaced them they are superseded. A backup some of whose lines could not go back (the file changed
 * there since) stays, with those lines named, and the command exits 4. A backup without a record (an older jarvis
 * wrote it; a file whose rule decides whole documents) goes back whole, but only as the newest or the one named
 * (an older one whole would undo newer ones): the lines of the file it replaces are named and kept as a backup.
 */
import {basename} from 'node:path'

import {BadInputError, ConflictLeftError} from '../errors.js'
import {allMarked, localSideOf, NO_MARKS, type NotPutBack, putBack, type PutBackMarks, replacedLines} from '../merge/index.js'
import {openTree} from '../ops/context.js'
import {
  appendAudit,
  attributeBackups,
  checkRelativePath,
  deleteBackup,
  filesOfBackup,
  findBackups,
  forgetConflictRecord,
  isBackupName,
  listBackups,
  readConflictRecord,
  readMemoryFile,
  saveBackup,
  withTreeLock,
  writeMemoryFile,
} from '../store/index.js'

export interface ResolveOptions {
  dir?: string
  /** The memory file (or its backup), relative to `.memory/`; a leading `.memory/` is accepted. */
  path: string
  keep: 'server' | 'local'
}

/**
 * What came of one backup:
 * - `dropped`: `--keep server`; the file stays as it is;
 * - `put-back`: your side of its conflict is in the file (parts a newer side of yours replaced are `superseded`);
 * - `restored`: no record of its conflict: the backup is the file now (`replaced` says what that took away);
 * - `kept`: parts of your side could not go back, the file changed there since (`notPutBack`): the backup stays;
 * - `waits`: an older backup without a record: put back whole it would undo newer ones; name it to restore it.
 */
export interface DecidedBackup {
  backup: string
  outcome: 'dropped' | 'put-back' | 'restored' | 'kept' | 'waits'
  notPutBack?: NotPutBack[]
}

export interface ResolveResult {
  file: string
  /** The first backup decided: the newest of the file, or the one named. */
  backup: string
  kept: 'server' | 'local'
  /** Every backup decided, newest first. */
  decided: DecidedBackup[]
  /** The file was written (`--keep local` put something of yours back). */
  changed: boolean
  /** A backup put back whole took these lines of the file away; the file as it was is kept as `backup`. */
  replaced?: {backup: string; lines: Array<{line: number; text: string}>}
  /** Backups of the same file still waiting, newest first. */
  waiting: string[]
}

export async function resolveConflict(options: ResolveOptions): Promise<ResolveResult> {
  const tree = await openTree(options.dir)
  const rel = checkRelativePath(options.path.replace(/^\.memory\//, ''))
  return withTreeLock(tree.root, {timeoutMs: tree.config.sync.lockTimeout, command: 'resolve'}, async () => {
    const {file, backups} = await conflictOf(tree.root, rel, options.keep)
    const texts = await backupTexts(tree.root, backups)
    const done = options.keep === 'server' ? await keepServer(tree.root, file, texts) : await keepLocal(tree.root, file, texts)
    return {file, backup: backups[0], kept: options.keep, ...done, waiting: await listBackups(tree.root, file)}
  })
}

/** The error a resolve that left some of your lines in their backup exits with (4), after saying what it did. */
export function resolveLeftover(result: ResolveResult): ConflictLeftError | undefined {
  const kept = result.decided.filter((d) => d.outcome === 'kept').map((d) => `.memory/${d.backup}`)
  if (kept.length === 0) return undefined
  return new ConflictLeftError(
    `some of your lines could not go back into .memory/${result.file}: the file changed there since the conflict; they wait in ${kept.join(', ')}. Copy what you still want into the file, then drop the backup: jarvis resolve ${kept[0]} --keep server`,
    {result},
  )
}

interface BackupText {
  backup: string
  text: string
}

async function backupTexts(root: string, backups: readonly string[]): Promise<BackupText[]> {
  const texts: BackupText[] = []
  for (const backup of backups) {
    const text = await readMemoryFile(root, backup)
    if (text === null) throw new BadInputError(`${backup} disappeared; nothing was changed`, {path: backup})
    texts.push({backup, text})
  }
  return texts
}

async function keepServer(root: string, file: string, backups: readonly BackupText[]): Promise<Pick<ResolveResult, 'decided' | 'changed'>> {
  const [{backup, text}] = backups
  await deleteBackup(root, backup)
  await forgetConflictRecord(root, file, text)
  await appendAudit(root, {type: 'resolve', path: file, backup, keep: 'server', outcome: 'dropped'})
  return {decided: [{backup, outcome: 'dropped'}], changed: false}
}

async function keepLocal(root: string, file: string, backups: readonly BackupText[]): Promise<Pick<ResolveResult, 'decided' | 'replaced' | 'changed'>> {
  const original = await readMemoryFile(root, file)
  let current = original
  let marks: PutBackMarks = NO_MARKS
  let restoredWhole: string | undefined
  const decided: DecidedBackup[] = []
  for (const [index, {backup, text}] of backups.entries()) {
    const record = await readConflictRecord(root, file, text)
    const yours = record === null ? null : localSideOf(file, record.base, text, record.remote)
    if (record === null || yours === null) {
      if (index > 0) {
        decided.push({backup, outcome: 'waits'})
        continue
      }
      restoredWhole = backup
      current = text
      marks = allMarked()
      decided.push({backup, outcome: 'restored'})
      continue
    }
    // A file deleted since the conflict: your side comes back (an edit beats a deletion).
    const step = current === null ? {text: yours, notPutBack: [], marks: allMarked()} : putBack(file, record.merged, current, yours, marks)
    current = step.text
    marks = step.marks
    const changedSince = step.notPutBack.some((part) => !part.superseded)
    decided.push({backup, outcome: changedSince ? 'kept' : 'put-back', ...(step.notPutBack.length > 0 ? {notPutBack: step.notPutBack} : {})})
  }

  // The lines a whole backup took away are kept first, as a backup of the file, before the file is written.
  let replaced: ResolveResult['replaced']
  const renamed = new Map<string, string>()
  if (restoredWhole !== undefined && original !== null) {
    const lines = replacedLines(original, backups[0].text)
    if (lines.length > 0) {
      const saved = await saveBackup(root, file, original)
      // The backup restored was the newest: the save moved it to a number.
      if (saved.rotated !== undefined && saved.path === restoredWhole) renamed.set(restoredWhole, saved.rotated)
      replaced = {backup: saved.path, lines}
    }
  }
  const changed = current !== null && current !== original
  if (current !== null && changed) await writeMemoryFile(root, file, current)
  for (const {backup, outcome} of decided) {
    const {text} = backups.find((b) => b.backup === backup)!
    if (outcome === 'put-back' || outcome === 'restored') {
      await deleteBackup(root, renamed.get(backup) ?? backup)
      await forgetConflictRecord(root, file, text)
    }
    await appendAudit(root, {type: 'resolve', path: file, backup, keep: 'local', outcome, ...(outcome === 'restored' && replaced ? {replacedKeptIn: replaced.backup} : {})})
  }
  return {decided, changed, ...(replaced ? {replaced} : {})}
}

/**
 * The memory file and the backups to decide, newest first: the named backup; or, for a named file, its newest
 * (`server`) or all of them (`local`).
 */
async function conflictOf(root: string, rel: string, keep: 'server' | 'local'): Promise<{file: string; backups: string[]}> {
  if (isBackupName(basename(rel))) {
    if ((await readMemoryFile(root, rel)) === null) throw new BadInputError(`.memory/${rel} does not exist; \`jarvis status\` lists the backups that wait`, {path: rel})
    const files = await filesOfBackup(root, rel)
    if (files.length > 1) throw doubtful(rel, files)
    if (files.length === 0) throw new BadInputError(`${rel}: no memory file beside it has its name; name the memory file instead: jarvis resolve <file> --keep server|local`, {path: rel, files})
    return {file: files[0], backups: [rel]}
  }
  const backups = await listBackups(root, rel)
  if (backups.length > 0) return {file: rel, backups: keep === 'server' ? backups.slice(0, 1) : backups}
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
