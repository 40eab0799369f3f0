/**
 * `jarvis agents install|status`: wire Claude Code, Gemini CLI, Codex CLI and OpenClaw to the shared memory, and
 * say what is wired and whether it starts. Every file is planned and checked before any is written, so a malformed
 * one, or one that cannot be written, stops the whole install with nothing changed; the writes are all or nothing
 * (write.ts); an undo record per file lets uninstall give the file back byte for byte (docs/agents.md).
 */
import {existsSync} from 'node:fs'
import {realpath, rmdir} from 'node:fs/promises'
import {homedir} from 'node:os'
import {dirname, join} from 'node:path'

import JSON5 from 'json5'
import {parse as parseToml} from 'smol-toml'

import {unifiedDiff} from './diff.js'
import {hasBlock} from '../merge/marked-block.js'
import {valueAt} from './json-edit.js'
import {formatOf, installInto, isEmptyFile, removeFrom} from './plan.js'
import {probeServer} from './probe.js'
import {whatHoldsBack} from './trust.js'
import {type AgentTokenState, tokenStates} from './tokens.js'
import {EMPTY_MANIFEST, undo, undoManifestSchema, type UndoManifest, undoRecord} from './undo.js'
import {checkWritable, type FileEdit, foldersLeftEmpty, missingDirs, writeFiles} from './write.js'
import {AGENT_LABELS, type Change, CODEX_HOOK_TRUST, hooksOfGroup, isJarvisHook, type Scope, SERVER_NAME, wiringFor, type WiringInput} from './wiring.js'
import {BadInputError, isJarvisError, NotATreeError} from '../errors.js'
import {agentIdOf, HOOK_AGENTS, type HookAgent} from '../hook/events.js'
import {type Invocation, jarvisInvocation, shellClientOf, shellLine} from '../invocation.js'
import {readTextIfExists} from '../store/index.js'
import {agentPrompt} from '../ops/prompt.js'
import {openTreeIfAny, type TreeContext} from '../ops/context.js'
import {userConfigDir} from '../ops/identity.js'

export const AGENTS_MANIFEST = 'agents.json'

export interface AgentsContextOptions {
  dir?: string
  env?: NodeJS.ProcessEnv
  /** How the agents start jarvis; default this very binary (`node <abs>/bin/run.js`), else `jarvis` on PATH. */
  jarvis?: Invocation
}

export interface AgentsInstallOptions extends AgentsContextOptions {
  agents: HookAgent[]
  scope: Scope
  dryRun?: boolean
  uninstall?: boolean
}

export interface FileReport {
  file: string
  action: 'create' | 'update' | 'delete' | 'unchanged'
  /** What jarvis wires in this file: `MCP server "jarvis"`, `hooks: session-start, …`, `instructions`, `approval of "jarvis"`. */
  wires: string[]
}

export interface AgentReport {
  agent: HookAgent
  label: string
  files: FileReport[]
  notes: string[]
  /** Whether the agent has a token of its own (not after --uninstall); when not, `notes` says what to set. */
  token?: AgentTokenState
}

export interface AgentsInstallResult {
  scope: Scope
  dryRun: boolean
  uninstall: boolean
  agents: AgentReport[]
  /** `--dry-run`: the unified diff of every file that would change. */
  diff: string
  /** The undo records' file (jarvis's own). */
  manifest: string
  /** The project's root, when there is one. */
  root?: string
}

interface Context {
  root?: string
  tree?: TreeContext
  home: string
  codexHome?: string
  gitRepo: boolean
  jarvis: Invocation
  shellClient?: string
  env: NodeJS.ProcessEnv
}

async function agentsContext(options: AgentsContextOptions): Promise<Context> {
  const env = options.env ?? process.env
  const tree = await openTreeIfAny(options.dir)
  const root = tree ? await realpath(tree.root) : undefined
  const jarvis = options.jarvis ?? (await jarvisInvocation()) ?? {command: 'jarvis', args: []}
  return {
    root,
    tree,
    home: env.HOME || homedir(),
    codexHome: env.CODEX_HOME || undefined,
    gitRepo: root ? insideGitRepo(root) : false,
    jarvis,
    shellClient: shellClientOf(jarvis, env),
    env,
  }
}

function insideGitRepo(dir: string): boolean {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, '.git'))) return true
    if (dirname(at) === at) return false
  }
}

