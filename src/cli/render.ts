import type {SyncOnceResult} from '../ops/sync.js'
import {renderReplicaReport} from './replica-render.js'

/** `  <label> <n>:` and the first ten paths, one per line. */
export function pathList(label: string, paths: string[]): string[] {
  if (paths.length === 0) return []
  const shown = paths.slice(0, 10).map((p) => `    ${p}`)
  if (paths.length > 10) shown.push(`    … and ${paths.length - 10} more`)
  return [`  ${label} ${paths.length}:`, ...shown]
}

/** The human summary of a sync; `--json` prints the result itself instead. */
export function renderSync(result: SyncOnceResult): string {
  if (result.dryRun && result.plan) {
    const plan = result.plan
    const lines = [`dry run against ${result.server} (${result.mode} mode); nothing was changed`]
    lines.push(...pathList('would push', plan.push), ...pathList('would pull', plan.pull), ...pathList('would merge', plan.merge))
    lines.push(...pathList('would delete on the server', plan['delete-remote']), ...pathList('would delete here', plan['delete-local']))
    if (result.outbox.left > 0) lines.push(`  would send ${result.outbox.left} queued write(s) made while the server was away`)
    if (lines.length === 1) lines.push('  already in sync')
    return lines.join('\n')
  }
  const lines = [`synced with ${result.server}${result.mode === 'timestamp' ? ' (timestamp mode: the server has no revisions, decided against the recorded base)' : ''}`]
  lines.push(...pathList('pushed', result.pushed), ...pathList('pulled', result.pulled), ...pathList('merged', result.merged), ...pathList('deleted', result.deleted))
  for (const backup of result.backups) lines.push(`  conflict in ${backup.path}: the server's version won, yours is kept in .memory/${backup.backup}`)
  if (result.outbox.sent > 0) lines.push(`  sent ${result.outbox.sent} queued write(s)`)
  if (result.outbox.left > 0) lines.push(`  ${result.outbox.left} queued write(s) still waiting${outboxWhy(result.outbox)}`)
  if (result.outbox.dropped) {
    lines.push(`  ${result.outbox.dropped} queued write(s) not sent and taken out of the outbox: the server ${(result.outbox.missing ?? []).join(' and ')}, so it would never take them; each is kept whole in .nexus/audit.jsonl`)
  }
  if (lines.length === 1) lines.push('  already in sync')
  // A replica in step says nothing here; `jarvis replicate` shows every replica.
  for (const report of result.replicas ?? []) {
    const shown = renderReplicaReport(report, result.dryRun)
    if (!shown.at(-1)!.endsWith('already in step')) lines.push(...shown.map((line) => `  ${line}`))
  }
  return lines.join('\n')
}

/** Why queued writes are still waiting, when the sync knows: the server refused them. */
function outboxWhy(outbox: SyncOnceResult['outbox']): string {
  return outbox.refused ? `: ${outbox.refused} refused by the server, kept for you (why: .nexus/audit.jsonl)` : ''
}
