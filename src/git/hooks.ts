/**
 * `jarvis hooks install [--uninstall]`: git hooks (post-commit, post-merge, post-checkout) that run
 * `jarvis sync --quiet` and never block or fail git.
 *
 * - The hooks directory is git's own answer (`git rev-parse --git-path hooks`), so `core.hooksPath` (relative to
 *   the top level of the work tree when relative) and linked work trees are honoured.
 * - Our lines live in one delimited block (`# >>> jarvis >>>` … `# <<< jarvis <<<`) appended to an existing hook
 *   (its content is kept as it is) or in a new executable `#!/bin/sh` hook. Installing twice changes nothing;
 *   uninstalling removes only the block, and the file too when nothing but the shebang is left.
 * - Failures are not silent: a sync that fails writes one line to the tree's `.nexus/hooks.log` (`jarvis status`
 *   shows it), and when the recorded node or script is gone (a moved clone, a reinstalled node) `jarvis` on PATH runs.
 * - Never blocking: the block starts the sync in a background subshell whose standard streams are all on
 *   /dev/null, with `|| true`, so the hook returns at once whatever the server does, and nothing holds git's
 *   (or an IDE's) output pipe open — redirecting only the inner command would leave the subshell holding it,
 *   and a caller that reads git's output would wait for the sync after all. A down server costs git nothing;
 *   the sync's own timeouts end the background process.
 */
import {chmod, mkdir, realpath, rename, rm, stat, writeFile} from 'node:fs/promises'
import {basename, dirname, isAbsolute, join, posix, relative, resolve} from 'node:path'

import createDebug from 'debug'

import {BadInputError, NotATreeError} from '../errors.js'
import {type Invocation, isExecutable, jarvisInvocation, shellLine, shellQuote} from '../invocation.js'
import {findRoot, readTextIfExists} from '../store/index.js'

const debug = createDebug('jarvis:hooks')

export const HOOK_NAMES = ['post-commit', 'post-merge', 'post-checkout'] as const
export const BLOCK_START = '# >>> jarvis >>>'
export const BLOCK_END = '# <<< jarvis <<<'

export interface HooksResult {
  hooksDir: string
  /** Hooks created, or whose jarvis block was added or brought up to date. */
  installed: string[]
  /** Hooks that already had this exact block (install) or had none (uninstall). */
  unchanged: string[]
  /** Hooks whose jarvis block was removed (uninstall). */
  removed: string[]
  /** Hooks left alone because they are not shell scripts: the block cannot be added to them. */
  skipped: string[]
  /** Things a person should know (a hook git will not run, a hook that exits before our block). */
  warnings: string[]
  /** The command line the hooks run. */
  command: string
}

export interface HooksOptions {
  /** A directory inside the repository (default: the working directory). */
  cwd?: string
  uninstall?: boolean
  /** `--dir`: where the repository and the jarvis tree are looked for (walking up); default `cwd`. */
  dir?: string
}

/** What the block runs, and where it writes a failure. */
export interface HookTarget {
  /** This jarvis by absolute path (node, then bin/run.js); undefined: `jarvis` on PATH only. */
  invocation?: Invocation
  /** ` --dir <tree>`, or '' when the tree is found from the work tree's top level. */
  dirArgument: string
  /** The tree's `.nexus/hooks.log`, from the top level (where git runs hooks) or absolute. */
  log: string
}

/**
 * The block a hook gets. The recorded node and script first; when either is gone (the clone moved, node was
 * reinstalled), `jarvis` on PATH. A failure is one line in the tree's `.nexus/hooks.log`, which `jarvis status`
 * shows: git itself never waits and never fails.
 */