/** `withText: false` (status, which only looks for the block): the instruction text is not built. */
async function wiringInput(context: Context, agent: HookAgent, scope: Scope, withText = true): Promise<WiringInput> {
  const instructions = withText ? (await agentPrompt({dir: context.root, agent: agentIdOf(agent), bin: 'jarvis'})).text : ''
  return {agent, scope, root: context.root, home: context.home, codexHome: context.codexHome, jarvis: context.jarvis, shellClient: context.shellClient, gitRepo: context.gitRepo, instructions, openclawWorkspace: existsSync(join(context.home, '.openclaw', 'workspace', 'AGENTS.md'))}
}

function describe(change: Change): string {
  switch (change.kind) {
    case 'mcp':
      return `MCP server "${SERVER_NAME}"`
    case 'hook':
      return `hook ${change.event}`
    case 'approval':
      return `approval of "${SERVER_NAME}"`
    case 'instructions':
      return 'instructions'
  }
}

/** `hook a`, `hook b` … → `hooks: a, b`. */
function summarise(changes: Change[]): string[] {
  const hooks = changes.filter((c) => c.kind === 'hook').map((c) => (c.kind === 'hook' ? c.event : ''))
  return [...new Set(changes.filter((c) => c.kind !== 'hook').map(describe)), ...(hooks.length > 0 ? [`hooks: ${hooks.join(', ')}`] : [])]
}

function manifestPath(context: Context, scope: Scope): string {
  return scope === 'project' && context.root ? join(context.root, '.nexus', AGENTS_MANIFEST) : join(userConfigDir(context.env), AGENTS_MANIFEST)
}

async function readManifest(file: string): Promise<UndoManifest> {
  const text = await readTextIfExists(file)
  if (text === null) return structuredClone(EMPTY_MANIFEST)
  try {
    return undoManifestSchema.parse(JSON.parse(text))
  } catch {
    throw new BadInputError(`${file} is not jarvis's record of what it installed; move it away and run again (uninstall then removes what jarvis wrote by its shape), nothing was changed`, {file})
  }
}

/** A file that parses as JSON5 but not as JSON with comments (OpenClaw's config may): refuse rather than reformat it. */
function explainJson5(file: string, text: string | null, error: unknown): never {
  if (text !== null && formatOf(file) === 'json' && isJarvisError(error)) {
    try {
      JSON5.parse(text)
    } catch {
      throw error
    }
    throw new BadInputError(`${file} uses JSON5 syntax (unquoted keys, single quotes…) that jarvis cannot edit without rewriting your formatting; add the "${SERVER_NAME}" server by hand (see \`jarvis agents install --dry-run\` on a copy) or write the file as JSON, nothing was changed`, {file})
  }
  throw error
}

export async function installAgents(options: AgentsInstallOptions): Promise<AgentsInstallResult> {
  const context = await agentsContext(options)
  if (options.scope === 'project' && !context.root) throw new NotATreeError(options.dir ?? process.cwd())
  const uninstall = options.uninstall ?? false
  const dryRun = options.dryRun ?? false

  // Plan every file before writing any: the changes of every agent, file by file, in order.
  const perAgent = await Promise.all(options.agents.map(async (agent) => ({agent, wiring: wiringFor(await wiringInput(context, agent, options.scope))})))
  const byFile = new Map<string, Change[]>()
  for (const {wiring} of perAgent) for (const change of wiring.changes) byFile.set(change.file, [...(byFile.get(change.file) ?? []), change])

  const manifestFile = manifestPath(context, options.scope)
  const manifest = await readManifest(manifestFile)
  const planned = new Map<string, {before: string | null; after: string | null}>()
  for (const [file, changes] of byFile) {
    const before = await readTextIfExists(file)
    let after: string | null
    try {
      after = uninstall ? uninstalled(file, before, changes, manifest) : installInto(file, before, changes)
    } catch (error) {
      explainJson5(file, before, error)
    }
    planned.set(file, {before, after})
  }

  const action = (file: string): FileReport['action'] => {
    const {before, after} = planned.get(file)!
    if (before === after) return 'unchanged'
    return before === null ? 'create' : after === null ? 'delete' : 'update'
  }
  const agents = perAgent.map(({agent, wiring}) => {
    const files = [...new Set(wiring.changes.map((c) => c.file))]
    return {
      agent,
      label: AGENT_LABELS[agent],
      files: files.map((file) => ({file, action: action(file), wires: summarise(wiring.changes.filter((c) => c.file === file))})),
      notes: uninstall ? [] : wiring.notes,
    }
  })
  const diff = dryRun ? [...planned].map(([file, {before, after}]) => unifiedDiff(file, before, after)).join('') : ''
  if (!dryRun) await apply(planned, manifest, manifestFile, uninstall)
  if (!uninstall) await withTokens(context, agents)
  return {scope: options.scope, dryRun, uninstall, agents, diff, manifest: manifestFile, root: context.root}
}

