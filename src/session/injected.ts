/**
 * Context that an agent or jarvis put into a prompt, not words the person typed. PURE.
 *
 * What each agent does with a hook's `additionalContext` (checked against the installed programs, Claude Code
 * 2.1.197, Gemini CLI 0.61.0, Codex CLI 0.169.0; docs/hooks.md "What the agents record of a hook's context"):
 *
 * - Gemini CLI wraps it in `<hook_context>…</hook_context>`: the session-start context goes in front of the first
 *   prompt (`<hook_context>…</hook_context>\n\n<prompt>`, also in the `prompt` of its BeforeAgent and AfterAgent
 *   hooks), the prompt hook's context is a part of its own after the prompt. Both are in the transcript's user message.
 * - Claude Code keeps it out of the user's message: the transcript holds it in `attachment` entries, and the model
 *   gets it as a system block; its own notes inside a user message are `<system-reminder>…</system-reminder>`.
 * - Codex CLI keeps it out too: a `developer` message in the rollout.
 *
 * jarvis's own blocks are recognised wherever they end up (an agent that prepends them without a wrapper, a person
 * who pastes one): the `[MEMORY CONTEXT]` block of `jarvis recall` and of the prompt hook, the session context that
 * starts with `[JARVIS SHARED MEMORY]`, and the one line a session starts with when the memory cannot be read.
 */

/** Wrappers an agent puts around injected text: everything between the tags is not the person's. */
const WRAPPERS = ['hook_context', 'system-reminder'] as const

/** The first line of jarvis's session context (src/hook/format.ts `sessionContextSections`). */
export const SESSION_CONTEXT_HEAD = '[JARVIS SHARED MEMORY]'
/** The first line of the recall block (`jarvis recall`, the prompt hook). */
export const RECALL_BLOCK_HEAD = '[MEMORY CONTEXT]'
/** The notice a session starts with when the memory cannot be read (src/hook/format.ts `unreadableNotice`). */
export const UNREADABLE_NOTICE = /^jarvis: the shared memory could not be read \(.*\); tell the user and do not go on from a guess about what it holds\.$/

/** What the text held besides the person's words. */
export interface CleanText {
  /** The person's words: `text` without any injected block, blank runs folded, trimmed. */
  text: string
  /** The injected blocks taken out, each as it was (wrappers removed; an empty wrapper is an empty block). */
  injected: string[]
}

/** The lines of a `[MEMORY CONTEXT]` block from `start` (its head line): `- path` / `  Summary: “…”` pairs, or the no-match line. */
function recallBlockEnd(lines: string[], start: number): number {
  let i = start + 1
  while (i < lines.length) {
    if (/^- \S/.test(lines[i]) && /^ {2}Summary: /.test(lines[i + 1] ?? '')) i += 2
    else if (lines[i].trim() === '(no memory file matches)') i += 1
    else break
  }
  return i
}

/** The text without the wrapped blocks of WRAPPERS (a wrapper left open runs to the end of the text). */
function withoutWrapped(text: string, injected: string[]): string {
  let out = text
  for (const tag of WRAPPERS) {
    const open = `<${tag}>`
    const close = `</${tag}>`
    let from = out.indexOf(open)
    while (from >= 0) {
      const end = out.indexOf(close, from + open.length)
      const stop = end < 0 ? out.length : end + close.length
      injected.push(out.slice(from + open.length, end < 0 ? out.length : end).trim())
      out = `${out.slice(0, from)}\n${out.slice(stop)}`
      from = out.indexOf(open, from)
    }
  }
  return out
}

/** Takes injected context out of a prompt or a transcript's user message. */
export function cleanPromptText(raw: string): CleanText {
  const injected: string[] = []
  const text = withoutWrapped(raw.replace(/\r\n/g, '\n'), injected)
  const lines = text.split('\n')
  const kept: string[] = []
  for (let i = 0; i < lines.length; ) {
    const line = lines[i]
    if (line.trim() === RECALL_BLOCK_HEAD) {
      const end = recallBlockEnd(lines, i)
      injected.push(lines.slice(i, end).join('\n'))
      i = end
    } else if (line.startsWith(SESSION_CONTEXT_HEAD) && kept.every((l) => l.trim() === '')) {
      // jarvis's session context without a wrapper: its sections are free Markdown with no end mark, so a text that
      // starts with it is taken as context to its end (never the person's words, at the risk of losing a prompt).
      injected.push(lines.slice(i).join('\n'))
      i = lines.length
    } else if (UNREADABLE_NOTICE.test(line.trim())) {
      injected.push(line.trim())
      i += 1
    } else {
      kept.push(line)
      i += 1
    }
  }
  return {
    text: kept
      .join('\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim(),
    injected,
  }
}

/** The person's words of a prompt: cleanPromptText's `text`, or `raw` untouched when nothing was injected. */
export function stripInjected(raw: string): string {
  const clean = cleanPromptText(raw)
  return clean.injected.length === 0 ? raw : clean.text
}

/** The memory files a `[MEMORY CONTEXT]` block named, in its order. */
export function recallBlockPaths(block: string): string[] {
  const lines = block.replace(/\r\n/g, '\n').split('\n')
  const paths: string[] = []
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== RECALL_BLOCK_HEAD) continue
    const end = recallBlockEnd(lines, i)
    for (let j = i + 1; j < end; j++) if (lines[j].startsWith('- ')) paths.push(lines[j].slice(2).trim())
    i = end - 1
  }
  return paths
}
