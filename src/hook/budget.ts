/**
 * The token budget of the session-start context. PURE.
 *
 * Tokens are estimated, not counted: one token per 4 characters (rounded up), the usual rule of thumb for
 * English and code with the tokenizers of the agents' models; no tokenizer is loaded for a hook that must start
 * in milliseconds. Text is cut at line boundaries only, section by section in the order given (pinned memory
 * first), so what is shown is always whole lines.
 */

export const DEFAULT_MAX_TOKENS = 2000
/** Below this nothing useful fits (the header and one pinned line). */
export const MIN_MAX_TOKENS = 100

/** Estimated tokens of `text`: ceil(characters / 4). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4)
}

export interface BudgetSection {
  /** Lines shown together; a section cut short keeps its first lines. */
  lines: string[]
  /** Lines that only make sense with at least one other line of the section (a heading): dropped when nothing follows them. */
  heading?: number
  /**
   * Which other lines of the section are headings (the pinned memory's `## <scope>` above its bullets): a section cut
   * short never ends on one, so that no heading is shown without a line under it.
   */
  isHeading?: (line: string) => boolean
}

export interface FittedText {
  text: string
  tokens: number
  /** Lines left out to stay within the budget. */
  omitted: number
}

/**
 * Joins the sections, in order, keeping whole lines while the estimate of the whole stays within `maxTokens`.
 * When lines are left out, `omittedLine(n)` (if given) is added at the end and its room is kept free.
 */
export function fitToBudget(sections: BudgetSection[], maxTokens: number, omittedLine?: (omitted: number) => string): FittedText {
  const total = sections.reduce((n, s) => n + s.lines.length, 0)
  const all = joinSections(sections.map((s) => s.lines))
  if (estimateTokens(all) <= maxTokens) return {text: all, tokens: estimateTokens(all), omitted: 0}
  // Reserve room for the note about what was left out (its longest form).
  const reserve = omittedLine ? omittedLine(total).length + 2 : 0
  const budgetChars = maxTokens * 4 - reserve
  const kept: string[][] = []
  let used = 0
  let shown = 0
  for (const section of sections) {
    const lines: string[] = []
    const separator = kept.length > 0 ? 2 : 0 // the blank line between sections
    for (const line of section.lines) {
      const cost = line.length + (lines.length > 0 ? 1 : separator)
      if (used + cost > budgetChars) break
      lines.push(line)
      used += cost
    }
    const heading = section.heading ?? 0
    const isHeading = (index: number) => index < heading || (section.isHeading?.(lines[index]) ?? false)
    // A heading with nothing under it says nothing: give its room back (the section's last lines, when it was cut).
    while (lines.length > 0 && isHeading(lines.length - 1)) {
      const line = lines.pop()!
      used -= line.length + (lines.length > 0 ? 1 : separator)
    }
    // Nothing left but nothing: stop here (later sections are less important).
    if (lines.length === 0) break
    kept.push(lines)
    shown += lines.length
    if (lines.length < section.lines.length) break
  }
  const omitted = total - shown
  let text = joinSections(kept)
  if (omitted > 0 && omittedLine) text = text ? `${text}\n\n${omittedLine(omitted)}` : omittedLine(omitted)
  return {text, tokens: estimateTokens(text), omitted}
}

function joinSections(sections: string[][]): string {
  return sections
    .filter((lines) => lines.length > 0)
    .map((lines) => lines.join('\n'))
    .join('\n\n')
}
