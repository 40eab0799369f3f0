/**
 * What the page keeps in sessionStorage: the token (for this browser tab's session only, never written to disk by
 * the page) and the drafts of edits, so that a reload or a new sign-in loses nothing typed.
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

export function saveDraft(path: string, draft: Draft): void {
  sessionStorage.setItem(DRAFT_PREFIX + path, JSON.stringify(draft))
}

export function dropDraft(path: string): void {
  sessionStorage.removeItem(DRAFT_PREFIX + path)
}
