/**
 * The doors that skip oclif (about 80 ms of loading and set-up) for the calls paid most often: `jarvis --version`
 * and `jarvis hook …`, which an agent runs at every prompt. Anything else, or anything unusual on these two (help,
 * an unknown flag, a bad value), goes to oclif, which answers it as always. No import here loads more than the
 * call needs: this module is loaded by bin/run.js before anything else.
 */
import {readFileSync} from 'node:fs'
import {parseArgs} from 'node:util'

/** true when the call was answered here; false: run oclif. */
export async function runFast(argv: string[], packageRoot: URL): Promise<boolean> {
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    const pkg = JSON.parse(readFileSync(new URL('package.json', packageRoot), 'utf8')) as {name: string; version: string}
    // oclif's own wording, so that scripts reading it see no difference.
    process.stdout.write(`${pkg.name}/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`)
    return true
  }
  if (argv[0] === 'hook') return hook(argv.slice(1))
  return false
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
