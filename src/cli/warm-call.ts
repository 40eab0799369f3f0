/**
 * A whole call answered by a watch of the tree (docs/decisions/warm-client.md): `bin/jarvis` hands `memory ls`,
 * `memory search`, `recall`, a one-shot `sync` and an agent's hooks but session-start (their stdin with them) to the
 * tree's warm server through bin/warm-call.pl, so that no Node process starts for them. The server runs the call as
 * the fast door would (the same parse, the same action, the same output and exit code) and streams it back in
 * frames (warm/protocol.ts). Anything it cannot run exactly as the client's own process would — another command, a
 * flag the door leaves to oclif, another tree, an environment that would change the answer — it declines before
 * doing anything, and the client runs jarvis itself.
 */
import {fastDoorOf} from './door.js'
import {FAST_ACTIONS} from './fast.js'
import {runParsedAction} from './fast-action.js'
import {progressText} from './progress.js'
import {parseActionArgv} from './actions/spec.js'
import {findRoot} from '../store/root.js'
import {type CallFrames, type CallRunner, realRoot} from '../warm/protocol.js'

/** The commands a warm server runs whole: each reads the tree, or syncs it as the client would. */
const WARM_DOORS: ReadonlySet<string> = new Set(['memory-ls', 'memory-search', 'recall', 'sync'])

/**
 * A client's call: its arguments, its working folder (a real path), its environment, whether its stderr is a
 * terminal, and for a hook what the agent wrote on its stdin.
 */
export interface WarmCall {
  argv: string[]
  cwd: string
  env: Record<string, string>
  stderrTTY: boolean
  stdin?: string
}

/**
 * The variables that may change what a call does or prints: jarvis's own, where users and agents keep their
 * settings, Node's and the network's, the locale and the debug switch. A call whose values differ from the server's
 * is declined: the server's process runs with its own.
 */
const CALL_ENV_PREFIXES = ['JARVIS_', 'XDG_', 'NODE_', 'LC_', 'CLAUDE_', 'GEMINI_', 'CODEX_']
const CALL_ENV_NAMES = new Set(['HOME', 'DEBUG', 'TZ', 'LANG', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'SSL_CERT_FILE', 'SSL_CERT_DIR'])

/**
 * What a hook reads from its process rather than from the environment `runHook` is handed (the call's): the home
 * folder behind `os.homedir()`, the time zone behind `Date`, and the debug switch. Only these must match the
 * watch's. Everything else a hook reads comes from the call's environment: the agent's project folder and session,
 * the tree's settings (`JARVIS_DIR`). The rest does not change its answer: a prompt hook ranks by keywords only and
 * reads the tree's files; a recording hook also reads the transcript its input names, and starts the background
 * sync as a process of its own, with the call's environment (docs/hooks.md). Neither talks to a server here, so the
 * server, the tokens, the proxies and certificates, Node's options and the embeddings provider may all differ; no
 * hook compares text by locale. The agents start `jarvis mcp` with less than their hooks get: Gemini CLI strips
 * every `*TOKEN*`, `*KEY*` and `*CERT*` variable, Codex passes a dozen.
 */
const HOOK_PROCESS_ENV: ReadonlySet<string> = new Set(['HOME', 'TZ', 'DEBUG'])

const mattersToCall = (name: string) => CALL_ENV_NAMES.has(name) || CALL_ENV_PREFIXES.some((prefix) => name.startsWith(prefix))
const mattersToHook = (name: string) => HOOK_PROCESS_ENV.has(name)

/** The first variable that `matters` and differs between the client's environment and the server's; undefined: none. */
export function envDifference(client: Record<string, string | undefined>, server: NodeJS.ProcessEnv, matters: (name: string) => boolean = mattersToCall): string | undefined {
  const names = new Set([...Object.keys(client), ...Object.keys(server)].filter(matters))
  for (const name of names) if ((client[name] ?? '') !== (server[name] ?? '')) return name
  return undefined
}

/** The first variable a hook reads from its process that differs between the client's environment and the server's. */
export const hookEnvDifference = (client: Record<string, string | undefined>, server: NodeJS.ProcessEnv) => envDifference(client, server, mattersToHook)

