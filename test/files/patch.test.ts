/** The change of a memory-file edit: a replacement, or a unified diff as a model writes it (src/files/patch.ts). */
import {createTwoFilesPatch} from 'diff'
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {applyEdit, recountHunks} from '../../src/files/patch.js'

const TEXT = ['---', 'title: Plan', '---', '# Plan', '', 'line one', 'line two', 'line three', 'line four', ''].join('\n')

async function refusal(promise: Promise<unknown>): Promise<{exit: number; message: string; data: Record<string, unknown>}> {
  try {
    await promise
  } catch (error) {
    return error as {exit: number; message: string; data: Record<string, unknown>}
  }
  throw new Error('expected a refusal')
}

describe('applyEdit', () => {
  it('replaces the one occurrence of a text; none or several is refused (exit 2) saying how many', async () => {
    expect(await applyEdit('notes/plan.md', TEXT, {replace: 'line two', with: 'line 2'})).toBe(TEXT.replace('line two', 'line 2'))
    expect(await refusal(applyEdit('notes/plan.md', TEXT, {replace: 'line', with: 'x'}))).toMatchObject({exit: 2, data: {matches: 4}})
    expect(await refusal(applyEdit('notes/plan.md', TEXT, {replace: 'absent', with: 'x'}))).toMatchObject({exit: 2, data: {matches: 0}})
  })

  it('applies a diff as `diff -u` and `git diff` print it, and one with no file names', async () => {
    const wanted = TEXT.replace('line two', 'line 2').replace('line four', 'line four\nline five')
    const gnu = createTwoFilesPatch('a/notes/plan.md', 'b/notes/plan.md', TEXT, wanted)
    expect(await applyEdit('notes/plan.md', TEXT, {diff: gnu})).toBe(wanted)
    const git = ['diff --git a/notes/plan.md b/notes/plan.md', 'index 1234567..89abcde 100644', ...gnu.split('\n').filter((line) => !line.startsWith('====') && !line.startsWith('Index:'))].join('\n')
    expect(await applyEdit('notes/plan.md', TEXT, {diff: git})).toBe(wanted)
    const bare = gnu.slice(gnu.indexOf('@@'))
    expect(await applyEdit('notes/plan.md', TEXT, {diff: bare})).toBe(wanted)
  })

  it('places a hunk whose header names the wrong line, and counts again line counts that do not add up', async () => {
    const wrongLine = ['@@ -40,3 +40,3 @@', ' line one', '-line two', '+line 2', ' line three', ''].join('\n')
    expect(await applyEdit('notes/plan.md', TEXT, {diff: wrongLine})).toBe(TEXT.replace('line two', 'line 2'))
    const wrongCounts = ['@@ -6,2 +6,7 @@', ' line one', '-line two', '+line 2', ' line three', ''].join('\n')
    expect(await applyEdit('notes/plan.md', TEXT, {diff: wrongCounts})).toBe(TEXT.replace('line two', 'line 2'))
    const bareHeader = ['--- a/plan.md', '+++ b/plan.md', '@@', ' line one', '-line two', '+line 2', ''].join('\n')
    expect(await applyEdit('notes/plan.md', TEXT, {diff: bareHeader})).toBe(TEXT.replace('line two', 'line 2'))
    // A blank line in a hunk is an empty context line (editors strip the trailing space).
    expect(recountHunks(['@@ -1 +1 @@', ' # Plan', '', '-line one', '+line 1'].join('\n'))).toBe(['@@ -1,3 +1,3 @@', ' # Plan', ' ', '-line one', '+line 1', ''].join('\n'))
  })

  it('keeps the line endings of a CRLF file, and a missing last newline', async () => {
    const crlf = TEXT.replace(/\n/g, '\r\n')
    const diff = createTwoFilesPatch('plan.md', 'plan.md', TEXT, TEXT.replace('line two', 'line 2'))
    expect(await applyEdit('notes/plan.md', crlf, {diff})).toBe(crlf.replace('line two', 'line 2'))
    const unterminated = 'first\nlast'
    expect(await applyEdit('notes/plan.md', unterminated, {diff: createTwoFilesPatch('x', 'x', unterminated, 'first\nlast, changed')})).toBe('first\nlast, changed')
  })

  it('refuses, naming the file (exit 2): a text that is not a diff, a diff of two files, a diff that matches nowhere', async () => {
    const notADiff = await refusal(applyEdit('notes/plan.md', TEXT, {diff: 'make line two shorter'}))
    expect(notADiff).toMatchObject({exit: 2, data: {field: 'patch'}})
    expect(notADiff.message).toMatch(/^\.memory\/notes\/plan\.md: the patch has no hunk/)
    const two = createTwoFilesPatch('a.md', 'a.md', 'a\n', 'b\n') + createTwoFilesPatch('b.md', 'b.md', 'a\n', 'b\n')
    expect((await refusal(applyEdit('notes/plan.md', TEXT, {diff: two}))).message).toMatch(/changes 2 files/)
    const stale = createTwoFilesPatch('plan.md', 'plan.md', TEXT.replace('line two', 'line deux'), TEXT.replace('line two', 'line 2'))
    const refused = await refusal(applyEdit('notes/plan.md', TEXT, {diff: stale}))
    expect(refused.exit).toBe(2)
    expect(refused.message).toMatch(/the patch does not apply: its hunk at line \d+ does not match/)
  })

  it('refuses a diff built to be costly after bounded work: a hunk that fits nowhere in a file of a million short lines', async () => {
    const huge = 'a\n'.repeat(1_000_000)
    const diff = ['@@ -1,2 +1,2 @@', ' a', '-b', '+c', ''].join('\n')
    expect((await refusal(applyEdit('notes/huge.md', huge, {diff}))).message).toMatch(/does not apply/)
  })

  it('a diff of any two texts applies to the first and gives the second, its header lines and counts made wrong too', async () => {
    // Distinct lines: each hunk fits in one place only, wherever its header says it is.
    const lines = fc.uniqueArray(fc.stringMatching(/^[a-z ]{1,12}$/), {minLength: 1, maxLength: 30})
    await fc.assert(
      fc.asyncProperty(lines, lines, fc.integer({min: -20, max: 20}), fc.boolean(), async (from, to, shift, miscount) => {
        const before = `${from.join('\n')}\n`
        const after = `${to.join('\n')}\n`
        if (before === after) return
        const diff = createTwoFilesPatch('a', 'b', before, after)
        expect(await applyEdit('x.md', before, {diff})).toBe(after)
        const skewed = diff.replace(/^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@/gm, (_all, a: string, b: string | undefined, c: string, d: string | undefined) => {
          const at = (n: string) => Math.max(1, Number(n) + shift)
          return miscount ? `@@ -${at(a)},99 +${at(c)},1 @@` : `@@ -${at(a)}${b ?? ''} +${at(c)}${d ?? ''} @@`
        })
        expect(await applyEdit('x.md', before, {diff: skewed})).toBe(after)
      }),
      {numRuns: 200},
    )
  })
})
