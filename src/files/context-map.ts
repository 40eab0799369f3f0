/**
 * `context_map.json` from the tracked files of the repository holding the tree: pages, components,
 * api, lib, styles and scripts by the path conventions of common web projects (Next.js app/ and pages/,
 * src/components, app/api and pages/api, lib/, styles/ and *.css|*.scss, scripts/ and package.json scripts), and
 * the Prisma models and enums of `prisma/schema.prisma`. Deterministic apart from `timestamp`.
 */
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'


import {BadInputError} from '../errors.js'
import {type ContextMap, contextMapSchema} from '../schemas/index.js'
import {formatJson, withTreeLock, writeMemoryFile} from '../store/index.js'

export const CONTEXT_MAP_PATH = 'context_map.json'
export const PRISMA_SCHEMA_PATHS = ['prisma/schema.prisma', 'schema.prisma']

export type Structure = ContextMap['structure']
export type Category = 'pages' | 'components' | 'api' | 'lib' | 'styles' | 'scripts'

const CODE = /\.(?:[cm]?[jt]sx?|mdx?|vue|svelte|astro)$/
const STYLE = /\.(?:css|scss|sass|less|styl|pcss)$/
const APP_PAGE = /(?:^|\/)(?:page|layout|template|loading|error|not-found|global-error|default)\.(?:[jt]sx?|mdx?)$/
const APP_ROUTE = /(?:^|\/)route\.[jt]sx?$/

/** PURE: the category of one tracked path, or null. `src/` in front is looked through (Next.js's src/ layout). */
export function classifyPath(path: string): Category | null {
  const p = path.startsWith('src/') ? path.slice(4) : path
  if (STYLE.test(p)) return 'styles'
  if (/^(?:app|pages)\/api\//.test(p) && CODE.test(p)) return 'api'
  if (p.startsWith('app/') && APP_ROUTE.test(p)) return 'api'
  if (p.startsWith('app/') && APP_PAGE.test(p)) return 'pages'
  if (p.startsWith('pages/') && CODE.test(p)) return 'pages'
  if (/(?:^|\/)components\//.test(p) && CODE.test(p)) return 'components'
  if (/^(?:lib|utils)\//.test(p) && CODE.test(p)) return 'lib'
  if (p.startsWith('styles/')) return 'styles'
  if (path.startsWith('scripts/')) return 'scripts'
  return null
}

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** PURE: every category's paths, sorted; `package.json` scripts appear as `package.json#<name>`. */
export function classifyFiles(paths: string[], packageScripts: string[] = []): Structure {
  const structure: Structure = {pages: [], components: [], api: [], lib: [], styles: [], scripts: []}
  for (const path of paths) {
    const category = classifyPath(path)
    if (category) structure[category].push(path)
  }
  for (const name of packageScripts) structure.scripts.push(`package.json#${name}`)
  for (const list of Object.values(structure) as string[][]) list.sort(byCodePoint)
  return structure
}

/** PURE: the `model` and `enum` names of a Prisma schema, sorted (comments ignored). */
export function parsePrismaSchema(text: string): {models: string[]; enums: string[]} {
  const models = new Set<string>()
  const enums = new Set<string>()
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\/\/.*$/, '').trim()
    const match = /^(model|enum|view)\s+([A-Za-z_]\w*)\s*\{/.exec(line)
    if (!match) continue
    if (match[1] === 'enum') enums.add(match[2])
    else models.add(match[2])
  }
  return {models: [...models].sort(byCodePoint), enums: [...enums].sort(byCodePoint)}
}

/** The top directory of the git repository holding `dir`; BadInputError (exit 2) when there is none. */
export async function repositoryOf(dir: string): Promise<string> {
  // simple-git is loaded by the commands that use git, not at every start.
  const {simpleGit} = await import('simple-git')
  try {
    return (await simpleGit({baseDir: dir}).revparse(['--show-toplevel'])).trim()
  } catch (error) {
    throw new BadInputError(`${dir} is not inside a git repository: \`jarvis context map\` maps the files git tracks`, {dir}, error)
  }
}

async function readIfTracked(repoDir: string, tracked: Set<string>, path: string): Promise<string | null> {
  if (!tracked.has(path)) return null
  try {
    return await readFile(join(repoDir, path), 'utf8')
  } catch {
    return null // tracked but deleted in the working tree
  }
}

/** The context map of the repository at `repoDir` (its top level), from `git ls-files`. */
export async function buildContextMap(repoDir: string, options: {now: Date}): Promise<ContextMap> {
  const {simpleGit} = await import('simple-git')
  const git = simpleGit({baseDir: repoDir})
  const listing = await git.raw(['-c', 'core.quotePath=off', 'ls-files', '-z'])
  const tracked = listing.split('\0').filter(Boolean).sort(byCodePoint)
  const trackedSet = new Set(tracked)

  let scripts: string[] = []
  const config: Record<string, unknown> = {trackedFiles: tracked.length}
  const packageText = await readIfTracked(repoDir, trackedSet, 'package.json')
  if (packageText !== null) {
    try {
      const pkg = JSON.parse(packageText) as {name?: unknown; scripts?: unknown; dependencies?: Record<string, unknown>; devDependencies?: Record<string, unknown>}
      if (pkg.scripts && typeof pkg.scripts === 'object') scripts = Object.keys(pkg.scripts)
      if (typeof pkg.name === 'string') config.packageName = pkg.name
      const deps = {...pkg.devDependencies, ...pkg.dependencies}
      const frameworks = ['next', 'react', 'vue', 'nuxt', 'svelte', '@sveltejs/kit', 'astro', 'express', 'fastify', 'prisma', '@prisma/client'].filter((name) => name in deps)
      if (frameworks.length) config.frameworks = frameworks
    } catch {
      config.packageJson = 'does not parse'
    }
  }

  let database = {models: [] as string[], enums: [] as string[]}
  for (const candidate of PRISMA_SCHEMA_PATHS) {
    const text = await readIfTracked(repoDir, trackedSet, candidate)
    if (text === null) continue
    database = parsePrismaSchema(text)
    config.prismaSchema = candidate
    break
  }

  return contextMapSchema.parse({timestamp: options.now.toISOString(), structure: classifyFiles(tracked, scripts), database, config})
}

/** Writes `.memory/context_map.json` for the repository holding the tree, under the lock. */
export async function writeContextMap(root: string, options: {now: Date}): Promise<{path: string; repository: string; map: ContextMap}> {
  const repository = await repositoryOf(root)
  const map = await buildContextMap(repository, options)
  await withTreeLock(root, {command: 'context map'}, () => writeMemoryFile(root, CONTEXT_MAP_PATH, formatJson(map)))
  return {path: CONTEXT_MAP_PATH, repository, map}
}
