/**
 * `jarvis hook` as a process: stdin in, the agent's answer out, always exit 0. Shared by the oclif command and
 * the fast door (cli/fast.ts, `runHookDoor`) that skips oclif for this call, the one an agent makes on every prompt.
 */
import {basename} from 'node:path'
import {parseArgs} from 'node:util'

import {DEFAULT_MAX_TOKENS, MIN_MAX_TOKENS} from '../hook/budget.js'
import {logHookFailure, readHookStdin, runHook, type RunHookResult} from '../hook/index.js'

export interface HookArgs {
  event: string
  agent: string
  maxTokens: number
  dir?: string
}

/**
 * `hook <event> --agent … [--max-tokens N] [--dir D]` read with `node:util` for its four flags (`--dir` defaults to
 * `JARVIS_DIR`); undefined for anything unusual (help, a bad value), which oclif answers.
 */
export function parseHookArgv(argv: string[], env: NodeJS.ProcessEnv): HookArgs | undefined {
  let parsed
  try {
    parsed = parseArgs({args: argv, allowPositionals: true, strict: true, options: {agent: {type: 'string'}, 'max-tokens': {type: 'string'}, dir: {type: 'string'}}})
  } catch {
    return undefined
  }
  const {positionals, values} = parsed
  const maxTokens = values['max-tokens'] === undefined ? undefined : Number(values['max-tokens'])
  if (positionals.length !== 1 || values.agent === undefined || (maxTokens !== undefined && !Number.isInteger(maxTokens))) return undefined
  if (maxTokens !== undefined && maxTokens < MIN_MAX_TOKENS) return undefined
  return {event: positionals[0], agent: values.agent, maxTokens: maxTokens ?? DEFAULT_MAX_TOKENS, dir: values.dir ?? (env.JARVIS_DIR || undefined)}
}

/** `jarvis hook …` without oclif; false when `parseHookArgv` leaves the call to oclif. */
export async function runHookDoor(argv: string[]): Promise<boolean> {
  const args = parseHookArgv(argv, process.env)
  if (args === undefined) return false
  try {
    await answerHook(args)
  } catch (error) {
    await hookFailed(error instanceof Error ? error : new Error(String(error)))
  }
  return true
}

export async function answerHook(args: HookArgs): Promise<RunHookResult> {
  const stdin = await readHookStdin(process.stdin)
  const result = await runHook({event: args.event, agent: args.agent, stdin, env: process.env, cwd: process.cwd(), dir: args.dir, maxTokens: args.maxTokens})
  if (result.stdout) process.stdout.write(result.stdout)
  endSoon()
  return result
}

/** Even a usage error must not break the agent: exit 0, logged like any other failure. */
export async function hookFailed(error: Error): Promise<void> {
  process.exitCode = 0
  await logHookFailure({env: process.env, cwd: process.cwd(), reason: `jarvis ${process.argv.slice(2).join(' ')}: ${error.message}`})
  endSoon()
}

/**
 * The answer is out: a request still open (a server that stopped answering) must not keep the agent waiting for
 * this process. Only in a jarvis process of its own, never inside a test runner that loaded the command.
 */
function endSoon(): void {
  const script = basename(process.argv[1] ?? '')
  if (script === 'run.js' || script === 'dev.js' || script === 'jarvis') setTimeout(() => process.exit(0), 100).unref()
}
