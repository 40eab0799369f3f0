import type {z} from 'zod'

import {SchemaError} from '../errors.js'
import {activeProjectSchema, contextMapSchema, parseJsonFile, parseJsonText, workerMemorySchema} from '../schemas/index.js'

/** The schema a memory file must satisfy, by its path relative to `.memory/` (contract §1). */
function schemaFor(path: string): z.ZodType | undefined {
  if (path === 'active_project.json') return activeProjectSchema
  if (path === 'context_map.json') return contextMapSchema
  if (/^jarvis\/[^/]+\.json$/.test(path)) return workerMemorySchema
  return undefined
}

/**
 * Checks a local memory file before it may leave this machine. A file that fails is left exactly as
 * it is — neither pushed nor overwritten — and reported as `.memory/<path>: where: what`.
 * Returns null when the file is fine.
 */
export function problemsOf(path: string, text: string): SchemaError | null {
  if (!path.endsWith('.json')) return null
  const file = `.memory/${path}`
  try {
    const schema = schemaFor(path)
    if (schema) parseJsonFile(schema, text, file)
    else parseJsonText(text, file)
    return null
  } catch (error) {
    if (error instanceof SchemaError) return error
    throw error
  }
}