export function hookBlock(target: HookTarget | string): string {
  // A string is a command line to run as it is (`jarvis` on PATH, or a test's own).
  const {invocation, dirArgument, log} = typeof target === 'string' ? {invocation: undefined, dirArgument: '', log: '.nexus/hooks.log'} : target
  const sync = `sync --quiet${dirArgument}`
  const script = invocation?.args.at(-1)
  const run = invocation && script
    ? [`  if [ -x ${shellQuote(invocation.command)} ] && [ -f ${shellQuote(script)} ]; then ${shellLine(invocation)} ${sync}`, `  else jarvis ${sync}`, '  fi']
    : [`  ${typeof target === 'string' ? target : 'jarvis'} ${sync}`]
  const failed = `"$(date -u +%Y-%m-%dT%H:%M:%SZ) git sync jarvis sync from a git hook failed (exit $code): jarvis status and jarvis sync say why; if jarvis moved, run jarvis hooks install again"`
  return [
    BLOCK_START,
    '# Added by `jarvis hooks install`; `jarvis hooks install --uninstall` removes it.',
    '# Syncs the shared memory in the background: git never waits for it and never fails because of it.',
    '# A failure is a line in .nexus/hooks.log, which `jarvis status` shows (a conflict kept in a backup is not one).',
    '(',
    // A checkout where jarvis is not set up (a linked `git worktree`, a fresh clone of a repo that tracks .memory/)
    // has nothing to sync, and no .nexus/ for a line: the hook does nothing there.
    `  [ -d ${shellQuote(posix.dirname(log))} ] || exit 0`,
    ...run.slice(0, -1),
    // Exit 4 is a sync that did its work and kept a conflict in a backup: `jarvis status` shows that, not as a failure.
    `${run.at(-1)} || { code=$?; [ "$code" = 4 ] || echo ${failed} >> ${shellQuote(log)}; }`,
    ') </dev/null >/dev/null 2>&1 &',
    BLOCK_END,
  ].join('\n')
}

const SHELLS = /^#!\s*(?:\/usr\/bin\/env\s+(?:-S\s+)?)?(?:\S*\/)?(?:sh|bash|dash|zsh|ksh|ash|mksh)(?:\s|$)/

/** The lines of the block in `text`: [start, end] line indexes, or null. */
function findBlock(lines: string[]): [number, number] | null {
  const start = lines.findIndex((line) => line.trim() === BLOCK_START)
  if (start === -1) return null
  const end = lines.findIndex((line, i) => i > start && line.trim() === BLOCK_END)
  return end === -1 ? null : [start, end]
}

/** The hook text without our block (and the blank line we put before it). */
export function withoutBlock(text: string): string {
  const lines = text.split('\n')
  const block = findBlock(lines)
  if (!block) return text
  let [start] = block
  const [, end] = block
  if (start > 0 && lines[start - 1].trim() === '') start--
  lines.splice(start, end - start + 1)
  return lines.join('\n')
}

/** The hook text with our block, appended at the end or replacing an older one in place. */
export function withBlock(text: string | null, block: string): string {
  if (text === null || text.trim() === '') return `#!/bin/sh\n${block}\n`
  const lines = text.split('\n')
  const found = findBlock(lines)
  if (found) {
    lines.splice(found[0], found[1] - found[0] + 1, ...block.split('\n'))
    return lines.join('\n')
  }
  return `${text.endsWith('\n') ? text : `${text}\n`}\n${block}\n`
}

/** True when nothing but a shebang, blank lines and comments that git put in a fresh hook is left. */
function isEmptyHook(text: string): boolean {
  return text
    .split('\n')
    .filter((line, i) => !(i === 0 && line.startsWith('#!')))
    .every((line) => line.trim() === '')
}

/** The last command of a shell script exits: a block appended after it would never run. */
function endsWithExit(text: string): boolean {
  const commands = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
  return commands.length > 0 && /^exit(\s|$)/.test(commands[commands.length - 1])
}

/** Replaces `path` (through a symlink, if it is one) via a temp file and rename, keeping or setting its mode. */
async function writeHook(path: string, text: string, mode: number): Promise<void> {
  let target = path
  try {
    target = await realpath(path)
  } catch {
    // a new hook
  }
  const temp = join(dirname(target), `.${basename(target)}.jarvis-tmp-${process.pid}`)
  await writeFile(temp, text, {mode})
  await chmod(temp, mode)
  await rename(temp, target)
}

/** Where this repository's hooks live, absolute. BadInputError outside a git repository. */
export async function hooksDirectory(cwd: string): Promise<{hooksDir: string; topLevel: string | null}> {
  // simple-git is loaded by the commands that use git, not at every start.
  const {simpleGit} = await import('simple-git')
  const git = simpleGit({baseDir: cwd})
  let raw: string
  try {
    raw = (await git.revparse(['--path-format=absolute', '--git-path', 'hooks'])).trim()
  } catch (error) {
    throw new BadInputError(`${cwd} is not inside a git repository (${firstLine(error)}); run \`git init\` first`, {cwd}, error)
  }
  // git before 2.31 does not know --path-format and answers relative to cwd.
  const hooksDir = isAbsolute(raw) ? raw : resolve(cwd, raw)
  let topLevel: string | null = null
  try {
    topLevel = (await git.revparse(['--show-toplevel'])).trim() || null
  } catch {
    topLevel = null // a bare repository: hooks run in the git directory
  }
  return {hooksDir, topLevel}
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).trim().split('\n')[0]
}

