/**
 * A session's episode read back (PURE, no import): which of its lines are the session's own facts, which are made
 * from them, which name the memory it was given. The hooks write these episodes (src/hook/episode.ts); recall and the
 * prompt hook weigh them (src/ops/recall-rules.ts).
 */

/** The sections of the summary of a session's episode (the hooks write them, src/hook/episode.ts). */
export const SESSION_SECTIONS = {decisions: '## Decided', files: '## Files touched', learned: '## Learned', sources: '## Memory used'} as const
/** Sections of episodes written by earlier versions, still read: the prompts (`## Asked`) and the answer. */
export const OLD_SESSION_SECTIONS = {asks: '## Asked', learned: '## Last answer'} as const

/** An episode's body in the parts that weigh differently. */
export interface EpisodeParts {
  /** Lines above `Summary:` (the `# Episode:` title, Date, Topic, Outcome, Refs, Tags): made from the parts below. */
  header: string[]
  /** `## Asked` items of an episode of an earlier version: the prompts as typed. */
  asked: string[]
  /** `## Decided` items. */
  decided: string[]
  /** `## Files touched` items (`` `path` (verbs) ``). */
  files: string[]
  /** The lines of `## Learned` (or `## Last answer`). */
  learned: string[]
  /** `## Memory used` items: the memory files the session was given or read. */
  sources: string[]
  /** Every other line of the summary (an episode written with `memory episode`: its free text). */
  other: string[]
  /** True when the body has a section of a session's episode: the hooks wrote it, and its header is made from it. */
  session: boolean
}

/** Splits an episode's body (the text after its front matter) into its parts. PURE. */
export function episodeParts(body: string): EpisodeParts {
  const parts: EpisodeParts = {header: [], asked: [], decided: [], files: [], learned: [], sources: [], other: [], session: false}
  const lines = body.replace(/\r\n/g, '\n').split('\n')
  const summaryAt = lines.findIndex((line) => line.trim() === 'Summary:')
  const headings: Record<string, Exclude<keyof EpisodeParts, 'session' | 'header' | 'other'>> = {
    [SESSION_SECTIONS.decisions]: 'decided',
    [SESSION_SECTIONS.files]: 'files',
    [SESSION_SECTIONS.learned]: 'learned',
    [SESSION_SECTIONS.sources]: 'sources',
    [OLD_SESSION_SECTIONS.asks]: 'asked',
    [OLD_SESSION_SECTIONS.learned]: 'learned',
  }
  let section: Exclude<keyof EpisodeParts, 'session'> = 'other'
  for (const [i, raw] of lines.entries()) {
    const line = raw.trimEnd()
    if (line.trim() === '') continue
    if (i <= summaryAt || (summaryAt < 0 && /^(?:# Episode:|Date:|Topic:|Outcome:|Refs:|Tags:)/.test(line))) {
      if (i < summaryAt || summaryAt < 0) parts.header.push(line)
      continue
    }
    if (line.startsWith('## ')) {
      const known: (typeof headings)[string] | undefined = headings[line]
      parts.session ||= known !== undefined
      section = known ?? 'other'
      if (known === undefined) parts.other.push(line)
      continue
    }
    const item = line.startsWith('- ') ? line.slice(2) : line
    if (section === 'learned' || section === 'other') parts[section].push(line.trim())
    else if (section === 'sources') parts.sources.push(item.trim())
    else parts[section].push(item)
  }
  return parts
}
