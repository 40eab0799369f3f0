/**
 * `jarvis memory ls|read|write|edit|grep|delete|episode|compact` and `jarvis context map`: the operations on the
 * memory files (docs/memory-files.md): typed input, typed result; the human renderings are in cli/files-render.ts.
 */
import {
  compactProject,
  type CompactResult,
  deleteMemory,
  type DeleteResult,
  editMemory,
  type EditResult,
  type FileEdit,
  type GrepHit,
  grepMemory,
  readMemory,
  writeContextMap,
  writeEpisode,
  writeMemory,
  type WriteResult,
} from '../files/index.js'
import type {GuardedWrite} from '../files/tools.js'
import type {ContextMap} from '../schemas/index.js'
import {openTree} from './context.js'

export {type LsResult, memoryLs} from './memory-ls.js'
export type {EditResult} from '../files/index.js'

// ---------------------------------------------------------------------------------------------------------------
// results

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

/**
 * `base` (an MCP session: what was read): a file changed since is merged or refused (exit 4), never overwritten.
 * `metadata`: more front-matter fields.
 */
export async function memoryWrite(
  options: {dir?: string; path: string; content: string; title?: string; tags?: string[]; metadata?: Record<string, unknown>} & GuardedWrite,
): Promise<WriteResult> {
  const {root} = await openTree(options.dir)
  return writeMemory(root, options.path, options.content, {title: options.title, tags: options.tags, metadata: options.metadata}, {base: options.base, onWritten: options.onWritten})
}

/** The one occurrence of `replace` replaced `with` a text, or (MCP's memory_edit) a unified `diff` applied. */
export async function memoryEdit(options: {dir?: string; path: string} & FileEdit & GuardedWrite): Promise<EditResult> {
  const {root} = await openTree(options.dir)
  const edit: FileEdit = 'diff' in options ? {diff: options.diff} : {replace: options.replace, with: options.with}
  return editMemory(root, options.path, edit, {base: options.base, onWritten: options.onWritten})
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
  options: {dir?: string; title: string; tags?: string[]; project?: string; topic?: string; outcome?: string; refs?: string; now?: Date; body: string},
): Promise<WriteResult> {
  const {root} = await openTree(options.dir)
  return writeEpisode(root, {
    title: options.title,
    tags: options.tags,
    body: options.body,
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
