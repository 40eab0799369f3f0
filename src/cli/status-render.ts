import type {ResolveResult} from '../status/resolve.js'
import type {StatusResult} from '../status/ops.js'
import {pathList} from './render.js'

/** The human `jarvis status`, most urgent first; `--json` prints the result itself. */
export function renderStatus(status: StatusResult): string {
  const lines = [`tree ${status.root}${status.project ? `, project ${status.project}` : ''}, agent ${status.agent ?? '(none: pass --agent or set it with jarvis init --agent)'}`]
  const remote = status.remote
  const server = status.server ?? '(none: jarvis init --server URL)'
  if (remote.state === 'answers') lines.push(`server ${server}: answers (${remote.files} file${remote.files === 1 ? '' : 's'}${remote.mode === 'timestamp' ? '; timestamp mode: it keeps no revisions, so syncs decide by its timestamps against the recorded base' : ''})`)
  else if (remote.state === 'unreachable') lines.push(`server ${server}: cannot be read — ${remote.detail}`)
  else if (remote.state === 'not-asked') lines.push(`server ${server}: not asked (--offline)`)
  else lines.push(`server: ${server}`)
  const last = status.lastSync
  lines.push(last ? `last sync ${last.at}: ${last.pushed} pushed, ${last.pulled} pulled, ${last.merged} merged, ${last.deleted} deleted${last.backups ? `, ${last.backups} conflict backup(s)` : ''}` : 'never synced: run jarvis sync')
  const watch = status.watch
  if (watch) {
    const declined = watch.declined === 0 ? '' : `; left ${watch.declined} to jarvis itself, the last because ${watch.lastDeclined}`
    lines.push(`watched by ${watch.process} (pid ${watch.pid}) since ${watch.since}: ran ${watch.ran} call(s)${declined}`)
  }

  if (status.backups.length > 0) {
    // Which side is where depends on what made the backup (a sync keeps the server's in the file; a replica the merge;
    // `resolve --keep local` of a backup with no record swaps them): say what holds for all, and what each choice does.
    lines.push('', `Conflicts waiting for you (${status.backups.length}): each file holds one side, its backup the other (after a sync, the server's version is in the file and yours in the backup).`)
    for (const group of status.backupsByFile) {
      for (const backup of group.backups) {
        lines.push(group.file === null ? `    .memory/${backup}   (left by an older jarvis; it may be ${group.candidates?.join(' or ')}: copy what you want by hand, then delete it)` : `    .memory/${backup}   (${group.file})`)
      }
    }
    lines.push('  decide each one: jarvis resolve <file> --keep server   (keep the file as it is, drop the backup)', "                  jarvis resolve <file> --keep local    (the backup's side back, pushed by the next sync)")
  }
  if (status.unreadable.length > 0) {
    lines.push('', `Not readable by this user (${status.unreadable.length}): not synced, nor deleted anywhere, until they can be read.`)
    for (const entry of status.unreadable) lines.push(`    .memory/${entry.path}${entry.folder ? '/' : ''}`)
    lines.push('  give them back read access (chmod u+r, a folder u+rx) or move them out of .memory/')
  }
  const {added, modified, deleted} = status.changes
  if (added.length + modified.length + deleted.length > 0) {
    lines.push('', 'Changes not synced yet (jarvis sync sends them):', ...pathList('new', added), ...pathList('modified', modified), ...pathList('deleted', deleted))
  } else lines.push('', status.backups.length > 0 ? 'No other local changes since the last sync.' : 'No local changes since the last sync.')
  if (status.outbox > 0) lines.push(`${status.outbox} write(s) made offline wait in the outbox; the next jarvis sync sends them.`)
  if (status.pendingEpisodes > 0) lines.push(`${status.pendingEpisodes} session episode(s) kept while the tree was locked wait in .nexus/pending-episodes/; the next jarvis sync writes and sends them.`)
  if (status.hookFailures.length > 0) {
    lines.push('', `Recent hook failures, agents' and git's (.nexus/hooks.log):`)
    for (const failure of status.hookFailures) lines.push(`    ${failure.at} ${failure.agent} ${failure.event}: ${failure.reason}`)
  }
  if (status.replicaFailures.length > 0) {
    lines.push('', 'Replicas that failed at their last run (jarvis replicate runs them again):')
    for (const failure of status.replicaFailures) lines.push(`    ${failure.at} ${failure.kind} ${failure.workspace}: ${failure.message}`)
  }
  const wired = status.agents.filter((a) => a.server.state !== 'not-registered')
  lines.push('', wired.length === 0 ? 'No agent is wired to this memory: jarvis agents install' : `Agents: ${status.agents.map((a) => `${a.label} ${a.server.state === 'not-registered' ? 'not wired' : a.server.state === 'not-started' ? 'registered, not started' : 'wired'}`).join('; ')}`)
  for (const agent of wired.filter((a) => a.server.state === 'not-started')) lines.push(`    ${agent.label}: ${agent.server.detail}`)
  for (const agent of status.agents.filter((a) => a.token && !a.token.own)) lines.push(`    ${agent.label}: ${agent.token?.fix}`)
  return lines.join('\n')
}

