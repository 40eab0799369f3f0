/**
 * How large a memory file may be. One limit and one check for every door that writes a memory file in a tree
 * (`memory write`, `memory edit`, `memory episode`, the file tools of `jarvis mcp` and of `/mcp`) and for the sync
 * that sends it: a file a door accepted is one the sync can send. Zod-free on purpose, and imported by its own path,
 * not through the index: a sync runs it on every changed file without setting zod and the schemas up
 * (scripts/bundle.mjs, ON_USE_SCRIPTS).
 */

/**
 * The most a memory file may hold: the protocol's limit of one file's content, in UTF-8 bytes (a server refuses a
 * larger one with 413; a request far larger is cut off before its answer, which looked like a server that went away).
 */
export const MAX_FILE_BYTES = 4 * 1024 * 1024

export interface FileTooLarge {
  /** The text's size in UTF-8 bytes. */
  bytes: number
  /** Why, as every door says it after the file's name: `is N bytes, more than the 4194304 (4 MiB) …`. */
  message: string
}

/** The text's size and why it cannot be a memory file, when it is larger than MAX_FILE_BYTES; else undefined. */
export function fileSizeProblem(text: string): FileTooLarge | undefined {
  // A character is at most 3 UTF-8 bytes (4 for two UTF-16 units): only a text this long can be too large.
  if (text.length * 3 <= MAX_FILE_BYTES) return undefined
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes <= MAX_FILE_BYTES) return undefined
  return {bytes, message: `is ${bytes} bytes, more than the ${MAX_FILE_BYTES} (4 MiB) a memory file may hold; split it, or keep it outside .memory/`}
}
