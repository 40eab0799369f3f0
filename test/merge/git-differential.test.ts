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

function gitMerge(id: number, {base, local, remote}: Case): Promise<{conflicts: number; text: string}> {
  const file = (name: string) => join(dir, `${id}.${name}`)
  return Promise.all([writeFile(file('local'), local), writeFile(file('base'), base), writeFile(file('remote'), remote)]).then(
    () =>
      new Promise((resolve, reject) => {
        execFile('git', ['merge-file', '-p', file('local'), file('base'), file('remote')], (error, stdout) => {
          const code = error ? (error as NodeJS.ErrnoException & {code?: unknown}).code : 0
          if (typeof code !== 'number' || code < 0 || code > 127) reject(error ?? new Error('git merge-file failed'))
          else resolve({conflicts: code, text: stdout})
        })
      }),
  )
}

/** Runs every case through git, a few processes at a time, and compares each verdict and clean result with ours. */
async function compareAll(cases: Case[]): Promise<{agreeVerdict: number; agreeText: number; clean: number; disagreements: Case[]}> {
  const stats = {agreeVerdict: 0, agreeText: 0, clean: 0, disagreements: [] as Case[]}
  const width = 8
  for (let start = 0; start < cases.length; start += width) {
    const batch = cases.slice(start, start + width)
    const answers = await Promise.all(batch.map((c, k) => gitMerge(start + k, c)))
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
