/**
 * What the page keeps in sessionStorage: the token (for this browser tab's session only, never written to disk by
 * the page) and the drafts of edits, so that a reload or a new sign-in loses nothing typed (as far as the storage holds
 * it: see saveDraft).
 */
const TOKEN_KEY = 'jarvis.token'
const DRAFT_PREFIX = 'jarvis.draft:'

export function savedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY)
}

export function saveToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token)
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY)
}

/** An edit in progress: the text typed, and the revision and text it started from (the base of a merge). */
export interface Draft {
  text: string
  baseRev: number | null
  /** Null for a new file, a file deleted on the server, or a draft kept without it (see DraftKept). */
  baseText: string | null
}

export function loadDraft(path: string): Draft | null {
  const raw = sessionStorage.getItem(DRAFT_PREFIX + path)
  if (raw === null) return null
  try {
    return JSON.parse(raw) as Draft
  } catch {
    return null
  }
}

/**
 * How much of a draft the tab keeps: all of it; its text without the text it started from (which a reload takes
 * from the server again while the file is still at the draft's revision); or nothing, when even the text does not
 * fit in the tab's storage (about five million characters for all drafts together in Chromium).
 */
export type DraftKept = 'whole' | 'text' | 'none'

/** Keeps `draft` for a reload of the tab, as much of it as fits; never throws (a full storage is the usual reason). */
export function saveDraft(path: string, draft: Draft): DraftKept {
  const key = DRAFT_PREFIX + path
  if (store(key, draft)) return 'whole'
  if (draft.baseText !== null && store(key, {...draft, baseText: null})) return 'text'
  // An older copy left in place would come back after a reload as if it were the last thing typed.
  try {
    sessionStorage.removeItem(key)
  } catch {
    // Storage refused altogether: nothing of it to remove.
  }
  return 'none'
}

function store(key: string, draft: Draft): boolean {
  try {
    sessionStorage.setItem(key, JSON.stringify(draft))
    return true
  } catch {
    return false
  }
}

export function dropDraft(path: string): void {
  sessionStorage.removeItem(DRAFT_PREFIX + path)
}
