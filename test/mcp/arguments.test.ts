/** The design's argument names of the file tools and the earlier ones give one call (src/mcp/arguments.ts). */
import {describe, expect, it} from 'vitest'

import {editCallOf, grepQueryOf} from '../../src/mcp/arguments.js'
import {editInput, grepInput} from '../../src/mcp/schemas.js'

function refusal(call: () => unknown): {exit: number; message: string; data: Record<string, unknown>} {
  try {
    call()
  } catch (error) {
    return error as {exit: number; message: string; data: Record<string, unknown>}
  }
  throw new Error('expected a refusal')
}

describe('memory_grep(pattern, prefix?, limit?)', () => {
  it('takes pattern, or regex as its alias; both only when they agree', () => {
    expect(grepQueryOf(grepInput.parse({pattern: 'a+', prefix: 'notes/', limit: 3}))).toEqual({pattern: 'a+', prefix: 'notes/', limit: 3})
    expect(grepQueryOf(grepInput.parse({regex: 'a+', ignore_case: true}))).toEqual({pattern: 'a+', ignore_case: true})
    expect(grepQueryOf(grepInput.parse({pattern: 'a+', regex: 'a+'}))).toEqual({pattern: 'a+'})
    expect(refusal(() => grepQueryOf(grepInput.parse({pattern: 'a', regex: 'b'})))).toMatchObject({exit: 2, data: {field: 'pattern'}})
    const missing = refusal(() => grepQueryOf(grepInput.parse({prefix: 'notes/'})))
    expect(missing).toMatchObject({exit: 2, data: {field: 'pattern'}})
    expect(missing.message).toMatch(/pattern is required/)
  })
})

describe('memory_edit(path, patch)', () => {
  it('takes a diff or {replace, with} as patch, or replace and with beside path', () => {
    const diff = '@@ -1 +1 @@\n-a\n+b\n'
    expect(editCallOf(editInput.parse({path: 'a.md', patch: diff}))).toEqual({path: 'a.md', edit: {diff}})
    expect(editCallOf(editInput.parse({path: 'a.md', patch: {replace: 'a', with: 'b'}, base_hash: 'f'.repeat(64)}))).toEqual({path: 'a.md', edit: {replace: 'a', with: 'b'}, base_hash: 'f'.repeat(64)})
    expect(editCallOf(editInput.parse({path: 'a.md', replace: 'a', with: ''}))).toEqual({path: 'a.md', edit: {replace: 'a', with: ''}})
  })

  it('refuses no change, half a replacement, or a patch beside replace (exit 2), naming what to give', () => {
    expect(refusal(() => editCallOf(editInput.parse({path: 'a.md'})))).toMatchObject({exit: 2, data: {field: 'patch'}})
    expect(refusal(() => editCallOf(editInput.parse({path: 'a.md', replace: 'a'})))).toMatchObject({exit: 2, data: {field: 'with'}})
    expect(refusal(() => editCallOf(editInput.parse({path: 'a.md', with: 'b'})))).toMatchObject({exit: 2, data: {field: 'replace'}})
    expect(refusal(() => editCallOf(editInput.parse({path: 'a.md', patch: 'x', replace: 'a', with: 'b'}))).message).toMatch(/not both/)
  })
})
