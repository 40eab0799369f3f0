/** One `jarvis sync` (not `--watch`) once its flags are parsed: run by its oclif command and by the fast door. */
import {ConflictLeftError, JarvisError, mostSevere} from '../../errors.js'
import {syncOnce, type SyncOnceResult} from '../../ops/sync.js'
import {renderSync} from '../render.js'
import {treeWatchOf} from '../warm.js'
import type {CommandOutput} from './output.js'
import {type ActionSpec, serverFlagSpecs} from './spec.js'

export interface SyncFlags {
  dir?: string
  server?: string
  agent?: string
  'dry-run'?: boolean
  quiet?: boolean
  force?: boolean
}

/** Without `--watch`, which runs until Ctrl-C: oclif's start-up is nothing beside it. */
export const spec: ActionSpec = {
  flags: {...serverFlagSpecs, 'dry-run': {type: 'boolean'}, quiet: {type: 'boolean', char: 'q'}, force: {type: 'boolean'}},
  args: [],
}

export async function run({flags}: {flags: SyncFlags}, output: CommandOutput): Promise<SyncOnceResult> {
  let result: SyncOnceResult
  try {
    result = await syncOnce({
      dir: flags.dir,
      server: flags.server,
      agent: flags.agent,
      dryRun: flags['dry-run'],
      force: flags.force,
      onProgress: !flags.quiet && !output.json ? output.progress : undefined,
      // A jarvis watching the tree says which files changed: the others are not looked at (src/warm/changes.ts).
      watch: (root) => treeWatchOf(root),
      signal: output.signal,
      beforeRound: writePendingEpisodes,
    })
  } catch (error) {
    // A sync that left files behind (refused, malformed) still did the rest: what it did is said first, conflicts
    // included, then why it stops. `--json` has it all in the error's data.
    const done = error instanceof JarvisError ? (error.data.result as SyncOnceResult | undefined) : undefined
    if (done !== undefined) report(done, flags, output)
    throw error
  }
  report(result, flags, output)
  const undone = await leftUndone(result)
  if (undone) throw undone
  return result
}

/**
 * The episodes hooks kept because the tree was locked when their sessions ended (hook/pending.ts), written first so
 * this sync sends them: a person who syncs to share what a session decided is not told all is done while it waits.
 * The hooks' code is loaded only when one waits.
 */
async function writePendingEpisodes(root: string): Promise<void> {
  const {countPendingEpisodes} = await import('../../hook/pending-names.js')
  if ((await countPendingEpisodes(root)) === 0) return
  const {writePendingEpisodes} = await import('../../hook/episode.js')
  await writePendingEpisodes(root)
}

/**
 * What the sync left for a person, as its exit: a conflict to decide (4, named; the earlier ones are remembered at
 * every sync), and what a replica left undone (failed 1, deletions held back 4, a secret refused 5). Both: one
 * message, the higher code.
 */
async function leftUndone(result: SyncOnceResult): Promise<JarvisError | undefined> {
  const found = result.backups.length > 0 ? [new ConflictLeftError(conflictsLeft(result), {result})] : []
  if (result.replicas?.length) {
    // Loaded only for a tree with replicas, like the replicas themselves (ops/sync.ts).
    const {replicaFailure} = await import('../../replica/ops.js')
    const replicas = replicaFailure({root: '', dryRun: Boolean(result.dryRun), replicas: result.replicas}, {door: 'sync', data: {result}})
    if (replicas) found.push(replicas)
  }
  return mostSevere(found)
}

/** What the sync did; and the conflicts waiting, a warning whenever they are not this sync's exit. */
function report(result: SyncOnceResult, flags: SyncFlags, output: CommandOutput): void {
  if (flags.quiet) return
  output.log(renderSync(result))
  if (result.waiting.length > 0) output.warn(`${result.waiting.length} earlier conflict(s) still wait for you: ${result.waiting.map((b) => `.memory/${b}`).join(', ')}; see jarvis status, decide with jarvis resolve <file> --keep server|local`)
}

function conflictsLeft(result: SyncOnceResult): string {
  const each = result.backups.map((b) => `  ${b.path}: the server's version is in the file, yours in .memory/${b.backup}`)
  return [`the sync finished, and ${result.backups.length} conflict(s) wait for you:`, ...each, 'decide each one: jarvis resolve <file> --keep server (drop your version) or --keep local (your version back, pushed by the next sync)'].join('\n')
}