/** `--dir` for a tree that is not found from the top level by walking up (hooks run at the top level), and its log. */
async function treeLocation(treeRoot: string | undefined, topLevel: string | null): Promise<{dirArgument: string; log: string}> {
  const log = (dir: string) => (dir === '' ? '.nexus/hooks.log' : `${dir}/.nexus/hooks.log`)
  if (!treeRoot || !topLevel) return {dirArgument: '', log: log('')}
  const [tree, top] = await Promise.all([realpath(treeRoot).catch(() => treeRoot), realpath(topLevel).catch(() => topLevel)])
  const rel = relative(top, tree).split('\\').join('/')
  // The top level itself or one of its parents: `jarvis` finds it by walking up.
  if (rel === '' || /^\.\.(\/\.\.)*$/.test(rel)) return {dirArgument: '', log: log(rel)}
  // Below the top level: relative, so that the hook survives moving the repository.
  if (!isAbsolute(rel) && rel !== '..' && !rel.startsWith('../')) return {dirArgument: ` --dir ${shellQuote(rel)}`, log: log(rel)}
  return {dirArgument: ` --dir ${shellQuote(tree)}`, log: log(tree)}
}

/** Installs (or with `uninstall`, removes) the jarvis block in the three hooks. */
export async function installHooks(options: HooksOptions = {}): Promise<HooksResult> {
  const cwd = resolve(options.cwd ?? process.cwd(), options.dir ?? '.')
  const {hooksDir, topLevel} = await hooksDirectory(cwd)
  let treeRoot: string | undefined
  try {
    treeRoot = findRoot(cwd)
  } catch (error) {
    if (!(error instanceof NotATreeError)) throw error
  }
  const location = await treeLocation(treeRoot, topLevel)
  const invocation = await jarvisInvocation()
  const command = `${invocation ? shellLine(invocation) : 'jarvis'}${location.dirArgument}`
  const block = hookBlock({invocation, ...location})
  const result: HooksResult = {hooksDir, installed: [], unchanged: [], removed: [], skipped: [], warnings: [], command}
  if (!treeRoot && !options.uninstall) result.warnings.push('no jarvis tree here yet: the hooks do nothing until `jarvis init`')
  if (!options.uninstall) await mkdir(hooksDir, {recursive: true})

  for (const name of HOOK_NAMES) {
    const path = join(hooksDir, name)
    const text = await readTextIfExists(path)
    if (options.uninstall) {
      if (text === null || findBlock(text.split('\n')) === null) {
        result.unchanged.push(name)
        continue
      }
      const rest = withoutBlock(text)
      if (isEmptyHook(rest)) await rm(path, {force: true})
      else await writeHook(path, rest, (await stat(path)).mode & 0o7777)
      result.removed.push(name)
      continue
    }
    if (text !== null && text.trim() !== '' && text.startsWith('#!') && !SHELLS.test(text.split('\n')[0])) {
      result.skipped.push(name)
      result.warnings.push(`${name} is not a shell script (${text.split('\n')[0]}); add \`${command} sync --quiet &\` to it yourself`)
      continue
    }
    const next = withBlock(text, block)
    if (next === text) {
      result.unchanged.push(name)
    } else {
      const mode = text === null ? 0o755 : (await stat(path)).mode & 0o7777
      await writeHook(path, next, mode)
      result.installed.push(name)
      debug('%s: %s', text === null ? 'created' : 'updated', path)
    }
    if (text !== null && !isExecutable(path)) {
      result.warnings.push(`${name} is not executable, so git does not run it (nor the jarvis block): \`chmod +x ${path}\` to enable it`)
    } else if (text !== null && endsWithExit(withoutBlock(text))) {
      result.warnings.push(`${name} ends with \`exit\` before the jarvis block, which therefore never runs: move the block above it`)
    }
  }
  return result
}
