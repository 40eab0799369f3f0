/**
 * The session transcript a recording hook is pointed at, reduced to what an episode needs: what was asked, what
 * the agent answered, which tools it called with which input. Claude Code, Gemini CLI and Codex CLI transcripts go
 * through the session readers (src/session), loaded only when a hook needs one; a line that does not parse is skipped.
 */
import type {UniversalMessage} from '../schemas/index.js'
import type {CodexRollout} from '../session/codex-read.js'
import type {SessionTranscript} from '../session/universal.js'
import type {HookAgent} from './events.js'

export type DigestItem =
  | {kind: 'ask'; text: string; at?: string}
  | {kind: 'answer'; text: string; at?: string}
  | {kind: 'tool'; name: string; input: unknown; at?: string}

export interface TranscriptItems {
  items: DigestItem[]
  /** When the session started, if the transcript says. */
  startedAt?: string
  /** The session's working directory, if the transcript says (file paths are shown relative to it). */
  cwd?: string
}

/**
 * Reads the transcript of `agent` at `path`. Throws (BadInputError and the like) when it cannot be read at all. With
 * `root`, the messages `jarvis session sync` carried into the session from another tool (noted in the tree's `.nexus/`,
 * src/session/carried.ts) are left out: they are what the session they came from did, and its episode records them.
 */
export async function readTranscriptItems(agent: HookAgent, path: string, options: {root?: string} = {}): Promise<TranscriptItems> {
  if (agent === 'claude') {
    const {readClaudeSession} = await import('../session/claude-read.js')
    return transcriptItems(await ownTranscript(await readClaudeSession(path, {history: 'full'}), options.root))
  }
  if (agent === 'gemini') {
    const {readGeminiSession} = await import('../session/gemini-read.js')
    return transcriptItems(await ownTranscript(await readGeminiSession(path), options.root))
  }
  if (agent === 'codex') {
    const {readCodexRollout} = await import('../session/codex-read.js')
    const rollout = await readCodexRollout(path)
    return codexItems({...rollout, transcript: await ownTranscript(rollout.transcript, options.root)})
  }
  throw new Error(`no reader for ${agent} transcripts`)
}

/**
 * The transcript without the messages carried into it (noted in the tree at `root`). A start time the reader took from
 * the first message (Claude Code's files say none) is then its first own message's: a Claude Code session a sync
 * created begins with the carried messages, at their own, earlier times.
 */
async function ownTranscript(transcript: SessionTranscript, root: string | undefined): Promise<SessionTranscript> {
  if (root === undefined) return transcript
  const {readCarried, withoutCarried} = await import('../session/carried.js')
  const carried = await readCarried(root, transcript.provider, transcript.sessionId)
  if (carried.size === 0) return transcript
  const messages = withoutCarried(transcript.messages, carried)
  const fromFirst = transcript.startTime === undefined || transcript.startTime === transcript.messages[0]?.timestamp
  return {...transcript, messages, startTime: fromFirst ? (messages[0]?.timestamp ?? transcript.startTime) : transcript.startTime}
}

function transcriptItems(transcript: SessionTranscript): TranscriptItems {
  return {items: itemsOfMessages(transcript.messages), startedAt: transcript.startTime ?? transcript.messages[0]?.timestamp, cwd: transcript.projectRoot || undefined}
}

/** Universal messages (src/session) → digest items: typed prompts, assistant texts, tool calls. */
export function itemsOfMessages(messages: readonly UniversalMessage[]): DigestItem[] {
  const items: DigestItem[] = []
  for (const m of messages) {
    if (m.type === 'tool_use' && m.content.tool_use) {
      items.push({kind: 'tool', name: m.content.tool_use.tool_name, input: m.content.tool_use.tool_input, at: m.timestamp})
    } else if (m.type === 'message' && typeof m.content.text === 'string' && m.content.text.trim() !== '') {
      if (m.role === 'assistant') items.push({kind: 'answer', text: m.content.text, at: m.timestamp})
      else if (m.metadata.kind === undefined || m.metadata.kind === 'prompt') items.push({kind: 'ask', text: m.content.text, at: m.timestamp})
    }
  }
  return items
}

/** A Codex rollout as read by the session reader (src/session/codex-read.ts): its thread start and working directory too. */
export function codexItems(rollout: CodexRollout): TranscriptItems {
  const {transcript, cwd} = rollout
  return {items: itemsOfMessages(transcript.messages), startedAt: transcript.startTime ?? transcript.messages[0]?.timestamp, ...(cwd !== undefined ? {cwd} : {})}
}
