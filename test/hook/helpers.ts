/** Shared by the hook tests: the built `jarvis hook` spawned as an agent runs it, projects, transcripts. */
import {spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {EventsClient} from '../../src/protocol/events.js'
import type {EventKind} from '../../src/schemas/index.js'
import {initTree, readConfig, writeConfig} from '../../src/store/index.js'
import {cleanEnv} from '../cli/memory-helpers.js'
import {tempDir, TOKENS} from '../helpers/world.js'

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
/** The built binary, as the installed hooks run it: `"<node>" "<abs>/bin/run.js" hook <event> --agent <agent>`. */
export const runJs = join(repoRoot, 'bin', 'run.js')
/** `jarvis` as npm installs it (package.json's bin): a shell script that runs bin/run.js, or hands the call to a watch. */
export const installedJarvis = join(repoRoot, 'bin', 'jarvis')

export function assertBuilt(): void {
  if (!existsSync(join(repoRoot, 'dist', 'commands', 'hook.js')) || !existsSync(join(repoRoot, 'dist', 'hook', 'background-sync.js'))) {
    throw new Error('dist/ has no hook command: run `npm run build` before these tests (they run the built bin/run.js as an agent does)')
  }
}

export interface HookRun {
  code: number | null
  stdout: string
  stderr: string
  ms: number
}

/** Spawns `node bin/run.js hook <event> --agent <agent> [...extra]` with `input` on stdin, as an agent does. */
export function runHook(event: string, agent: string, input: unknown, options: {cwd: string; env: NodeJS.ProcessEnv; extra?: string[]; uid?: number; gid?: number}): Promise<HookRun> {
  return runCollected(process.execPath, [runJs, 'hook', event, '--agent', agent, ...(options.extra ?? [])], {...options, input: typeof input === 'string' ? input : JSON.stringify(input)})
}

/** `file args…` to its end, `input` written to its stdin, its output and exit code collected. */
export function runCollected(file: string, args: string[], options: {cwd: string; env: NodeJS.ProcessEnv; input?: string; uid?: number; gid?: number}): Promise<HookRun> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {cwd: options.cwd, env: options.env, uid: options.uid, gid: options.gid, stdio: ['pipe', 'pipe', 'pipe']})
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({code, stdout, stderr, ms: Date.now() - started}))
    child.stdin.on('error', () => {})
    child.stdin.end(options.input ?? '')
  })
}

/** Runs any jarvis command with the built binary; `input` is written to its stdin. */
export function runJarvisBuilt(args: string[], options: {cwd: string; env: NodeJS.ProcessEnv; input?: string; bin?: string; installed?: boolean}): Promise<HookRun> {
  // `installed`: bin/jarvis run as a shell runs a command, which then finds `node` on the PATH.
  const [file, argv] = options.installed ? [installedJarvis, args] : [process.execPath, [options.bin ?? runJs, ...args]]
  return runCollected(file, argv, options)
}

/** The environment of an agent's hook: the agent's token, no user config, no JARVIS_* of the developer's shell. */
export function hookEnv(home: string, agentId: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {...cleanEnv(home, {JARVIS_TOKEN: TOKENS[agentId], ...extra}), NO_COLOR: '1', DEBUG: ''}
}

export interface Project {
  root: string
  memory: string
}

/** A jarvis tree that syncs with `server`, with project `demo`, and the sync settings given. */
export async function makeProject(server: string, settings: {autoSync?: boolean; lockTimeout?: number; project?: string; agent?: string} = {}): Promise<Project> {
  const dir = await tempDir('jarvis-hook-')
  const {root} = await initTree(dir, {server, agent: settings.agent ?? 'claude', project: settings.project ?? 'demo'})
  const config = await readConfig(root)
  await writeConfig(root, {...config, sync: {...config.sync, autoSync: settings.autoSync ?? false, lockTimeout: settings.lockTimeout ?? 5000, retryDelay: 10}})
  return {root, memory: join(root, '.memory')}
}

export async function writeMemory(project: Project, path: string, text: string): Promise<void> {
  await mkdir(dirname(join(project.memory, path)), {recursive: true})
  await writeFile(join(project.memory, path), text)
}

