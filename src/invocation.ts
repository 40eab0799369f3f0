/**
 * How another program (a git hook, an agent's MCP registration or hook) starts this jarvis: the running binary
 * with this node, by absolute path, so that it works without `jarvis` on PATH and from any directory.
 */
import {accessSync, constants, readFileSync, realpathSync, statSync} from 'node:fs'
import {realpath} from 'node:fs/promises'
import {basename, delimiter, dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

/** A program and its arguments, never through a shell. */
export interface Invocation {
  command: string
  args: string[]
}

/** Single-quoted for sh when it needs quoting. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}

/** The invocation as one line of sh words. */
export function shellLine(invocation: Invocation): string {
  return [invocation.command, ...invocation.args].map(shellQuote).join(' ')
}

/**
 * This process as an invocation: `node <abs>/bin/run.js`; `bin/dev.js` (sources via tsx) with tsx's loader by
 * absolute URL, since the caller runs elsewhere. Undefined when this process is not a jarvis binary (e.g. a test
 * runner), where the caller falls back to `jarvis` on PATH.
 */
export async function jarvisInvocation(argv1: string | undefined = process.argv[1]): Promise<Invocation | undefined> {
  if (!argv1) return undefined
  let script: string
  try {
    script = await realpath(argv1)
  } catch {
    return undefined
  }
  const name = basename(script)
  if (basename(dirname(script)) !== 'bin' || (name !== 'run.js' && name !== 'dev.js')) return undefined
  if (!isJarvisPackage(dirname(dirname(script)))) return undefined
  if (name === 'run.js') return {command: process.execPath, args: [script]}
  try {
    const tsx = import.meta.resolve('tsx')
    return {command: process.execPath, args: ['--import', tsx, '--no-warnings=ExperimentalWarning', script]}
  } catch {
    return undefined
  }
}

/**
 * `bin/jarvis` beside the `bin/run.js` of `invocation` (what npm installs as `jarvis`), for an agent's hooks: it
 * hands the call to a watch of the tree when one runs, and starts no Node process then. Only when the `node` it
 * would otherwise run, the first on `env.PATH`, is the node of `invocation` (another version might not run this
 * jarvis); undefined otherwise, and the hooks keep `node <abs>/bin/run.js`.
 */
export function shellClientOf(invocation: Invocation, env: NodeJS.ProcessEnv): string | undefined {
  const [script] = invocation.args
  if (invocation.args.length !== 1 || basename(script) !== 'run.js') return undefined
  const client = join(dirname(script), 'jarvis')
  if (!isExecutable(client)) return undefined
  try {
    const ours = realpathSync(invocation.command)
    for (const dir of (env.PATH ?? '').split(delimiter)) {
      const node = join(dir || '.', 'node')
      if (!isExecutable(node)) continue
      return realpathSync(node) === ours ? client : undefined
    }
  } catch {
    // a node that cannot be resolved
  }
  return undefined
}

/** A file this process may run. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return statSync(path).isFile()
  } catch {
    return false
  }
}

function isJarvisPackage(dir: string): boolean {
  try {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {bin?: Record<string, string>}
    return typeof pkg.bin === 'object' && pkg.bin !== null && 'jarvis' in pkg.bin
  } catch {
    return false
  }
}

/**
 * The directory of jarvis's own package.json, found from a module's URL (`import.meta.url`). A module may sit in
 * `src/`, in `dist/` as tsc writes it or in a bundle's chunk: a path relative to the module would differ in each.
 */
export function jarvisPackageRoot(moduleUrl: string): string {
  const start = dirname(fileURLToPath(moduleUrl))
  for (let dir = start; ; dir = dirname(dir)) {
    if (isJarvisPackage(dir)) return dir
    if (dirname(dir) === dir) throw new Error(`jarvis's package.json not found above ${start}`)
  }
}

let version: string | undefined
/** This jarvis's version (its package.json's), read once. */
export function jarvisVersion(): string {
  version ??= (JSON.parse(readFileSync(join(jarvisPackageRoot(import.meta.url), 'package.json'), 'utf8')) as {version: string}).version
  return version
}
