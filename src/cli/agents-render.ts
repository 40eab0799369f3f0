import {homedir} from 'node:os'

import type {AgentsInstallResult, AgentsStatusResult, FileReport} from '../agents/ops.js'

/** `~/…` for the user's files, the path relative to the project for the project's. */
function shown(file: string, root?: string): string {
  if (root && file.startsWith(`${root}/`)) return file.slice(root.length + 1)
  const home = process.env.HOME || homedir()
  return file.startsWith(`${home}/`) ? `~/${file.slice(home.length + 1)}` : file
}

const VERB: Record<FileReport['action'], [string, string]> = {
  create: ['created', 'would create'],
  update: ['updated', 'would update'],
  delete: ['deleted', 'would delete'],
  unchanged: ['unchanged', 'unchanged'],
}

/** The human summary of `agents install`; `--dry-run` puts the diff first. */
export function renderInstall(result: AgentsInstallResult): string {
  const root = result.scope === 'project' ? result.root : undefined
  const lines: string[] = []
  if (result.dryRun) lines.push(result.diff === '' ? 'dry run: nothing would change' : result.diff.trimEnd(), '', 'dry run; nothing was written')
  for (const agent of result.agents) {
    const changed = agent.files.filter((f) => f.action !== 'unchanged')
    const state = changed.length === 0 ? (result.uninstall ? 'nothing of jarvis to remove' : 'already wired; nothing changed') : result.uninstall ? 'unwired' : 'wired'
    lines.push(`${agent.label}: ${result.dryRun && changed.length > 0 ? `would be ${state}` : state}`)
    for (const file of agent.files) lines.push(`  ${VERB[file.action][result.dryRun ? 1 : 0].padEnd(12)} ${shown(file.file, root)}  (${file.wires.join('; ')})`)
    for (const note of agent.notes) lines.push(`  note: ${note}`)
  }
  if (!result.uninstall && !result.dryRun) lines.push('', 'Check with `jarvis agents status`; undo with `jarvis agents install --uninstall` (same --agent and --scope).')
  return lines.join('\n')
}

const STATE: Record<AgentsStatusResult['agents'][number]['server']['state'], string> = {
  connected: 'connected',
  registered: 'registered',
  'not-started': 'registered, not started',
  failed: 'registered, fails to start',
  'not-registered': 'not registered',
}

export function renderStatus(result: AgentsStatusResult): string {
  const lines: string[] = []
  for (const agent of result.agents) {
    const {server} = agent
    const tools = server.tools === undefined ? '' : ` (${server.tools} tools)`
    lines.push(`${agent.label}: ${STATE[server.state]}${server.state === 'connected' ? tools : ''}`)
    if (server.file) lines.push(`  server      ${server.scope} scope, ${shown(server.file, result.root)}: ${server.command}`)
    if (server.detail) lines.push(`  why         ${server.detail}`)
    if (agent.token) lines.push(`  token       ${agent.token.own ? agent.token.from : agent.token.fix}`)
    for (const item of agent.items) {
      lines.push(`  ${item.present ? '✓' : '✗'} ${item.what.padEnd(24)} ${item.scope.padEnd(7)} ${shown(item.file, result.root)}`)
      if (item.note) lines.push(`    note      ${item.note}`)
    }
    if (agent.items.length === 0) lines.push('  nothing wired: `jarvis agents install --agent ' + agent.agent + '`')
  }
  return lines.join('\n')
}
