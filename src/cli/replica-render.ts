import type {ReplicaChange, ReplicaReport} from '../replica/run.js'
import type {ReplicasResult} from '../replica/ops.js'

const VERB: Record<ReplicaChange['action'], string> = {
  'to-memory': 'copied into .memory/',
  'to-workspace': 'copied into the workspace',
  merge: 'merged',
  'delete-memory': 'deleted from .memory/',
  'delete-workspace': 'deleted from the workspace',
}

export function renderReplicaReport(report: ReplicaReport, dryRun: boolean): string[] {
  const lines = [report.kind === 'openclaw' ? `${report.kind} ${report.workspace} ↔ .memory/${report.folder}/` : `${report.kind} ${report.workspace} ← the event log`]
  if (report.skipped) return [...lines, `  skipped: ${report.skipped}`]
  if (report.error) return [...lines, `  failed: ${report.error.message}`]
  const would = dryRun ? 'would be ' : ''
  for (const c of report.changes) lines.push(`  ${would}${VERB[c.action]}: ${c.memoryPath} (${c.workspacePath} in the workspace)`)
  for (const b of report.backups) lines.push(`  conflict in ${b.path}: the .memory/ copy won, the workspace's ${dryRun ? 'would be' : 'is'} kept in .memory/${b.backup}`)
  // A backup line already tells of its conflict; the others (an edit that beat a deletion) get their own.
  for (const c of report.conflicts.filter((c) => !report.backups.some((b) => b.path === c.path))) lines.push(`  ${c.path}: ${c.reason}`)
  for (const h of report.held) lines.push(`  held back (too many deletions at once; --force lets them through): ${VERB[h.action]} ${h.memoryPath}`)
  for (const r of report.refused) lines.push(report.kind === 'openclaw' ? `  not replicated: ${r.path}: ${r.reason}` : `  left as you wrote it: ${r.path}: ${r.reason}`)
  for (const path of report.left) lines.push(`  changed during the run, left for the next one: ${path}`)
  for (const path of report.written) lines.push(`  ${dryRun ? 'would write' : 'wrote'}: ${path}`)
  for (const a of report.appended) lines.push(`  ${dryRun ? 'would become an event' : `became event ${a.event_id} (${a.status})`}: ${a.dedupe_key}, your edit in ${a.path}`)
  for (const k of report.kept) lines.push(`  kept as you left it: ${k.path}: ${k.reason}`)
  if (lines.length === 1) lines.push('  already in step')
  return lines
}

/** The human summary of `jarvis replicate`; `--json` prints the result itself. */
export function renderReplicas(result: ReplicasResult): string {
  if (result.replicas.length === 0) return 'no replicas configured (add "replicas" to .nexus/config.json; see docs/replicas.md)'
  const head = result.dryRun ? ['dry run; nothing was changed'] : []
  return [...head, ...result.replicas.flatMap((r) => renderReplicaReport(r, result.dryRun))].join('\n')
}