/** Each agent just wired gets its token state; one without a token of its own gets a note saying what to set. */
async function withTokens(context: Context, agents: AgentReport[]): Promise<void> {
  const wired = new Set([...(await wiredAgents(context)), ...agents.map((a) => a.agent)])
  const tokens = await tokenStates([...wired], {env: context.env, tree: context.tree?.config})
  for (const report of agents) {
    report.token = tokens.get(report.agent)
    if (report.token?.fix) report.notes.push(report.token.fix)
  }
}

/** The agents whose MCP server or hooks are in place, in the project's files or the user's. */
async function wiredAgents(context: Context): Promise<HookAgent[]> {
  const scopes: Scope[] = context.root ? ['project', 'user'] : ['user']
  const wired = await Promise.all(
    HOOK_AGENTS.map(async (agent) => {
      for (const scope of scopes) {
        const {changes} = wiringFor(await wiringInput(context, agent, scope, false))
        for (const change of changes) if ((change.kind === 'mcp' || change.kind === 'hook') && (await present(change))) return agent
      }
      return undefined
    }),
  )
  return wired.filter((agent): agent is HookAgent => agent !== undefined)
}

/** The file as it was before install when it is still as install left it; else what jarvis wrote taken out by its shape. */
function uninstalled(file: string, text: string | null, changes: Change[], manifest: UndoManifest): string | null {
  const record = manifest.files[file]
  if (text === null) return null
  if (record) {
    const restored = undo(record, text)
    if (restored !== undefined) return restored
  }
  const after = removeFrom(file, text, changes)
  return after !== null && record?.created && isEmptyFile(file, after) ? null : after
}

/** Writes every planned file and jarvis's record of them, all or nothing; a file that cannot be written stops it first. */
async function apply(planned: Map<string, {before: string | null; after: string | null}>, manifest: UndoManifest, manifestFile: string, uninstall: boolean): Promise<void> {
  const next: UndoManifest = structuredClone(manifest)
  const edits: FileEdit[] = []
  for (const [file, {before, after}] of planned) {
    if (before === after) continue
    if (uninstall) {
      delete next.files[file]
      edits.push({file, before, after})
      continue
    }
    if (after === null) continue
    const earlier = next.files[file]
    // An upgrade of jarvis's own lines keeps the way back to the user's original file.
    const original = earlier ? undo(earlier, before ?? '') : before
    if (original === undefined) delete next.files[file]
    else next.files[file] = undoRecord(original, after)
    for (const dir of missingDirs(file)) if (!next.dirs.includes(dir)) next.dirs.push(dir)
    edits.push({file, before, after})
  }
  // Directories install created go when nothing is left in them.
  const emptied = uninstall ? await foldersLeftEmpty(next.dirs, new Set(edits.filter((edit) => edit.after === null).map((edit) => edit.file))) : new Set<string>()
  next.dirs = next.dirs.filter((dir) => !emptied.has(dir))
  if (JSON.stringify(next) !== JSON.stringify(manifest)) {
    const nothingLeft = Object.keys(next.files).length === 0 && next.dirs.length === 0
    edits.push({file: manifestFile, before: await readTextIfExists(manifestFile), after: nothingLeft ? null : JSON.stringify(next, null, 2) + '\n'})
  }
  await checkWritable(edits)
  await writeFiles(edits)
  for (const dir of [...emptied].sort((a, b) => b.length - a.length)) await rmdir(dir).catch(() => {})
}

export interface AgentsStatusOptions extends AgentsContextOptions {
  agents: HookAgent[]
  /** Start each registered server to see that it answers (default true). */
  probe?: boolean
}

export interface WiredItem {
  scope: Scope
  what: string
  file: string
  present: boolean
  /** What the agent still needs before it runs what is in place (Codex CLI's review of hooks). */
  note?: string
}

export interface AgentStatus {
  agent: HookAgent
  label: string
  /** For a wired agent: whether it has a token of its own, and what to set when not. */
  token?: AgentTokenState
  /** What is in place, in each scope that has any of it; every item of the scope, present or not. */
  items: WiredItem[]
  server: {
    /**
     * connected: it starts and answers; registered: nothing holds the agent back, but it was not started to check
     * (--no-probe); not-started: registered, but the agent will not start it (approval, trust); failed: it does not
     * answer; not-registered.
     */
    state: 'connected' | 'registered' | 'not-started' | 'failed' | 'not-registered'
    scope?: Scope
    file?: string
    command?: string
    tools?: number
    detail?: string
  }
}

export interface AgentsStatusResult {
  root?: string
  agents: AgentStatus[]
}

