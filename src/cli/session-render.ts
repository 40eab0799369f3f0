/** Human output of `jarvis session`; `--json` prints the results instead. */
import {basename} from 'node:path'

import {PROVIDER_LABEL} from '../session/sync.js'
import type {SessionListResult, SessionSyncResult} from '../ops/session.js'

/** The reader's warnings worth showing: the first ten, then how many more (all of them are in the result). */
export function sessionWarnings(result: SessionSyncResult): string[] {
  const shown = result.warnings.slice(0, 10)
  if (result.warnings.length > 10) shown.push(`… and ${result.warnings.length - 10} more skipped lines (see --json)`)
  return shown
}

function ago(iso: string | undefined, now: number): string {
  if (!iso) return '—'
  const seconds = Math.round((now - Date.parse(iso)) / 1000)
  if (!Number.isFinite(seconds)) return iso
  if (seconds < 60) return `${Math.max(0, seconds)} s ago`
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`
  return `${Math.round(seconds / 86_400)} d ago`
}

function pad(cells: string[][]): string[] {
  const widths = cells[0].map((_, column) => Math.max(...cells.map((row) => row[column].length)))
  return cells.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]))).join('  ').trimEnd())
}

export function renderSessionList(result: SessionListResult, now = Date.now()): string {
  if (result.sessions.length === 0) {
    return `no Claude Code, Gemini CLI or Codex CLI session for ${result.projectRoot}\n  (looked in ${result.claudeHome}, ${result.geminiHome} and ${result.codexHome})`
  }
  const rows = result.sessions.map((s) => [
    s.provider,
    // A Gemini CLI checkpoint (`/chat save <tag>`) is known by its tag; its chat session, tagged too, by its id.
    s.provider === 'gemini' && s.tag && basename(s.path).startsWith('checkpoint-') ? `${s.tag} (checkpoint)` : s.sessionId,
    String(s.messageCount),
    ago(s.lastActivity, now),
    s.tag ?? '',
    s.sync.status === 'not-synced' ? 'not synced' : s.sync.status === 'in-sync' ? `in sync (${ago(s.sync.lastSync, now)})` : `${s.sync.newMessages} new since last sync`,
  ])
  return pad([['TOOL', 'SESSION', 'MESSAGES', 'LAST ACTIVITY', 'TAG', 'SYNC'], ...rows]).join('\n')
}

export function renderSessionSync(result: SessionSyncResult): string {
  const from = result.from.tag ? `${PROVIDER_LABEL[result.from.provider]} checkpoint ${result.from.tag}` : `${PROVIDER_LABEL[result.from.provider]} session ${result.from.sessionId}`
  const to = `${PROVIDER_LABEL[result.to.provider]} session ${result.to.sessionId}`
  const lines: string[] = []
  if (result.added === 0 && !result.to.created) lines.push(`${to} already holds every message of ${from}; nothing added`)
  else {
    const verb = result.to.created ? 'created' : 'updated'
    lines.push(`${verb} ${to}: ${result.added} message${result.added === 1 ? '' : 's'} carried from ${from} (${result.to.messageCount} in total)`)
  }
  if (result.duplicates > 0) lines.push(`  ${result.duplicates} already there, not added again`)
  if (result.mode === 'full' && result.reason) lines.push(`  full merge: ${result.reason}`)
  lines.push(`  file: ${result.to.path}`)
  if (result.checkpoint) {
    const {checkpoint} = result
    lines.push(`  checkpoint ${checkpoint.tag}: ${checkpoint.created ? 'created' : checkpoint.added > 0 ? `${checkpoint.added} added` : 'unchanged'} (${checkpoint.path})`)
  }
  if (result.backup) lines.push(`  backup: ${result.backup}`)
  if (result.notCarried.length > 0) {
    lines.push(`  not carried as is (${PROVIDER_LABEL[result.to.provider]} cannot hold it):`)
    for (const note of result.notCarried.slice(0, 20)) lines.push(`    ${note}`)
    if (result.notCarried.length > 20) lines.push(`    … and ${result.notCarried.length - 20} more`)
  }
  lines.push(`  resume: ${result.resume[0]}`)
  if (result.resume[1]) lines.push(`    or, inside Gemini CLI: ${result.resume[1]}`)
  return lines.join('\n')
}
