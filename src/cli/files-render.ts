/** Human output of the memory-file commands; `--json` prints their results instead. */
import type {CompactResult, DeleteResult, WriteResult} from '../files/index.js'
import type {ContextMapResult, GrepResult, LsResult} from '../ops/files.js'

export function renderLs(result: LsResult): string {
  if (result.files.length === 0) return result.prefix ? `no memory files under ${result.prefix}` : 'no memory files'
  const lines = result.files.map((file) => {
    const title = file.title ? `  ${file.title}` : ''
    const tags = file.tags.length ? `  [${file.tags.join(', ')}]` : ''
    const problem = file.problem ? `  (${file.problem.split('\n')[0]})` : ''
    return `${file.path}${title}${tags}${problem}`
  })
  if (result.truncated) lines.push(`… and more: the first ${result.files.length} are shown; --limit N shows more`)
  return lines.join('\n')
}

export function renderWrite(result: WriteResult): string {
  if (!result.changed) return `.memory/${result.path} unchanged (already holds this content)`
  return `${result.created ? 'created' : 'updated'} .memory/${result.path}`
}

export function renderEdit(result: {path: string}, how: 'replaced' | 'patched'): string {
  return `edited .memory/${result.path} (${how === 'replaced' ? 'one match replaced' : 'the patch applied'})`
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
