/**
 * Whether an agent will start a registered server: Claude Code's approval of project servers, Gemini CLI's
 * folder trust, Codex CLI's project trust (agent-wiring research). Read only: jarvis never grants trust.
 */
import {readFile} from 'node:fs/promises'
import {dirname, join, sep} from 'node:path'

import {parse as parseToml} from 'smol-toml'

import type {HookAgent} from '../hook/events.js'
import {valueAt} from './json-edit.js'
import {SERVER_NAME, type Scope} from './wiring.js'

export interface TrustInput {
  agent: HookAgent
  scope: Scope
  root?: string
  home: string
  codexHome?: string
  gitRepo: boolean
  env: NodeJS.ProcessEnv
}

async function readJson(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown
  } catch {
    return undefined
  }
}

const within = (dir: string, parent: string): boolean => dir === parent || dir.startsWith(parent.endsWith(sep) ? parent : parent + sep)

/** Why the agent will not start the server, or undefined when nothing holds it back. */
export async function whatHoldsBack(input: TrustInput): Promise<string | undefined> {
  const {agent, root, home} = input
  switch (agent) {
    case 'claude': {
      if (input.scope !== 'project' || !root) return undefined
      const approved = (list: unknown): boolean => Array.isArray(list) && list.includes(SERVER_NAME)
      const user = (await readJson(join(home, '.claude', 'settings.json'))) as Record<string, unknown> | undefined
      if (user?.enableAllProjectMcpServers === true || approved(user?.enabledMcpjsonServers)) return undefined
      const state = await readFile(join(home, '.claude.json'), 'utf8').catch(() => '')
      if (approved(valueAt(state, ['projects', root, 'enabledMcpjsonServers']))) return undefined
      const local = (await readJson(join(root, '.claude', 'settings.local.json'))) as Record<string, unknown> | undefined
      const localApproval = local?.enableAllProjectMcpServers === true || approved(local?.enabledMcpjsonServers)
      // Outside a git repository Claude Code reads settings.local.json only in a folder whose trust dialog was accepted.
      if (localApproval && (input.gitRepo || valueAt(state, ['projects', root, 'hasTrustDialogAccepted']) === true)) return undefined
      if (localApproval) return 'Claude Code has not been trusted in this folder yet, so it does not read the approval in .claude/settings.local.json (accept its trust dialog when you start it here)'
      return 'Claude Code waits for your approval of this project server (it asks when it starts here)'
    }
    case 'gemini': {
      if (input.env.GEMINI_CLI_TRUST_WORKSPACE === 'true') return undefined
      const settings = (await readJson(join(home, '.gemini', 'settings.json'))) as {security?: {folderTrust?: {enabled?: boolean}}} | undefined
      if (settings?.security?.folderTrust?.enabled === false) return undefined
      const folder = root ?? process.cwd()
      const trusted = ((await readJson(join(home, '.gemini', 'trustedFolders.json'))) ?? {}) as Record<string, string>
      const ok = Object.entries(trusted).some(([path, level]) => (level === 'TRUST_FOLDER' && within(folder, path)) || (level === 'TRUST_PARENT' && within(folder, dirname(path))))
      return ok ? undefined : `Gemini CLI does not trust ${folder}, so it starts no MCP server there (trust the folder when Gemini asks, or with /permissions)`
    }
    case 'codex': {
      if (input.scope !== 'project' || !root) return undefined
      const text = await readFile(join(input.codexHome ?? join(home, '.codex'), 'config.toml'), 'utf8').catch(() => '')
      let projects: Record<string, {trust_level?: string}> = {}
      try {
        projects = ((parseToml(text) as {projects?: typeof projects}).projects ?? {})
      } catch {
        return 'Codex CLI’s config.toml does not parse'
      }
      return projects[root]?.trust_level === 'trusted' ? undefined : `Codex CLI reads .codex/ only in a project you trust, and ${root} is not trusted (Codex asks when it starts here)`
    }
    case 'openclaw':
      return undefined
  }
}
