/**
 * `npm run bench`: every benchmark side by side with its peers, in one run, written to
 * docs/BENCHMARKS.md with the machine and the command. Speed is measured here, never asserted in tests.
 * `npm run bench -- quality search` runs only the sections named and replaces only theirs in docs/BENCHMARKS.md.
 */
import {execFileSync} from 'node:child_process'
import {existsSync} from 'node:fs'
import {readFile, writeFile} from 'node:fs/promises'
import {cpus, totalmem, type as osType, release} from 'node:os'
import {fileURLToPath} from 'node:url'

import {benchEvents} from './events.js'
import {benchMcp} from './mcp.js'
import {benchLoad} from './load.js'
import {benchMerge} from './merge.js'
import {benchNotify} from './notify.js'
import {benchQuality} from './quality.js'
import {runProcess} from './process.js'
import {benchSearch} from './search.js'
import {benchSession} from './session.js'
import {benchStartup} from './startup.js'
import {median} from './stats.js'
import {benchSync} from './sync.js'
import {benchTeam} from './team.js'
import {benchUser} from './user.js'
import {benchWatch} from './watch.js'
import type {BenchSection} from './stats.js'

if (!existsSync(fileURLToPath(new URL('../dist/commands/sync.js', import.meta.url)))) {
  process.stderr.write('npm run bench measures the built CLI: run `npm run build` first\n')
  process.exit(2)
}

// A call in a tree of 500+ files starts a watch of it on demand, which would make every later "cold" row of a tree
// warm. The rows measure a process doing its own work (or a `sync --watch` / `jarvis mcp` the bench starts itself).
process.env.JARVIS_WATCHER ??= 'off'

const all = [['startup', benchStartup], ['merge', benchMerge], ['sync', () => benchSync()], ['watch', benchWatch], ['session', benchSession], ['search', benchSearch], ['user', benchUser], ['events', benchEvents], ['mcp', benchMcp], ['team', () => benchTeam()], ['load', benchLoad], ['notify', benchNotify], ['quality', benchQuality]] as const
const asked = process.argv.slice(2)
const unknown = asked.filter((name) => !all.some(([known]) => known === name))
if (unknown.length > 0) {
  process.stderr.write(`unknown bench section ${unknown.join(', ')}: use ${all.map(([name]) => name).join(', ')}, or none for all\n`)
  process.exit(2)
}
const sections: BenchSection[] = []
for (const [name, bench] of all) {
  if (asked.length > 0 && !asked.includes(name)) continue
  process.stderr.write(`bench: ${name}…\n`)
  sections.push(await bench())
}

/**
 * Node reads the certificates NODE_EXTRA_CA_CERTS names when it starts, whatever the program: where it is set, every
 * jarvis process pays it (as `node -e 0` does) and git does not. Said beside the machine, measured alternated.
 */
async function extraCertsCost(): Promise<string | undefined> {
  if (!process.env.NODE_EXTRA_CA_CERTS) return undefined
  const {NODE_EXTRA_CA_CERTS: _set, ...without} = process.env
  const runs: number[][] = [[], []]
  for (let run = 0; run < 15; run++) {
    runs[0].push((await runProcess(process.execPath, ['-e', '0'], {cwd: process.cwd()})).ms)
    runs[1].push((await runProcess(process.execPath, ['-e', '0'], {cwd: process.cwd(), env: without})).ms)
  }
  const [withCerts, withoutCerts] = runs.map(median)
  return `- NODE_EXTRA_CA_CERTS is set here: every Node process reads it at start, \`node -e 0\` ${withCerts.toFixed(0)} ms with it, ${withoutCerts.toFixed(0)} ms without (medians of 15, alternated); git does not pay it`
}

const benchmarksFile = fileURLToPath(new URL('../docs/BENCHMARKS.md', import.meta.url))

/** `## title` to the next `## `: the sections of a BENCHMARKS.md. */
function splitSections(text: string): {head: string; sections: Array<{title: string; body: string}>} {
  const [head, ...rest] = text.split(/^## /m)
  return {head, sections: rest.map((part) => ({title: part.slice(0, part.indexOf('\n')).trim(), body: part}))}
}

if (asked.length > 0) {
  // Only some sections: each replaces the section of the same title (or is added), the others are kept as measured.
  const stamp = `_Measured ${new Date().toISOString().slice(0, 10)} alone, with \`npm run bench -- ${asked.join(' ')}\`._`
  const current = splitSections(await readFile(benchmarksFile, 'utf8').catch(() => '# Benchmarks\n\n'))
  for (const section of sections) {
    const body = `${section.title}\n\n${stamp}\n\n${section.markdown}\n\n`
    const at = current.sections.findIndex((s) => s.title === section.title)
    if (at >= 0) current.sections[at].body = body
    else current.sections.push({title: section.title, body})
  }
  const text = current.head + current.sections.map((s) => `## ${s.body.trimEnd()}\n\n`).join('')
  await writeFile(benchmarksFile, text.trimEnd() + '\n')
  process.stdout.write(sections.map((s) => `## ${s.title}\n\n${s.markdown}\n`).join('\n'))
  process.exit(0)
}

const certs = await extraCertsCost()
const git = execFileSync('git', ['--version'], {encoding: 'utf8'}).trim()
const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${osType()} ${release()}, Node ${process.version}, ${git}`
const text = [
  '# Benchmarks',
  '',
  'Written by `npm run bench` (after `npm run build`); numbers are medians unless a row says otherwise.',
  '',
  `- Machine: ${machine}`,
  ...(certs === undefined ? [] : [certs]),
  `- Date: ${new Date().toISOString().slice(0, 10)}`,
  '- Command: `npm run build && npm run bench`',
  '',
  ...sections.flatMap((section) => [`## ${section.title}`, '', section.markdown, '']),
].join('\n')
await writeFile(benchmarksFile, text)
process.stdout.write(text)
