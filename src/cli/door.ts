/**
 * What the fast door (src/cli/fast.ts, and bin/run.js through src/cli/code-cache.ts) decides before it loads
 * anything: the version, and which of its bundles a call names.
 */
import {readFileSync} from 'node:fs'

/** `jarvis --version` in oclif's own words, so that scripts reading it see no difference; false for any other call. */
export function printVersion(argv: string[], packageRoot: URL): boolean {
  if (argv.length !== 1 || (argv[0] !== '--version' && argv[0] !== '-v')) return false
  const pkg = JSON.parse(readFileSync(new URL('package.json', packageRoot), 'utf8')) as {name: string; version: string}
  process.stdout.write(`${pkg.name}/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`)
  return true
}

/**
 * The door a call would go through, named by its command words (`memory` commands take two: `memory-snapshot`), and
 * the arguments after them; undefined when the words are not words. Whether that door exists is the caller's to see.
 */
export function fastDoorOf(argv: string[]): {name: string; argv: string[]} | undefined {
  const count = argv[0] === 'memory' ? 2 : 1
  const words = argv.slice(0, count)
  if (words.length < count || !words.every((word) => /^[a-z][a-z-]{0,30}$/.test(word))) return undefined
  return {name: words.join('-'), argv: argv.slice(count)}
}