/** Appends an event on the server as `agent` (kind decision/config events are what pinned memory shows first). */
export async function appendEvent(server: string, agent: string, fields: {kind: EventKind; key: string; content: string; scope?: string}): Promise<string> {
  const client = new EventsClient({server, token: TOKENS[agent]})
  const answer = await client.append({
    agent_id: agent as 'claude',
    run_id: `hook-test-${Math.random().toString(36).slice(2)}`,
    scope: fields.scope ?? 'global',
    kind: fields.kind,
    dedupe_key: fields.key,
    confidence: 'high',
    content_md: fields.content,
    source: {system: 'cli'},
    ttl_days: 0,
  })
  return answer.event_id
}

export async function hooksLog(root: string): Promise<string> {
  return readFile(join(root, '.nexus', 'hooks.log'), 'utf8').catch(() => '')
}

/** Waits until every background sync a hook started has ended (their markers are gone). */
export async function waitForBackgroundSyncs(root: string, timeoutMs = 30_000): Promise<void> {
  const dir = join(root, '.nexus', 'hook-syncs')
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const pending = await readdir(dir).catch(() => [] as string[])
    if (pending.filter((n) => n.endsWith('.json')).length === 0) return
    if (Date.now() > deadline) throw new Error(`background syncs still running after ${timeoutMs} ms: ${pending.join(', ')}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Polls `check` until it returns a value (not undefined), or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 15_000, what = 'the condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

// ---- transcripts in each agent's real on-disk format (research: transcript-formats.md) -------------------------

export interface Turn {
  prompt: string
  /** Tool calls of the answer: [Claude tool name, input]. */
  tools?: Array<[string, Record<string, unknown>]>
  answer: string
}

/** A Claude Code 2.1.x transcript (`<sessionId>.jsonl`): a linear uuid/parentUuid chain, one entry per content block, a last-prompt line. */
export function claudeTranscript(sessionId: string, cwd: string, turns: Turn[], start = Date.parse('2026-09-01T09:00:00.000Z')): string {
  const lines: unknown[] = [{type: 'permission-mode', permissionMode: 'default', sessionId}]
  let parent: string | null = null
  let n = 0
  let t = start
  const envelope = () => {
    const uuid = `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`
    const entry = {parentUuid: parent, isSidechain: false, uuid, timestamp: new Date((t += 1000)).toISOString(), userType: 'external', entrypoint: 'cli', cwd, sessionId, version: '2.1.197', gitBranch: 'main'}
    parent = uuid
    return entry
  }
  turns.forEach((turn, i) => {
    lines.push({...envelope(), type: 'user', message: {role: 'user', content: turn.prompt}, promptId: `p-${i}`, permissionMode: 'default', promptSource: 'typed'})
    const messageId = `msg_${i}`
    for (const [j, [name, input]] of (turn.tools ?? []).entries()) {
      const id = `toolu_${i}_${j}`
      lines.push({...envelope(), type: 'assistant', requestId: `req_${i}`, message: {id: messageId, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{type: 'tool_use', id, name, input}], stop_reason: null, usage: {input_tokens: 10, output_tokens: 5}}})
      lines.push({...envelope(), type: 'user', message: {role: 'user', content: [{type: 'tool_result', tool_use_id: id, content: 'ok'}]}})
    }
    lines.push({...envelope(), type: 'assistant', requestId: `req_${i}b`, message: {id: `${messageId}b`, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{type: 'text', text: turn.answer}], stop_reason: 'end_turn', usage: {input_tokens: 10, output_tokens: 5}}})
  })
  lines.push({type: 'last-prompt', lastPrompt: turns.at(-1)?.prompt.slice(0, 200) ?? '', leafUuid: parent, sessionId})
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
}

const GEMINI_TOOLS: Record<string, string> = {Write: 'write_file', Edit: 'replace', Read: 'read_file', Bash: 'run_shell_command'}

/** A Gemini CLI ≥ 0.39 session (`session-….jsonl`): a metadata line, message upserts, `$set` updates. */
export function geminiTranscript(sessionId: string, turns: Turn[], start = Date.parse('2026-09-01T09:00:00.000Z')): string {
  const lines: unknown[] = [{sessionId, projectHash: 'a'.repeat(64), startTime: new Date(start).toISOString(), lastUpdated: new Date(start).toISOString(), kind: 'main'}]
  let t = start
  let n = 0
  const id = () => `a0000000-0000-4000-8000-${String(++n).padStart(12, '0')}`
  for (const turn of turns) {
    lines.push({id: id(), timestamp: new Date((t += 1000)).toISOString(), type: 'user', content: [{text: turn.prompt}]})
    const toolCalls = (turn.tools ?? []).map(([name, args], j) => {
      const callId = `${GEMINI_TOOLS[name] ?? name}_${t}_${j}`
      const geminiName = GEMINI_TOOLS[name] ?? name
      return {id: callId, name: geminiName, args, result: [{functionResponse: {id: callId, name: geminiName, response: {output: 'ok'}}}], status: 'success', timestamp: new Date(t + 500).toISOString()}
    })
    lines.push({id: id(), timestamp: new Date((t += 1000)).toISOString(), type: 'gemini', content: turn.answer, thoughts: [], tokens: {input: 10, output: 5, cached: 0, thoughts: 0, tool: 0, total: 15}, model: 'gemini-2.5-pro', ...(toolCalls.length ? {toolCalls} : {})})
    lines.push({$set: {lastUpdated: new Date(t).toISOString()}})
  }
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
}

/** A Codex CLI rollout (`rollout-….jsonl`): `{timestamp, type, payload}` lines. */
export function codexRollout(sessionId: string, cwd: string, turns: Turn[], start = Date.parse('2026-09-01T09:00:00.000Z')): string {
  let t = start
  const at = () => new Date((t += 1000)).toISOString()
  const lines: unknown[] = [
    {timestamp: at(), type: 'session_meta', payload: {id: sessionId, timestamp: new Date(start).toISOString(), cwd, originator: 'codex_cli_rs', cli_version: '0.169.0', source: 'cli'}},
    {timestamp: at(), type: 'response_item', payload: {type: 'message', role: 'user', content: [{type: 'input_text', text: `<environment_context>\n  <cwd>${cwd}</cwd>\n</environment_context>`}]}},
  ]
  for (const turn of turns) {
    lines.push({timestamp: at(), type: 'turn_context', payload: {cwd, approval_policy: 'on-request', sandbox_policy: {type: 'workspace-write'}, model: 'gpt-5.5', summary: 'auto'}})
    lines.push({timestamp: at(), type: 'response_item', payload: {type: 'message', role: 'user', content: [{type: 'input_text', text: turn.prompt}]}})
    lines.push({timestamp: at(), type: 'event_msg', payload: {type: 'user_message', message: turn.prompt, images: []}})
    for (const [name, input] of turn.tools ?? []) {
      if (name === 'Write' || name === 'Edit') {
        const patch = `*** Begin Patch\n*** ${name === 'Write' ? 'Add' : 'Update'} File: ${String(input.file_path)}\n+hello\n*** End Patch`
        lines.push({timestamp: at(), type: 'response_item', payload: {type: 'custom_tool_call', call_id: `call_${t}`, name: 'apply_patch', input: patch}})
      } else {
        // Codex CLI reads a file with its shell tool.
        const cmd = name === 'Read' ? `cat ${String(input.file_path)}` : 'ls'
        lines.push({timestamp: at(), type: 'response_item', payload: {type: 'function_call', name: 'exec_command', arguments: JSON.stringify({cmd, workdir: cwd}), call_id: `call_${t}`}})
      }
    }
    lines.push({timestamp: at(), type: 'response_item', payload: {type: 'message', role: 'assistant', content: [{type: 'output_text', text: turn.answer}], phase: 'final_answer'}})
    lines.push({timestamp: at(), type: 'event_msg', payload: {type: 'agent_message', message: turn.answer, phase: 'final_answer'}})
  }
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
}
