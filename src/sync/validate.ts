import type {z} from 'zod'

import {SchemaError} from '../errors.js'
import {fileSizeProblem} from '../schemas/file-size.js'
import {activeProjectSchema, contextMapSchema, parseJsonFile, parseJsonText, workerMemorySchema} from '../schemas/index.js'
import {hashText} from '../store/index.js'
import {jsonStringBytes} from './push.js'

/**
 * The most one push may carry: the protocol's limit of a request body, in bytes of JSON. A file's text grows in JSON,
 * each control character but a tab or line break to six bytes (`\u001b`): a file of them, well under MAX_FILE_BYTES,
 * can alone make a push larger than any request the server takes.
 */
export const MAX_PUSH_BYTES = 16 * 1024 * 1024
/** What a push of one file carries besides its text and its path (twice: in `files` and in `base`). */
const PUSH_ENVELOPE_BYTES = 128

/** The schema a memory file must satisfy, by its path relative to `.memory/` (contract §1). */
function schemaFor(path: string): z.ZodType | undefined {
  if (path === 'active_project.json') return activeProjectSchema
  if (path === 'context_map.json') return contextMapSchema
  if (/^jarvis\/[^/]+\.json$/.test(path)) return workerMemorySchema
  return undefined
}

/**
 * Checks a local memory file before it may leave this machine: text a server stores as it is, and, for JSON, its
 * schema. A file that fails is left exactly as it is — neither pushed nor overwritten — and reported as
 * `.memory/<path>: where: what`. `hash` is the file's bytes' (the scan's). Returns null when the file is fine.
 */
export function problemsOf(path: string, text: string, hash: string): SchemaError | null {
  const file = `.memory/${path}`
  const notText = textProblem(path, text, hash)
  if (notText !== undefined) return new SchemaError(file, [notText])
  if (!path.endsWith('.json')) return null
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

/** Why the file's text cannot be synced as it is, if it cannot. */
function textProblem(path: string, text: string, hash: string): string | undefined {
  // Bytes that are not UTF-8 were read as U+FFFD: what would be pushed is then not the file (other machines would get
  // the replacement characters, and this one would push it again at every sync, its bytes never matching the base).
  if (text.includes('\uFFFD') && hashText(text) !== hash) {
    return `line ${lineAt(text, text.indexOf('\uFFFD'))}: not UTF-8 text (a memory file is text, synced as UTF-8); save it as UTF-8, or keep it outside .memory/`
  }
  const nul = text.indexOf('\u0000')
  if (nul !== -1) return `line ${lineAt(text, nul)}: holds a NUL byte, so it is not text; remove it, or keep the file outside .memory/`
  const tooLarge = fileSizeProblem(text)
  if (tooLarge) return tooLarge.message
  // Measured here rather than learnt from the server's 413: sent, such a push is refused only once all of it went.
  if (text.length * 6 > MAX_PUSH_BYTES - PUSH_ENVELOPE_BYTES) {
    const bytes = jsonStringBytes(text) + 2 * jsonStringBytes(path) + PUSH_ENVELOPE_BYTES
    if (bytes > MAX_PUSH_BYTES) return `is ${bytes} bytes as JSON (a control character takes 6), more than the ${MAX_PUSH_BYTES} (16 MiB) one push may carry; remove the control characters, or keep it outside .memory/`
  }
  return undefined
}

/** The 1-based line of the character at `index`. */
export function lineAt(text: string, index: number): number {
  let line = 1
  for (let at = text.indexOf('\n'); at !== -1 && at < index; at = text.indexOf('\n', at + 1)) line++
  return line
}
