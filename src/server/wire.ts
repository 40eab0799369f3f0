/**
 * The answers of the server's memory routes, as types with no imports: the server builds them (service.ts) and
 * the web dashboard reads them (web/dashboard/), one definition for both sides of our own API.
 */

export interface StatusFileEntry {
  updatedAt: string
  rev: number
  hash?: string
  deleted?: true
  author: string
  /** The text of `hash`, for a client that asked (`x-jarvis-status-texts`, with `since`): see MemoryService.status. */
  content?: string
}

export interface StatusAnswer {
  serverTime: string
  seq: number
  serverId: string
  full: boolean
  files: Record<string, StatusFileEntry>
  activeProjectId: string | null
}

export interface PullAnswer {
  files: Record<string, {content: string; updatedAt: string; hash: string; rev: number}>
  /** Tombstones among the asked paths, so a client can tell "deleted" from "never existed" (absent from both). */
  deleted: Record<string, {rev: number; updatedAt: string}>
}

export interface PushAnswer {
  files: Record<string, {rev: number; hash: string; updatedAt: string}>
  deleted: Record<string, {rev: number; updatedAt: string}>
  seq: number
}

/** What one file's write answers: its new revision. */
export interface WriteAnswer {
  path: string
  rev: number
  hash: string
  updatedAt: string
  seq: number
}

/** The file as the server holds it now, sent with a stale write's 409 so that the writer can merge against it. */
export interface CurrentFile {
  content: string | null
  rev: number
  updatedAt: string
  author: string
  deleted: boolean
}
