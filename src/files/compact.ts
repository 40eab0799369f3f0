/**
 * `projects/<slug>/summary.md`: a deterministic roll-up of a project's episodes (seed 004 §10), no LLM.
 * Newest first; per episode its title, date, path, headings and outcome lines; bounded length. The episodes stay.
 */
import {readMemoryFile, scanMemory, withTreeLock, writeMemoryFile} from '../store/index.js'
import {shorten} from '../schemas/shorten.js'
import {type MemoryFile, parseMemoryFile, renderMemoryFile, tagsOf} from './front-matter.js'
import {checkSlug} from './paths.js'
import {assertWritable} from './tools.js'

export const MAX_EPISODES_IN_SUMMARY = 50
export const MAX_LINES_PER_EPISODE = 12
export const MAX_LINE_CHARS = 200
export const MAX_SUMMARY_CHARS = 16_000

export interface CompactResult {
  path: string
  /** Episodes of the project found (all of them, including any left out of the bounded summary). */
  episodes: number
  /** False when the summary already had exactly this content, or there were no episodes (nothing written). */
  changed: boolean
  /** Episode files skipped because their front matter does not parse (one message each). */
  skipped: string[]
}

const EPISODE_PATH = /^episodes\/(\d{4}-\d{2}-\d{2})\/[^/]+\.md$/
const OUTCOME = /^\s*(?:[-*]\s*)?\**outcome\**\s*:/i
const HEADING = /^#{1,6}\s+\S/

export function belongsTo(file: MemoryFile, slug: string): boolean {
  return file.frontMatter.project === slug || tagsOf(file.frontMatter).includes(slug)
}

function clip(line: string): string {
  const trimmed = line.trim()
  return shorten(trimmed, MAX_LINE_CHARS)
}

function dateOf(file: MemoryFile): string {
  return EPISODE_PATH.exec(file.path)?.[1] ?? ''
}

/** PURE: the summary text for these episodes (any order in, newest first out). */
export function renderSummary(slug: string, episodes: MemoryFile[]): string {
  const sorted = [...episodes].sort((a, b) => {
    const byDate = dateOf(b).localeCompare(dateOf(a))
    return byDate !== 0 ? byDate : a.path < b.path ? -1 : a.path > b.path ? 1 : 0
  })
  const sections: string[] = []
  let size = 0
  let shown = 0
  for (const episode of sorted.slice(0, MAX_EPISODES_IN_SUMMARY)) {
    const title = typeof episode.frontMatter.title === 'string' ? episode.frontMatter.title : episode.path
    const kept: string[] = []
    for (const raw of episode.body.split('\n')) {
      const line = raw.replace(/\r$/, '')
      if (/^#\s+Episode:/i.test(line)) continue // the title, shown above
      if (HEADING.test(line)) kept.push(`- ${clip(line.replace(/^#+\s+/, ''))}`)
      else if (OUTCOME.test(line)) kept.push(`- ${clip(line.replace(/^\s*[-*]\s*/, ''))}`)
      if (kept.length >= MAX_LINES_PER_EPISODE) break
    }
    const section = [`## ${dateOf(episode)} — ${clip(title)}`, '', `Source: ${episode.path}`, ...(kept.length ? ['', ...kept] : [])].join('\n')
    if (size + section.length > MAX_SUMMARY_CHARS) break
    sections.push(section)
    size += section.length + 2
    shown++
  }
  const left = sorted.length - shown
  const intro = `Rolled up from ${sorted.length} episode${sorted.length === 1 ? '' : 's'} by \`jarvis memory compact\`, newest first. The episodes are kept; edit them, not this file.`
  const body = [`# Project ${slug}: summary`, '', intro, '', ...sections.flatMap((s) => [s, '']), ...(left > 0 ? [`… and ${left} older episode${left === 1 ? '' : 's'}, not shown.`, ''] : [])].join('\n')
  const newest = sorted.length ? dateOf(sorted[0]) : undefined
  return renderMemoryFile({title: `${slug}: project summary`, tags: [slug, 'summary'], project: slug, kind: 'summary', episodes: sorted.length, updated: newest}, body)
}

/** Rolls the project's episodes into `projects/<slug>/summary.md` under the lock; running it twice changes nothing. */
export async function compactProject(root: string, slug: string, _options: {now?: Date} = {}): Promise<CompactResult> {
  checkSlug(slug)
  const path = `projects/${slug}/summary.md`
  return withTreeLock(root, {command: 'memory compact'}, async () => {
    const episodes: MemoryFile[] = []
    const skipped: string[] = []
    for (const [episodePath] of await scanMemory(root)) {
      if (!EPISODE_PATH.test(episodePath)) continue
      const text = await readMemoryFile(root, episodePath)
      if (text === null) continue
      let file: MemoryFile
      try {
        file = parseMemoryFile(episodePath, text)
      } catch (error) {
        skipped.push((error as Error).message)
        continue
      }
      if (belongsTo(file, slug)) episodes.push(file)
    }
    if (episodes.length === 0) return {path, episodes: 0, changed: false, skipped}
    const summary = renderSummary(slug, episodes)
    await assertWritable(path, summary)
    if ((await readMemoryFile(root, path)) === summary) return {path, episodes: episodes.length, changed: false, skipped}
    await writeMemoryFile(root, path, summary)
    return {path, episodes: episodes.length, changed: true, skipped}
  })
}
