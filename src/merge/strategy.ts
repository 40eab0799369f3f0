/**
 * Per-path conflict strategies (`sync.strategies` in `.nexus/config.json`: glob → strategy, the first glob that
 * matches wins). They apply only when both sides changed a file since the base:
 * - `merge` (the default): the file's own rule (line merge, key merge, newest stamp…);
 * - `lww`: the newer side wins whole, by the local file's modification time against the server's `updatedAt`
 *   (a tie goes to the server). A losing local side is the backup; a losing server side is handed back as `lost`,
 *   for the audit log;
 * - `manual`: nothing is merged: the server's version in the file, the local one as the backup, for
 *   `jarvis resolve`.
 * Either way no side is lost. PURE.
 */
import picomatch from 'picomatch'

import type {SyncStrategy as Strategy} from '../schemas/index.js'
import {mergeFileText, ruleForPath} from './dispatch.js'
import {compareStamps} from './lww.js'
import type {FileMerge} from './types.js'

export type {Strategy}

export interface StrategyMerge extends FileMerge {
  strategy: Strategy
  /** `lww` only: the server's text, which lost to a newer local one. */
  lost?: string
}

/** The strategy of a path relative to `.memory/`: the first glob of `strategies` it matches, else `merge`. */
export function strategyFor(path: string, strategies: Readonly<Record<string, Strategy>> | undefined): Strategy {
  for (const [glob, strategy] of Object.entries(strategies ?? {})) if (picomatch.isMatch(path, glob, {dot: true})) return strategy
  return 'merge'
}

export function mergeByStrategy(path: string, base: string | null, local: string, remote: string, strategy: Strategy, stamps: {local?: string; remote?: string}): StrategyMerge {
  // One side unchanged, or both the same: there is nothing to decide, whatever the strategy.
  if (strategy === 'merge' || local === remote || base === local || base === remote) return {...mergeFileText(path, base, local, remote), strategy}
  const rule = ruleForPath(path)
  if (strategy === 'manual') return {merged: remote, conflicts: [{kind: 'manual', at: '(document)', winner: 'remote'}], backup: local, rule, strategy}
  if (compareStamps(stamps.local, stamps.remote) > 0) {
    return {merged: local, conflicts: [{kind: 'lww', at: '(document)', winner: 'local', local: stamps.local, remote: stamps.remote}], backup: null, lost: remote, rule, strategy}
  }
  return {merged: remote, conflicts: [{kind: 'lww', at: '(document)', winner: 'remote', local: stamps.local, remote: stamps.remote}], backup: local, rule, strategy}
}
