/**
 * LoCoMo (Maharana et al., ACL 2024; snap-research/locomo, `data/locomo10.zip`): 10 long conversations between two
 * people, each in up to 35 sessions, and questions whose evidence names the dialogue turns that answer them.
 * Read from the zip as published (never copied into the repo); each session becomes one memory file of its
 * conversation's tree, and a question counts as found when one of its evidence sessions is among the top k.
 * Categories 1–4 (multi-hop, temporal, open-domain inference, single-hop); 5 (adversarial: no answer in the
 * conversation) is left out, as the published session-level figures do.
 */
import {existsSync, readFileSync} from 'node:fs'
import {resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

import {strFromU8, unzipSync} from 'fflate'

import type {Corpus, Question} from './quality-measure.js'

const repoRoot = fileURLToPath(new URL('..', import.meta.url))

/** Where the bench looks for the dataset: JARVIS_BENCH_LOCOMO, else `../shared/data/locomo10.zip` beside the repo. */
export function locomoPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.JARVIS_BENCH_LOCOMO ? resolve(env.JARVIS_BENCH_LOCOMO) : resolve(repoRoot, '..', 'shared', 'data', 'locomo10.zip')
}

export const LOCOMO_CATEGORIES: Record<string, string> = {'1': 'multi-hop', '2': 'temporal', '3': 'inference (open-domain)', '4': 'single-hop'}

interface Turn {
  speaker: string
  text: string
  blip_caption?: string
}

interface Conversation {
  speaker_a: string
  speaker_b: string
  [key: string]: unknown
}

interface Sample {
  sample_id?: string
  conversation?: Conversation
  qa: Array<{question: string; evidence?: string[]; category: number}>
  [key: string]: unknown
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december']

/** "1:56 pm on 8 May, 2023" → "2023-05-08" (undefined when it does not read so). */
export function locomoDate(value: unknown): string | undefined {
  const match = typeof value === 'string' ? /(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/.exec(value) : null
  if (!match) return undefined
  const month = MONTHS.indexOf(match[2].toLowerCase())
  if (month < 0) return undefined
  return `${match[3]}-${String(month + 1).padStart(2, '0')}-${match[1].padStart(2, '0')}`
}

/** The sessions an evidence list names: "D3:14" → 3; tolerates the dataset's few malformed entries ("D:11:26", "D8:6; D9:17"). */
export function evidenceSessions(evidence: readonly string[]): number[] {
  const sessions = new Set<number>()
  for (const entry of evidence) for (const match of entry.matchAll(/D:?(\d+):\d+/g)) sessions.add(Number(match[1]))
  return [...sessions]
}

export function sessionPath(n: number): string {
  return `sessions/session-${String(n).padStart(2, '0')}.md`
}

/** One session as a memory file: its date in the front matter and the title, then one line per turn (a shared photo by its caption). */
export function sessionFile(speakers: [string, string], n: number, dateTime: unknown, turns: Turn[]): string {
  const date = locomoDate(dateTime)
  const title = `${speakers[0]} and ${speakers[1]}, session ${n}`
  return [
    '---',
    `title: ${title}`,
    ...(date ? [`date: ${date}`] : []),
    '---',
    `# ${title}${typeof dateTime === 'string' ? ` (${dateTime})` : ''}`,
    '',
    ...turns.map((t) => `${t.speaker}: ${t.text}${t.blip_caption ? ` [shares ${t.blip_caption}]` : ''}`),
    '',
  ].join('\n')
}

/** One conversation: its sessions as files, its answerable questions (categories 1–4 with evidence in a session it has). */
export function conversationCorpus(sample: Sample): Corpus {
  const conversation = (sample.conversation ?? sample) as Conversation
  const speakers: [string, string] = [conversation.speaker_a, conversation.speaker_b]
  const files = new Map<string, string>()
  for (const key of Object.keys(conversation)) {
    const match = /^session_(\d+)$/.exec(key)
    const turns = conversation[key]
    if (!match || !Array.isArray(turns) || turns.length === 0) continue
    const n = Number(match[1])
    files.set(sessionPath(n), sessionFile(speakers, n, conversation[`session_${n}_date_time`], turns as Turn[]))
  }
  const questions: Question[] = []
  for (const qa of sample.qa) {
    if (!(qa.category >= 1 && qa.category <= 4)) continue
    const answers = evidenceSessions(qa.evidence ?? []).map(sessionPath).filter((path) => files.has(path))
    if (answers.length > 0) questions.push({query: String(qa.question), answers, group: String(qa.category)})
  }
  return {files, questions}
}

export interface Locomo {
  path: string
  corpora: Corpus[]
}

/**
 * The dataset's conversations, from the zip as published: every `*.json` in it that holds conversations (the
 * release's `locomo10_v2/<id>.json`, one sample each, or a `locomo10.json` array). Undefined when the file is absent.
 */
export function loadLocomo(path = locomoPath()): Locomo | undefined {
  if (!existsSync(path)) return undefined
  const entries = unzipSync(readFileSync(path), {filter: (file) => file.name.endsWith('.json')})
  const samples: Sample[] = []
  for (const name of Object.keys(entries).sort((a, b) => a.localeCompare(b, 'en', {numeric: true}))) {
    const value = JSON.parse(strFromU8(entries[name])) as Sample | Sample[]
    for (const sample of Array.isArray(value) ? value : [value]) if (sample && Array.isArray(sample.qa)) samples.push(sample)
  }
  return {path, corpora: samples.map(conversationCorpus)}
}