export function renderResolve(result: ResolveResult): string {
  const file = `.memory/${result.file}`
  if (result.kept === 'server') {
    const lines = [`kept ${file} as it is now; removed .memory/${result.backup}`]
    if (result.waiting.length > 0) lines.push(`older conflicts of the same file still wait: ${result.waiting.map((b) => `.memory/${b}`).join(', ')} (run jarvis resolve again)`)
    return lines.join('\n')
  }
  const lines: string[] = []
  const restored = result.decided.find((d) => d.outcome === 'restored')
  if (restored) {
    lines.push(`your version is back in ${file}, whole, from .memory/${restored.backup}: no record of its conflict is left here (an older jarvis made the backup, or the file is decided whole), so the other side's changes could not be told from yours (the next jarvis sync pushes it)`)
  } else if (result.changed) {
    lines.push(`your version is back in ${file} where the two sides disagreed; the other side's changes elsewhere stay (the next jarvis sync pushes it)`)
  } else {
    lines.push(`${file} already holds your version wherever it can: nothing changed in it`)
  }
  if (result.replaced) {
    lines.push(`  it replaced ${result.replaced.lines.length === 1 ? 'this line' : 'these lines'} of the file: ${result.replaced.lines.map((l) => `line ${l.line} "${l.text}"`).join(', ')}`)
    lines.push(`  the file as it was is now the backup, .memory/${result.replaced.backup}: jarvis resolve .memory/${result.replaced.backup} --keep server drops it, --keep local puts it back in place of yours`)
  }
  for (const decided of result.decided) {
    const backup = `.memory/${decided.backup}`
    const superseded = (decided.notPutBack ?? []).filter((part) => part.superseded)
    const changed = (decided.notPutBack ?? []).filter((part) => !part.superseded)
    if (decided.outcome === 'restored') continue
    if (decided.outcome === 'put-back') {
      lines.push(`  removed ${backup}${superseded.length > 0 ? `; where a newer version of yours replaced its lines (${superseded.map((part) => part.at).join(', ')}), that one stays` : ''}`)
    } else if (decided.outcome === 'kept') {
      lines.push(`  kept ${backup}: the file changed since that conflict where your lines were:`)
      for (const part of changed) lines.push(`    ${part.at}: the file has ${quote(part.now)}, yours was ${quote(part.yours)}`)
    } else if (decided.outcome === 'waits') {
      lines.push(`  ${backup} waits: no record of its conflict is left, and put back whole it would undo your newer version; to take it whole anyway: jarvis resolve ${backup} --keep local`)
    }
  }
  return lines.join('\n')
}

/** A line or a few, quoted on one line. */
function quote(text: string): string {
  const one = text.replace(/\r?\n$/, '').replace(/\r?\n/g, ' ⏎ ')
  return one === '' ? 'nothing' : `"${one}"`
}
