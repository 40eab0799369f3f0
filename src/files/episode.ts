/** `episodes/YYYY-MM-DD/<slug>.md` in the episode template of seed 004 §8; the same episode twice is one file. */
import {BadInputError} from '../errors.js'
import {readMemoryFile, withTreeLock, writeMemoryFile} from '../store/index.js'
import {renderMemoryFile} from './front-matter.js'
import {checkSlug, slugify} from './paths.js'
import {assertWritable, type WriteResult} from './tools.js'

export interface EpisodeInput {
  title: string
  tags?: string[]
  /** The summary (Markdown). */
  body: string
  now: Date
  /** Project slug, recorded as front matter `project` (what `memory compact --project` rolls up). */
  project?: string
  topic?: string
  outcome?: string
  refs?: string
  /** ISO time the episode last changed, recorded as front matter `updated` (the newest episodes are ordered by it). */
  updated?: string
}

/** How many `-N` variants of one slug a day may hold before we give up (a runaway script, not a person). */
const MAX_VARIANTS = 1000

/** The UTC calendar date of `now`: `YYYY-MM-DD`. */
export function episodeDate(now: Date): string {
  return now.toISOString().slice(0, 10)
}

/** The file text of an episode: front matter plus the seed's template. Depends on the date, never on the time (but `updated`). */
export function renderEpisode(input: EpisodeInput): string {
  const title = input.title.trim()
  if (!title) throw new BadInputError('an episode needs a --title')
  const date = episodeDate(input.now)
  const tags = [...new Set((input.tags ?? []).map((tag) => tag.trim()).filter(Boolean))]
  if (input.project !== undefined) checkSlug(input.project)
  const lines = [`# Episode: ${title}`, `Date: ${date}`]
  if (input.topic) lines.push(`Topic: ${input.topic.trim()}`)
  if (input.outcome) lines.push(`Outcome: ${input.outcome.trim()}`)
  if (input.refs) lines.push(`Refs: ${input.refs.trim()}`)
  lines.push(`Tags: ${JSON.stringify(tags)}`, '', 'Summary:')
  const summary = input.body.replace(/\r\n/g, '\n').trim()
  if (summary) lines.push(summary)
  return renderMemoryFile({title, tags, date, project: input.project, kind: 'episode', updated: input.updated}, lines.join('\n') + '\n')
}

/**
 * Writes the episode under the lock. The same content already there (same date, slug and text) → unchanged;
 * the slug taken by another episode that day → `<slug>-2.md`, `-3`, … (or the variant that already holds it).
 */
export async function writeEpisode(root: string, input: EpisodeInput): Promise<WriteResult> {
  const text = renderEpisode(input)
  const dir = `episodes/${episodeDate(input.now)}`
  const slug = slugify(input.title)
  await assertWritable(`${dir}/${slug}.md`, text)
  return withTreeLock(root, {command: 'memory episode'}, async () => {
    for (let n = 1; n <= MAX_VARIANTS; n++) {
      const path = `${dir}/${n === 1 ? slug : `${slug}-${n}`}.md`
      const existing = await readMemoryFile(root, path)
      if (existing === text) return {path, created: false, changed: false}
      if (existing !== null) continue
      await writeMemoryFile(root, path, text)
      return {path, created: true, changed: true}
    }
    throw new BadInputError(`${dir} already holds ${MAX_VARIANTS} episodes named ${slug}; choose another title`, {dir, slug})
  })
}
