/**
 * `projects/<slug>/summary.md`: a deterministic roll-up of a project's episodes (seed 004 §10), no LLM.
 * Newest first; per episode its title, date, path, headings and outcome lines; bounded length. The episodes stay, and
 * so does anything a person wrote in the summary outside the roll-up's block.
 */
import {readMemoryFile, scanMemory, withTreeLock, writeMemoryFile} from '../store/index.js'
import {shorten} from '../schemas/shorten.js'
import {blockSpan, hasBlock, putBlock} from '../merge/marked-block.js'
import {type MemoryFile, memoryLabel, parseMemoryFile, renderMemoryFile, tagsOf} from './front-matter.js'
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

/** One episode's section of the roll-up: its title and date, its path, its headings and outcome lines. */
function renderSection(episode: MemoryFile): string {
  const title = typeof episode.frontMatter.title === 'string' ? episode.frontMatter.title : episode.path
  const kept: string[] = []
  for (const raw of episode.body.split('\n')) {
    const line = raw.replace(/\r$/, '')
    if (/^#\s+Episode:/i.test(line)) continue // the title, shown above
    if (HEADING.test(line)) kept.push(`- ${clip(line.replace(/^#+\s+/, ''))}`)
    else if (OUTCOME.test(line)) kept.push(`- ${clip(line.replace(/^\s*[-*]\s*/, ''))}`)
    if (kept.length >= MAX_LINES_PER_EPISODE) break
  }
  return [`## ${dateOf(episode)} — ${clip(title)}`, '', `Source: ${episode.path}`, ...(kept.length ? ['', ...kept] : [])].join('\n')
}

function newestFirst(episodes: MemoryFile[]): MemoryFile[] {
  return [...episodes].sort((a, b) => {
    const byDate = dateOf(b).localeCompare(dateOf(a))
    return byDate !== 0 ? byDate : a.path < b.path ? -1 : a.path > b.path ? 1 : 0
  })
}

/** PURE: what compact writes between the markers: the bounded roll-up of these episodes, newest first. */
function rollUp(sorted: MemoryFile[]): string {
  const sections: string[] = []
  let size = 0
  for (const episode of sorted.slice(0, MAX_EPISODES_IN_SUMMARY)) {
    const section = renderSection(episode)
    if (size + section.length > MAX_SUMMARY_CHARS) break
    sections.push(section)
    size += section.length + 2
  }
  const left = sorted.length - sections.length
  const intro = `Rolled up from ${sorted.length} episode${sorted.length === 1 ? '' : 's'} by \`jarvis memory compact\`, newest first. The episodes are kept; edit them, not this block: text outside it is yours, and compact keeps it.`
  return [intro, ...sections, ...(left > 0 ? [`… and ${left} older episode${left === 1 ? '' : 's'}, not shown.`] : [])].join('\n\n')
}

/** The intro compact wrote: before the block (`not this file`), or inside it, for a summary whose markers were lost. */
const LEGACY_INTRO = /^Rolled up from \d+ episodes? by `jarvis memory compact`, newest first\. The episodes are kept; edit them, not this (?:file\.|block: text outside it is yours, and compact keeps it\.)$/
const LEGACY_LEFT = /^… and \d+ older episodes?, not shown\.$/

/**
 * PURE: what a person wrote in a summary compact wrote without markers (before it kept its roll-up between them, or
 * after someone removed them): the text less the intro and every section exactly as compact would write it today
 * for the same episode, its heading kept. A section someone edited, or whose episode changed since, stays: it cannot
 * be told from a person's text; lines a person added after a section stay, the section before them goes.
 */
function personsText(body: string, episodes: MemoryFile[]): string {
  const byPath = new Map(episodes.map((episode) => [episode.path, episode]))
  const kept: string[] = []
  for (const chunk of body.replace(/\r\n/g, '\n').split(/\n(?=## )/)) {
    const lines = chunk.split('\n').filter((line) => !LEGACY_INTRO.test(line) && !LEGACY_LEFT.test(line))
    const source = chunk.startsWith('## ') ? /^Source: (\S+)$/m.exec(chunk)?.[1] : undefined
    const section = source && byPath.has(source) ? renderSection(byPath.get(source)!) : undefined
    const text = lines.join('\n')
    if (section !== undefined && (text.trimEnd() === section || text.startsWith(`${section}\n\n`))) kept.push(text.slice(section.length))
    else kept.push(text)
  }
  return kept.join('\n').replace(/\n{3,}/g, '\n\n').trim()
}

/**
 * PURE: the summary file for these episodes (any order in, newest first out). The roll-up is jarvis's block
 * (`<!-- jarvis:begin -->` … `<!-- jarvis:end -->`), rewritten in place; whatever else the file holds — its front matter,
 * a person's notes above or below the block — is kept as it is.
 */
export function renderSummary(slug: string, episodes: MemoryFile[], existing?: MemoryFile): string {
  const sorted = newestFirst(episodes)
  const newest = sorted.length ? dateOf(sorted[0]) : undefined
  const counts = {episodes: sorted.length, updated: newest}
  const fresh = {title: `${slug}: project summary`, tags: [slug, 'summary'], project: slug, kind: 'summary', ...counts}
  const block = rollUp(sorted)
  if (!existing) return renderMemoryFile(fresh, putBlock(`# Project ${slug}: summary\n`, memoryLabel(`projects/${slug}/summary.md`), block))
  const label = memoryLabel(existing.path)
  // Markers that are not one pair are named by their line in the whole file, nothing changed.
  blockSpan(existing.text, label)
  const legacy = existing.frontMatter.kind === 'summary' && !hasBlock(existing.body)
  const person = legacy ? personsText(existing.body, episodes) : existing.body
  const body = putBlock(person === '' ? `# Project ${slug}: summary\n` : legacy ? `${person}\n` : person, label, block)
  return renderMemoryFile({...fresh, ...existing.frontMatter, ...counts}, body)
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
    const before = await readMemoryFile(root, path)
    // A summary whose front matter does not parse is a person's to fix: compact never writes over what it cannot read.
    const summary = renderSummary(slug, episodes, before === null ? undefined : parseMemoryFile(path, before))
    await assertWritable(path, summary)
    if (before === summary) return {path, episodes: episodes.length, changed: false, skipped}
    await writeMemoryFile(root, path, summary)
    return {path, episodes: episodes.length, changed: true, skipped}
  })
}
