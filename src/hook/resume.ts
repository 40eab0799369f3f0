/**
 * A resumed session: what context its conversation already holds. Claude Code and Codex CLI keep a hook's context in
 * the conversation (an `attachment` entry, a `developer` message) and give it to the model again on resume; a session
 * start that gave the whole context again put blocks of several ages side by side (a pinned decision superseded since
 * next to the one that replaced it). Gemini CLI does not: on resume it drops every user message that starts with
 * `<hook_context>`, the session context with it, so a resumed Gemini session always gets the whole context.
 *
 * The conversation's transcript (the hook input's `transcript_path`) tells which context it holds: the memory state of
 * its last `[JARVIS SHARED MEMORY]` header (format.ts), found in the file's text whatever the agent's format — the
 * header has no character JSON escapes. A compaction after it (Claude Code's `compact_boundary`, Codex's `compacted`)
 * may have summarised it away: then the conversation is not known to hold it.
 */
import {open} from 'node:fs/promises'

import {SESSION_CONTEXT_HEAD} from '../session/injected.js'
import type {HookAgent} from './events.js'

/** The agents whose resumed conversations hold the contexts given before (see above). */
export function keepsContextOnResume(agent: HookAgent): boolean {
  return agent === 'claude' || agent === 'codex'
}

/** The session starts of a conversation that goes on (`source` of the hook input): it holds what it was given before. */
export function continuesConversation(source: string | undefined): boolean {
  return source === 'resume' || source === 'fork'
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** A context's header line up to its memory state; nothing in it is escaped in JSON (no quote, no backslash, no newline). */
const HEADER_STATE = new RegExp(`${escapeRegExp(SESSION_CONTEXT_HEAD)}[^"\\\\\\n]{0,1000}?memory state ([0-9a-f]{12})`, 'g')
/** A compaction in the transcript: Claude Code's boundary entry, Codex's `compacted` rollout line. */
const COMPACTION = /"subtype":"compact_boundary"|"type":"compacted"/

/**
 * The memory state of the last context a transcript holds, or undefined when it holds none, or a compaction came after
 * it. PURE.
 */
export function lastContextState(transcript: string): string | undefined {
  let last: RegExpExecArray | undefined
  for (const match of transcript.matchAll(HEADER_STATE)) last = match
  if (last === undefined) return undefined
  return COMPACTION.test(transcript.slice(last.index + last[0].length)) ? undefined : last[1]
}

/** A transcript larger than this is not read for it: the session gets the whole context. */
export const MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024

/** lastContextState of the transcript at `path`; undefined when it cannot be read or is too large. */
export async function readLastContextState(path: string): Promise<string | undefined> {
  try {
    const file = await open(path, 'r')
    try {
      const {size} = await file.stat()
      if (size > MAX_TRANSCRIPT_BYTES) return undefined
      return lastContextState(await file.readFile('utf8'))
    } finally {
      await file.close()
    }
  } catch {
    return undefined
  }
}