/** The call in a request's input, or undefined when it is not one. */
export function warmCallOf(input: Record<string, unknown>): WarmCall | undefined {
  const {argv, cwd, env, stderrTTY, stdin} = input
  if (!Array.isArray(argv) || !argv.every((arg) => typeof arg === 'string') || typeof cwd !== 'string' || typeof stderrTTY !== 'boolean') return undefined
  if (typeof env !== 'object' || env === null || !Object.values(env).every((value) => typeof value === 'string')) return undefined
  if (stdin !== undefined && typeof stdin !== 'string') return undefined
  return {argv: argv as string[], cwd, env: env as Record<string, string>, stderrTTY, ...(stdin === undefined ? {} : {stdin})}
}

/** The command line's runner of whole calls (cli/warm-call-on-use.ts hands it to the processes that start a warm server). */
export const runWarmCall: CallRunner = async (input, real, frames) => {
  const call = warmCallOf(input)
  return call === undefined ? frames.declined('not a call') : answerCall(call, real, frames)
}

/** Runs `call` for the tree at `real` (the server's real root), or declines it; a throw before `accepted` is a decline. */
export async function answerCall(call: WarmCall, real: string, frames: CallFrames): Promise<void> {
  const door = fastDoorOf(call.argv)
  if (door?.name === 'hook') return answerHookCall(call, door.argv, real, frames)
  if (door === undefined || !WARM_DOORS.has(door.name)) return frames.declined('not a call a watch runs')
  // oclif reads JARVIS_CONTENT_TYPE=json as --json: the fast door leaves it to oclif, and so does this.
  if (call.env.JARVIS_CONTENT_TYPE !== undefined) return frames.declined('JARVIS_CONTENT_TYPE is set')
  const different = envDifference(call.env, process.env)
  if (different !== undefined) return frames.declined(`${different} differs from the watch's`)
  const action = await FAST_ACTIONS[door.name]()
  const input = parseActionArgv(action.spec, door.argv, call.env)
  if (input === undefined) return frames.declined('flags the fast door leaves to oclif')
  let root: string
  try {
    root = findRoot(call.cwd, input.flags.dir as string | undefined)
  } catch {
    return frames.declined('not in a tree') // the client's own process says what is wrong
  }
  if (realRoot(root) !== real) return frames.declined(`another tree than ${real}`)
  frames.accepted()
  let stdout = ''
  const progress = call.stderrTTY
    ? (done: number, total: number) => {
        const text = progressText(done, total)
        if (text) frames.stderr(text)
      }
    : undefined
  // `--dir` the tree itself: the action's own look-ups then find it from any working folder, this process's too.
  const exit = await runParsedAction(action, {flags: {...input.flags, dir: root}, args: input.args}, {stdout: (text) => (stdout += text), stderr: frames.stderr, progress, signal: frames.signal})
  frames.done(stdout, exit)
}

/**
 * An agent's hook, run here as `jarvis hook` would run it in the client's process: the same arguments, its stdin,
 * working folder and environment handed to `runHook`, its answer on stdout, exit 0. Declined: session-start (see
 * WATCHED_HOOK_EVENTS), arguments the door leaves to oclif, a session in another tree, or a difference in the
 * variables it reads from its process (HOOK_PROCESS_ENV).
 */
async function answerHookCall(call: WarmCall, argv: string[], real: string, frames: CallFrames): Promise<void> {
  const [{parseHookArgv}, {parseHookEvent, WATCHED_HOOK_EVENTS}, {findHookTree, parseHookInput}] = await Promise.all([import('./hook-door.js'), import('../hook/events.js'), import('../hook/input.js')])
  const args = parseHookArgv(argv, call.env)
  const event = parseHookEvent(args?.event)
  if (args === undefined || event === undefined || !WATCHED_HOOK_EVENTS.has(event) || call.stdin === undefined) return frames.declined('not a hook a watch runs')
  const different = hookEnvDifference(call.env, process.env)
  if (different !== undefined) return frames.declined(`${different} differs from the watch's`)
  const stdin = call.stdin
  const root = findHookTree({dir: args.dir, input: parseHookInput(stdin).input, agent: args.agent, env: call.env, processCwd: call.cwd})
  if (root === undefined || realRoot(root) !== real) return frames.declined(`the session is not in ${real}`)
  frames.accepted()
  const {runHook} = await import('../hook/ops.js')
  const result = await runHook({event: args.event, agent: args.agent, stdin, env: call.env, cwd: call.cwd, dir: args.dir, maxTokens: args.maxTokens})
  frames.done(result.stdout, 0)
}
