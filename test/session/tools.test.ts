import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {TOOL_MAPPINGS, toolFromProvider, toolToProvider} from '../../src/session/index.js'

describe('tool mapping', () => {
  it('renames the built-in tools and their keys both ways', () => {
    expect(toolFromProvider('gemini', 'run_shell_command', {command: 'ls', is_background: true, dir_path: 'src'})).toEqual({
      name: 'Bash',
      input: {command: 'ls', run_in_background: true, dir_path: 'src'},
      mapped: true,
    })
    expect(toolToProvider('gemini', 'Grep', {pattern: 'x', path: 'src', glob: '*.ts', output_mode: 'content'})).toEqual({
      name: 'grep_search',
      input: {pattern: 'x', dir_path: 'src', include_pattern: '*.ts', output_mode: 'content'},
      mapped: true,
    })
    expect(toolToProvider('gemini', 'TodoWrite', {todos: [{content: 'a', status: 'pending', activeForm: 'doing a'}]})).toEqual({
      name: 'write_todos',
      input: {todos: [{description: 'a', status: 'pending', activeForm: 'doing a'}]},
      mapped: true,
    })
    expect(toolToProvider('gemini', 'Edit', {file_path: 'f', old_string: 'a', new_string: 'b', replace_all: true}).input).toEqual({
      file_path: 'f',
      old_string: 'a',
      new_string: 'b',
      allow_multiple: true,
    })
  })

  it('carries an unknown tool as a generic call, name and input untouched', () => {
    const input = {server: 'x', nested: {a: [1, 2]}}
    expect(toolToProvider('gemini', 'mcp__github__create_issue', input)).toEqual({name: 'mcp__github__create_issue', input, mapped: false})
    expect(toolFromProvider('gemini', 'save_memory', input)).toEqual({name: 'save_memory', input, mapped: false})
    expect(toolFromProvider('gemini', 'search_file_content', {pattern: 'x'})).toMatchObject({name: 'search_file_content', mapped: false})
    expect(toolToProvider('claude', 'Bash', input)).toEqual({name: 'Bash', input, mapped: true})
  })

  it('falls back to a generic call when a renamed key would collide', () => {
    const input = {pattern: '*', path: 'a', dir_path: 'b'}
    expect(toolToProvider('gemini', 'Glob', input)).toEqual({name: 'Glob', input, mapped: false})
    expect(toolFromProvider('gemini', 'glob', input)).toEqual({name: 'glob', input, mapped: false})
  })

  const key = fc.constantFrom('command', 'path', 'dir_path', 'glob', 'include_pattern', 'replace_all', 'allow_multiple', 'content', 'description', 'todos', 'x', 'is_background', 'run_in_background')
  const input = fc.oneof(
    fc.dictionary(key, fc.oneof(fc.string(), fc.boolean(), fc.array(fc.dictionary(key, fc.string()), {maxLength: 3}))),
    fc.string(),
    fc.constant(undefined),
  )
  const names = [...TOOL_MAPPINGS.flatMap((m) => [m.claude, m.gemini]), 'mcp__x__y', 'save_memory']

  it('is a bijection: Gemini → universal → Gemini and universal → Gemini → universal give back name and input', () => {
    fc.assert(
      fc.property(fc.constantFrom(...names), input, (name, value) => {
        const universal = toolFromProvider('gemini', name, value)
        const back = toolToProvider('gemini', universal.name, universal.input)
        // A Gemini call spelled with a Claude name is the one case outside the bijection (documented).
        if (TOOL_MAPPINGS.some((m) => m.claude === name)) return
        expect(back).toMatchObject({name, input: value})
      }),
    )
    fc.assert(
      fc.property(fc.constantFrom(...names), input, (name, value) => {
        const gemini = toolToProvider('gemini', name, value)
        if (TOOL_MAPPINGS.some((m) => m.gemini === name)) return
        expect(toolFromProvider('gemini', gemini.name, gemini.input)).toMatchObject({name, input: value})
      }),
    )
  })
})
