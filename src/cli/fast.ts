/**
 * The door that skips oclif (about 60 ms of loading and set-up) for the calls paid most often: `jarvis --version`,
 * `jarvis hook …`, which an agent runs at every prompt, and the hot commands of agents and git hooks (memory
 * snapshot, append and ls, recall, a one-shot sync), run through the same actions (cli/actions/) as their oclif
 * commands. Anything else, or anything unusual in these calls (help, an unknown flag, a bad value), goes to oclif,
 * which answers it as always. No import here loads more than the call needs: this module is loaded by bin/run.js
 * before anything else.
 */
import {readFileSync} from 'node:fs'
import {format, parseArgs} from 'node:util'

import type {CommandOutput} from './actions/output.js'
import type {ActionSpec, ParsedFlags} from './actions/spec.js'

interface Action {
  spec: ActionSpec
  run(input: {flags: ParsedFlags; args: Record<string, string>}, output: CommandOutput): Promise<unknown>
}

/** The parsed flags fit the action's input because its spec says so; the module's types cannot show it. */
const action = (load: () => Promise<unknown>) => load as () => Promise<Action>

/** The commands the fast door runs, by the words that name them. */
export const FAST_ACTIONS: Record<string, () => Promise<Action>> = {
  'memory snapshot': action(() => import('./actions/memory-snapshot.js')),
  'memory append': action(() => import('./actions/memory-append.js')),
  'memory ls': action(() => import('./actions/memory-ls.js')),
  recall: action(() => import('./actions/recall.js')),
  sync: action(() => import('./actions/sync.js')),
}

/** true when the call was answered here; false: run oclif. */
export async function runFast(argv: string[], packageRoot: URL): Promise<boolean> {
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    const pkg = JSON.parse(readFileSync(new URL('package.json', packageRoot), 'utf8')) as {name: string; version: string}
    // oclif's own wording, so that scripts reading it see no difference.
    process.stdout.write(`${pkg.name}/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`)
    return true
  }
  if (argv[0] === 'hook') return hook(argv.slice(1))
  // oclif reads JARVIS_CONTENT_TYPE=json as --json: rare enough to leave to it.
  if (process.env.JARVIS_CONTENT_TYPE !== undefined) return false
  const words = argv[0] === 'memory' ? 2 : 1
  const load = FAST_ACTIONS[argv.slice(0, words).join(' ')]
  return load === undefined ? false : runAction(await load(), argv.slice(words))
}

async function runAction(action: Action, argv: string[]): Promise<boolean> {
  const [{parseActionArgv}, {errorEnvelope, errorLines, exitCodeOf, jsonText, successEnvelope}] = await Promise.all([import('./actions/spec.js'), import('./envelope.js')])
  const input = parseActionArgv(action.spec, argv, process.env)
  if (input === undefined) return false
  const json = input.flags.json === true
  const warnings: string[] = []
  // oclif prints each line as util.format(line) and a newline; so does this.
  const stdout = (text: string) => process.stdout.write(`${format(text)}\n`)
  const stderr = (text: string) => process.stderr.write(`${format(text)}\n`)
  const output: CommandOutput = {
    json,
    log: (text) => json || stdout(text),
    logToStderr: (text) => json || stderr(text),
    warn(message) {
      warnings.push(message)
      if (!json) stderr(`warning: ${message}`)
    },
  }
  try {
    const result = await action.run(input, output)
    if (json) stdout(jsonText(successEnvelope(result, warnings)))
  } catch (error) {
    process.exitCode = exitCodeOf(error)
    if (json) stdout(jsonText(errorEnvelope(error, warnings)))
    else for (const line of errorLines(error instanceof Error ? error : new Error(String(error)))) stderr(line)
  }
  return true
}

async function hook(argv: string[]): Promise<boolean> {
  let parsed
  try {
    parsed = parseArgs({args: argv, allowPositionals: true, strict: true, options: {agent: {type: 'string'}, 'max-tokens': {type: 'string'}, dir: {type: 'string'}}})
  } catch {
    return false
  }
  const {positionals, values} = parsed
  const maxTokens = values['max-tokens'] === undefined ? undefined : Number(values['max-tokens'])
  if (positionals.length !== 1 || values.agent === undefined || (maxTokens !== undefined && !Number.isInteger(maxTokens))) return false
  const [{answerHook, hookFailed}, {DEFAULT_MAX_TOKENS, MIN_MAX_TOKENS}] = await Promise.all([import('./hook-door.js'), import('../hook/budget.js')])
  if (maxTokens !== undefined && maxTokens < MIN_MAX_TOKENS) return false
  try {
    await answerHook({event: positionals[0], agent: values.agent, maxTokens: maxTokens ?? DEFAULT_MAX_TOKENS, dir: values.dir ?? (process.env.JARVIS_DIR || undefined)})
  } catch (error) {
    await hookFailed(error instanceof Error ? error : new Error(String(error)))
  }
  return true
}