interface Registered {
  command: string
  args: string[]
  env?: Record<string, string>
}

async function registeredServer(change: Extract<Change, {kind: 'mcp'}>): Promise<Registered | undefined> {
  const text = await readTextIfExists(change.file)
  if (text === null) return undefined
  let entry: unknown
  if (formatOf(change.file) === 'toml') {
    try {
      entry = ((parseToml(text) as {mcp_servers?: Record<string, unknown>}).mcp_servers ?? {})[change.path[0]]
    } catch {
      return undefined
    }
  } else entry = change.file.endsWith('openclaw.json') ? json5At(text, change.path) : valueAt(text, change.path)
  const server = entry as Partial<Registered> | undefined
  if (!server || typeof server.command !== 'string') return undefined
  return {command: server.command, args: Array.isArray(server.args) ? server.args.map(String) : [], env: server.env}
}

function json5At(text: string, path: string[]): unknown {
  try {
    return path.reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], JSON5.parse(text))
  } catch {
    return undefined
  }
}

async function present(change: Change): Promise<boolean> {
  const text = await readTextIfExists(change.file)
  if (text === null) return false
  switch (change.kind) {
    case 'mcp':
      return (await registeredServer(change)) !== undefined
    case 'hook': {
      const list = valueAt(text, change.path)
      return Array.isArray(list) && list.some((group) => hooksOfGroup(group).some(isJarvisHook))
    }
    case 'approval': {
      const list = valueAt(text, change.path)
      return Array.isArray(list) && list.includes(SERVER_NAME)
    }
    case 'instructions':
      return hasBlock(text)
  }
}

/** The hook entries of one scope as one line: how many are in place, and for Codex CLI that it runs them only once trusted. */
function hooksItem(agent: HookAgent, scope: Scope, hooks: WiredItem[]): WiredItem {
  const present = hooks.some((h) => h.present)
  const item = {scope, what: `hooks (${hooks.filter((h) => h.present).length}/${hooks.length})`, file: hooks[0].file, present}
  return agent === 'codex' && present ? {...item, note: CODEX_HOOK_TRUST} : item
}

export async function agentsStatus(options: AgentsStatusOptions): Promise<AgentsStatusResult> {
  const context = await agentsContext(options)
  const scopes: Scope[] = context.root ? ['project', 'user'] : ['user']
  const agents = await Promise.all(
    options.agents.map(async (agent): Promise<AgentStatus> => {
      const items: WiredItem[] = []
      let server: AgentStatus['server'] = {state: 'not-registered'}
      for (const scope of scopes) {
        // OpenClaw has one configuration: its project scope is the user's file.
        if (agent === 'openclaw' && scope === 'project') continue
        const {changes} = wiringFor(await wiringInput(context, agent, scope, false))
        const scoped = await Promise.all(changes.map(async (change) => ({scope, what: describe(change), file: change.file, present: await present(change)})))
        const hooks = scoped.filter((item) => item.what.startsWith('hook '))
        const merged = [...scoped.filter((item) => !item.what.startsWith('hook ')), ...(hooks.length > 0 ? [hooksItem(agent, scope, hooks)] : [])]
        if (merged.some((item) => item.present)) items.push(...merged)
        const mcp = changes.find((c): c is Extract<Change, {kind: 'mcp'}> => c.kind === 'mcp')
        const registered = mcp && (await registeredServer(mcp))
        if (!registered || server.state !== 'not-registered') continue
        const found = {scope, file: mcp.file, command: shellLine(registered)}
        const held = await whatHoldsBack({agent, scope, root: context.root, home: context.home, codexHome: context.codexHome, gitRepo: context.gitRepo, env: context.env})
        // Unstarted, a command is only registered: connected is for one seen to start and answer.
        if (options.probe === false) {
          server = {...found, state: held ? 'not-started' : 'registered', detail: held ?? 'not started to check (--no-probe)'}
          continue
        }
        const probe = await probeServer(registered, context.root ?? process.cwd())
        if (!probe.ok) server = {...found, state: 'failed', detail: `the registered command does not answer: ${probe.error}`}
        else if (held) server = {...found, state: 'not-started', tools: probe.tools, detail: `${held}; the command itself starts and answers`}
        else server = {...found, state: 'connected', tools: probe.tools}
      }
      return {agent, label: AGENT_LABELS[agent], items, server}
    }),
  )
  const wired = await wiredAgents(context)
  const tokens = await tokenStates(wired, {env: context.env, tree: context.tree?.config})
  for (const status of agents) if (tokens.has(status.agent)) status.token = tokens.get(status.agent)
  return {root: context.root, agents}
}
