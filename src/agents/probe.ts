/**
 * Whether a registered MCP command really starts: spawned as the agent would (its command, arguments and env,
 * in the project), then the protocol's own handshake and `tools/list` through the SDK's client. The SDK loads
 * only when `agents status` asks.
 */
import type {Invocation} from '../invocation.js'

export interface ProbeResult {
  ok: boolean
  /** How many tools the server offers, when it answered. */
  tools?: number
  /** Why it did not answer: the error and the line of its stderr that says what failed (failureLine). */
  error?: string
}

const PROBE_TIMEOUT_MS = 20_000
/** A server that fails at its start writes a few lines; enough to keep the error line above a stack trace. */
const STDERR_KEPT = 64 * 1024

/** `Error: …`, `TypeError: …`, `Error [ERR_MODULE_NOT_FOUND]: …`, or jarvis's own `jarvis: …`. */
const ERROR_LINE = /^(?:\w*Error(?: \[\w+\])?|jarvis): \S/

/**
 * The line of a failed server's stderr that says what failed: the first error line (Node prints `Error: Cannot find
 * module …` between its source excerpt and the stack, and ends with its version), else the last line but Node's
 * version.
 */
export function failureLine(stderr: string): string | undefined {
  const lines = stderr.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '')
  return lines.find((line) => ERROR_LINE.test(line)) ?? lines.filter((line) => !/^Node\.js v\d/.test(line)).at(-1)
}

export async function probeServer(server: Invocation & {env?: Record<string, string>}, cwd: string): Promise<ProbeResult> {
  const [{Client}, {StdioClientTransport, getDefaultEnvironment}] = await Promise.all([import('@modelcontextprotocol/sdk/client/index.js'), import('@modelcontextprotocol/sdk/client/stdio.js')])
  const env = {...getDefaultEnvironment(), ...pick(process.env, ['HOME', 'XDG_CONFIG_HOME', 'JARVIS_TOKEN', 'JARVIS_SERVER', 'TMPDIR']), ...server.env}
  const transport = new StdioClientTransport({command: server.command, args: server.args, cwd, env, stderr: 'pipe'})
  let stderr = ''
  transport.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_KEPT)))
  const client = new Client({name: 'jarvis-agents-status', version: '1.0.0'})
  try {
    await client.connect(transport, {timeout: PROBE_TIMEOUT_MS})
    const {tools} = await client.listTools(undefined, {timeout: PROBE_TIMEOUT_MS})
    return {ok: true, tools: tools.length}
  } catch (error) {
    return {ok: false, error: [error instanceof Error ? error.message : String(error), failureLine(stderr)].filter(Boolean).join(': ')}
  } finally {
    await client.close().catch(() => {})
  }
}

function pick(env: NodeJS.ProcessEnv, names: string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => (env[name] === undefined ? [] : [[name, env[name] as string]])))
}
