/**
 * `jarvis memory ls|read|write|edit|grep|delete|episode|compact` and `jarvis context map`: the CLI side of the
 * memory files (docs/memory-files.md, seed 004). Commands hand their flags to one function here and get typed
 * data back; the human renderings are here too.
 */
import {readFile} from 'node:fs/promises'
import {resolve} from 'node:path'

import {BadInputError} from '../errors.js'
import {
  compactProject,
  type CompactResult,
  deleteMemory,
  type DeleteResult,
  editMemory,
  type GrepHit,
  grepMemory,
  listFiles,
  type ListedFile,
  readMemory,
  writeContextMap,
  writeEpisode,
  writeMemory,
  type WriteResult,
} from '../files/index.js'
import type {ContextMap} from '../schemas/index.js'
import {openTree} from './context.js'

export interface ContentSource {
  /** A file to read the content from; `-` for stdin. */
  file?: string
  /** stdin (tests may pass their own). */
  stdin?: () => Promise<string>
  /** Whether stdin is a terminal: then it is read only for `--file -`. */
  stdinIsTTY?: boolean
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** The content of a write: `--file PATH`, `--file -` or piped stdin; a terminal on stdin without `--file` is bad usage. */
export async function readContent(source: ContentSource): Promise<string> {
  const stdin = source.stdin ?? readStdin
  if (source.file === '-') return stdin()
  if (source.file !== undefined) {
    try {
      return await readFile(resolve(source.file), 'utf8')
    } catch (error) {
      throw new BadInputError(`cannot read --file ${source.file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, {file: source.file}, error)
    }
  }
  if (source.stdinIsTTY ?? process.stdin.isTTY) throw new BadInputError('no content: pipe it on stdin or pass --file PATH (--file - reads stdin)')
  return stdin()
}

// ---------------------------------------------------------------------------------------------------------------
// results

export interface LsResult {
  prefix: string
  files: ListedFile[]
}

export interface ReadResult {
  path: string
  title?: string
  tags: string[]
  frontMatter: Record<string, unknown>
  body: string
  text: string
  lastAccessed: string
}

export interface GrepResult {
  regex: string
  prefix: string
  hits: GrepHit[]
}

export interface ContextMapResult {
  path: string
  repository: string
  map: ContextMap
}

// ---------------------------------------------------------------------------------------------------------------
// the commands' one call each

export async function memoryLs(options: {dir?: string; prefix?: string; limit?: number}): Promise<LsResult> {
  const {root} = await openTree(options.dir)
  return {prefix: options.prefix ?? '', files: await listFiles(root, options.prefix, options.limit)}
}

export async function memoryRead(options: {dir?: string; path: string}): Promise<ReadResult> {
  const {root} = await openTree(options.dir)
  const file = await readMemory(root, options.path)
  const {title, tags} = file.frontMatter
  return {
    path: file.path,
    ...(typeof title === 'string' ? {title} : {}),
    tags: Array.isArray(tags) ? tags : [],
    frontMatter: file.frontMatter,
    body: file.body,
    text: file.text,
    lastAccessed: file.lastAccessed,
  }
}

export async function memoryWrite(options: {dir?: string; path: string; title?: string; tags?: string[]} & ContentSource): Promise<WriteResult> {
  const {root} = await openTree(options.dir)
  const content = await readContent(options)
  return writeMemory(root, options.path, content, {title: options.title, tags: options.tags})
}

export async function memoryEdit(options: {dir?: string; path: string; replace: string; with: string}): Promise<{path: string}> {
  const {root} = await openTree(options.dir)
  return editMemory(root, options.path, options.replace, options.with)
}

export async function memoryGrep(options: {dir?: string; regex: string; prefix?: string; limit?: number; ignoreCase?: boolean}): Promise<GrepResult> {
  const {root} = await openTree(options.dir)
  return {regex: options.regex, prefix: options.prefix ?? '', hits: await grepMemory(root, options.regex, options.prefix, options.limit, {ignoreCase: options.ignoreCase})}
}

export async function memoryDelete(options: {dir?: string; path: string}): Promise<DeleteResult> {
  const {root} = await openTree(options.dir)
  return deleteMemory(root, options.path)
}

export async function memoryEpisode(
  options: {dir?: string; title: string; tags?: string[]; project?: string; topic?: string; outcome?: string; refs?: string; now?: Date} & ContentSource,
): Promise<WriteResult> {
  const {root} = await openTree(options.dir)
  const body = await readContent(options)
  return writeEpisode(root, {
    title: options.title,
    tags: options.tags,
    body,
    now: options.now ?? new Date(),
    project: options.project,
    topic: options.topic,
    outcome: options.outcome,
    refs: options.refs,
  })
}

export async function memoryCompact(options: {dir?: string; project: string; now?: Date}): Promise<CompactResult> {
  const {root} = await openTree(options.dir)
  return compactProject(root, options.project, {now: options.now ?? new Date()})
}

export async function contextMap(options: {dir?: string; now?: Date}): Promise<ContextMapResult> {
  const {root} = await openTree(options.dir)
  return writeContextMap(root, {now: options.now ?? new Date()})
}

// ---------------------------------------------------------------------------------------------------------------
// human output

export function renderLs(result: LsResult): string {
  if (result.files.length === 0) return result.prefix ? `no memory files under ${result.prefix}` : 'no memory files'
  return result.files
    .map((file) => {
      const title = file.title ? `  ${file.title}` : ''
      const tags = file.tags.length ? `  [${file.tags.join(', ')}]` : ''
      const problem = file.problem ? `  (${file.problem.split('\n')[0]})` : ''
      return `${file.path}${title}${tags}${problem}`
    })
    .join('\n')
}

export function renderRead(result: ReadResult): string {
  return result.text.replace(/\n$/, '')
}

export function renderWrite(result: WriteResult): string {
  if (!result.changed) return `.memory/${result.path} unchanged (already holds this content)`
  return `${result.created ? 'created' : 'updated'} .memory/${result.path}`
}

export function renderEdit(result: {path: string}): string {
  return `edited .memory/${result.path} (one match replaced)`
}

export function renderGrep(result: GrepResult): string {
  if (result.hits.length === 0) return `no line matches /${result.regex}/`
  return result.hits.map((hit) => `${hit.path}:${hit.line}:${hit.text}`).join('\n')
}

export function renderDelete(result: DeleteResult): string {
  return result.syncsDeletion
    ? `deleted .memory/${result.path}; the next \`jarvis sync\` deletes it on the server too (the last sync recorded it)`
    : `deleted .memory/${result.path}; it was never synced, so the next \`jarvis sync\` has nothing to delete on the server`
}

export function renderCompact(result: CompactResult): string {
  const lines =
    result.episodes === 0
      ? [`no episodes for this project (front matter \`project\` or a tag equal to the slug); .memory/${result.path} not written`]
      : [`${result.changed ? 'wrote' : 'unchanged:'} .memory/${result.path} from ${result.episodes} episode${result.episodes === 1 ? '' : 's'} (the episodes are kept)`]
  for (const problem of result.skipped) lines.push(`skipped: ${problem}`)
  return lines.join('\n')
}

export function renderContextMap(result: ContextMapResult): string {
  const {structure, database} = result.map
  const counts = (Object.entries(structure) as [string, unknown][])
    .filter(([, value]) => Array.isArray(value))
    .map(([key, value]) => `${key} ${(value as unknown[]).length}`)
    .join(', ')
  return `wrote .memory/${result.path} from ${result.repository}\n  ${counts}\n  database: ${database.models.length} models, ${database.enums.length} enums`
}
