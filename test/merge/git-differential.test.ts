import {execFile, execFileSync} from 'node:child_process'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import fc from 'fast-check'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {mergeText} from '../../src/merge/markdown.js'
import {applyEdits, distinctBase, edits, smallLines, toText} from './arbitraries.js'

/**
 * Our Markdown rule against an independent diff3: `git merge-file -p local base remote`, whose
 * exit code is the number of conflicts. Cases come from fixed seeds, so a failure reproduces.
 */

type Case = {base: string; local: string; remote: string}

const hasGit = (() => {
  try {
    execFileSync('git', ['--version'], {stdio: 'ignore'})
    return true
  } catch {
    return false
  }
})()

let dir = ''
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jarvis-diff3-'))
})
afterAll(async () => {
  if (dir) await rm(dir, {recursive: true, force: true})
})

/**
 * Runs `git merge-file -p local base remote` for each case of a batch, from one shell: a Node spawn per case cost
 * 2,500 processes of Node's own and left the test at the mercy of a loaded machine (a minute and more at load 7).
 * Each answer is the merged text, then a line with a marker of this run and git's exit code.
 */
async function gitMergeAll(first: number, batch: Case[]): Promise<Array<{conflicts: number; text: string}>> {
  const file = (id: number, name: string) => join(dir, `${id}.${name}`)
  await Promise.all(batch.flatMap((c, k) => [writeFile(file(first + k, 'local'), c.local), writeFile(file(first + k, 'base'), c.base), writeFile(file(first + k, 'remote'), c.remote)]))
  const marker = `@@jarvis-merge-${process.pid}-${first}@@`
  // git's exit code is its number of conflicts; the marker starts a line of its own after git's text.
  const script = `for id in "$@"; do git merge-file -p "$id.local" "$id.base" "$id.remote"; code=$?; printf '\\n%s %d\\n' '${marker}' "$code"; done`
  const ids = batch.map((_, k) => join(dir, String(first + k)))
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile('sh', ['-c', script, 'sh', ...ids], {maxBuffer: 64 * 1024 * 1024}, (error, out) => (error ? reject(error) : resolve(out))),
  )
  const parts = stdout.split(`\n${marker} `)
  if (parts.length !== batch.length + 1) throw new Error(`git merge-file answered ${parts.length - 1} of ${batch.length} cases`)
  return batch.map((_, k) => {
    const text = k === 0 ? parts[0] : parts[k].slice(parts[k].indexOf('\n') + 1)
    const conflicts = Number.parseInt(parts[k + 1], 10)
    if (!(conflicts >= 0 && conflicts <= 127)) throw new Error(`git merge-file failed on case ${first + k}`)
    return {conflicts, text}
  })
}

/** Runs every case through git, in batches of one shell each, and compares each verdict and clean result with ours. */
async function compareAll(cases: Case[]): Promise<{agreeVerdict: number; agreeText: number; clean: number; disagreements: Case[]}> {
  const stats = {agreeVerdict: 0, agreeText: 0, clean: 0, disagreements: [] as Case[]}
  const width = 250
  for (let start = 0; start < cases.length; start += width) {
    const batch = cases.slice(start, start + width)
    const answers = await gitMergeAll(start, batch)
    batch.forEach((c, k) => {
      const ours = mergeText(c.base, c.local, c.remote)
      const git = answers[k]
      if ((ours.conflicts.length > 0) !== git.conflicts > 0) return void stats.disagreements.push(c)
      stats.agreeVerdict++
      if (git.conflicts > 0) return
      stats.clean++
      if (ours.merged === git.text) stats.agreeText++
      else stats.disagreements.push(c)
    })
  }
  return stats
}

function report(label: string, total: number, stats: Awaited<ReturnType<typeof compareAll>>): void {
  console.info(`git merge-file, ${label}: verdict ${stats.agreeVerdict}/${total}, clean text ${stats.agreeText}/${stats.clean}`)
}

function casesFrom(base: fc.Arbitrary<string[]>, seed: number, count: number): Case[] {
  const arbitrary = fc.tuple(base, edits(), edits(), fc.boolean(), fc.boolean(), fc.boolean(), fc.integer({min: 0, max: 9})).map(
    ([lines, mine, theirs, nlBase, nlLocal, nlRemote, same]) => {
      const local = applyEdits(lines, mine)
      // One case in ten makes the identical change on both sides.
      const remote = same === 0 ? local : applyEdits(lines, theirs)
      return {base: toText(lines, nlBase), local: toText(local, nlLocal), remote: toText(remote, nlRemote)}
    },
  )
  return fc.sample(arbitrary, {numRuns: count, seed})
}

describe.skipIf(!hasGit)('Markdown merge vs git merge-file', () => {
  it('agrees exactly on 2,500 cases whose alignment is unambiguous (distinct base lines, small edit alphabet)', async () => {
    const cases = casesFrom(distinctBase(12), 20_250_101, 2500)
    const stats = await compareAll(cases)
    report('unambiguous', cases.length, stats)
    expect(stats.disagreements.slice(0, 3)).toEqual([])
    expect(stats.clean).toBeGreaterThan(500)
    expect(stats.clean).toBeLessThan(2000)
  })

  it('agrees on at least 99% of 2,500 cases built from a four-line alphabet, where alignments are ambiguous', async () => {
    const cases = casesFrom(smallLines(12), 20_250_102, 2500)
    const stats = await compareAll(cases)
    report('ambiguous', cases.length, stats)
    // Both diffs are minimal; they can pick different but equally short alignments, and then the
    // merges differ in where a change sits. docs/decisions/diff3-engine.md has the figures.
    expect(stats.agreeVerdict / cases.length).toBeGreaterThanOrEqual(0.99)
    expect(stats.agreeText / stats.clean).toBeGreaterThanOrEqual(0.99)
  })
})
