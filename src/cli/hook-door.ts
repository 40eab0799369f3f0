/**
 * `jarvis hook` as a process: stdin in, the agent's answer out, always exit 0. Shared by the oclif command and
 * the fast door (cli/fast.ts) that skips oclif for this call, the one an agent makes on every prompt.
 */
import {basename} from 'node:path'

import {logHookFailure, readHookStdin, runHook, type RunHookResult} from '../hook/index.js'

export interface HookArgs {
  event: string
  agent: string
  maxTokens: number
  dir?: string
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
