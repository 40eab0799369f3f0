import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {BadInputError} from '../../src/errors.js'
import {mergeFileText, ruleForPath} from '../../src/merge/index.js'
import {RUNS, smallLines, toText} from './arbitraries.js'

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`
const line = (role: string, text: string) => JSON.stringify({id: `${role}-${text}`, role, type: 'message', content: {text}})

describe('ruleForPath', () => {
  it.each([
    ['active_project.json', 'active-project'],
    ['context_map.json', 'context-map'],
    ['jarvis/gemini.json', 'worker-memory'],
    ['jarvis/claude-code.JSON', 'worker-memory'],
    ['jarvis/archive/old.json', 'json'],
    ['projects.json', 'json'],
    ['projects/alpha/active_project.json', 'json'],
    ['PROJECT_MEMORY.md', 'markdown'],
    ['episodes/2025-05-01/standup.md', 'markdown'],
    ['sessions/abc.jsonl', 'transcript'],
    ['notes.jsonl', 'transcript'],
    ['notes.txt', 'text'],
    ['Makefile', 'text'],
  ])('%s → %s', (path, rule) => {
    expect(ruleForPath(path)).toBe(rule)
  })
})

describe('mergeFileText', () => {
  it('short-cuts when the sides agree or one side did not change', () => {
    expect(mergeFileText('projects.json', '{}', 'not json at all', 'not json at all')).toEqual({merged: 'not json at all', conflicts: [], backup: null, rule: 'json'})
    expect(mergeFileText('a.md', 'base', 'base', 'remote')).toMatchObject({merged: 'remote', backup: null})
    expect(mergeFileText('a.md', 'base', 'local', 'base')).toMatchObject({merged: 'local', backup: null})
  })

  it('writes merged JSON pretty-printed with a final newline, and keeps a side’s own bytes when the merge equals it', () => {
    const base = json({a: 1, b: 1})
    expect(mergeFileText('projects.json', base, json({a: 2, b: 1}), json({a: 1, b: 2})).merged).toBe(json({a: 2, b: 2}))
    const compact = '{"a":1,"b":2}'
    expect(mergeFileText('projects.json', base, json({a: 1, b: 2}), compact).merged).toBe(compact)
  })

  it('backs up the local text when a JSON key conflicts', () => {
    const local = json({alpha: {status: 'active'}})
    const result = mergeFileText('projects.json', json({alpha: {status: 'paused'}}), local, json({alpha: {status: 'archived'}}))
    expect(result).toEqual({
      merged: json({alpha: {status: 'archived'}}),
      conflicts: [{kind: 'key', at: 'alpha.status', winner: 'remote', local: 'active', remote: 'archived'}],
      backup: local,
      rule: 'json',
    })
  })

  it('applies last-writer-wins to the active project and the context map, without a backup', () => {
    const base = json({projectId: 'a', switchedAt: '2025-05-01T10:00:00Z', switchedBy: 'system'})
    const local = json({projectId: 'b', switchedAt: '2025-05-01T11:00:00Z', switchedBy: 'user-cli'})
    const remote = json({projectId: 'c', switchedAt: '2025-05-01T10:30:00Z', switchedBy: 'user-web'})
    expect(mergeFileText('active_project.json', base, local, remote)).toMatchObject({merged: local, backup: null, conflicts: [{kind: 'lww', winner: 'local'}]})
    const map = (timestamp: string, pages: string[]) => json({timestamp, structure: {pages}})
    expect(mergeFileText('context_map.json', map('2025-05-01T10:00:00Z', []), map('2025-05-01T09:00:00Z', ['a']), map('2025-05-01T12:00:00Z', ['b'])).merged).toBe(
      map('2025-05-01T12:00:00Z', ['b']),
    )
  })

  it('merges worker memory by its field rules', () => {
    const base = {workerId: 'gemini', lastActive: '2025-05-01T10:00:00Z', totalTasks: 1, recentTasks: []}
    const task = (taskId: string, minute: number) => ({taskId, timestamp: `2025-05-01T10:${minute}:00Z`})
    const local = {...base, lastActive: '2025-05-01T10:30:00Z', totalTasks: 2, recentTasks: [task('t1', 30)]}
    const remote = {...base, lastActive: '2025-05-01T10:20:00Z', totalTasks: 3, recentTasks: [task('t2', 20)]}
    const result = mergeFileText('jarvis/gemini.json', json(base), json(local), json(remote))
    expect(JSON.parse(result.merged)).toEqual({...local, recentTasks: [task('t1', 30), task('t2', 20)]})
    expect(result).toMatchObject({rule: 'worker-memory', backup: null, conflicts: [{kind: 'lww', at: 'totalTasks', winner: 'local'}]})
  })

  it('lets the remote Markdown win a conflict and backs up the local text', () => {
    expect(mergeFileText('PROJECT_MEMORY.md', 'a\nb\n', 'a\nlocal\n', 'a\nremote\n')).toMatchObject({merged: 'a\nremote\n', backup: 'a\nlocal\n', rule: 'markdown'})
    expect(mergeFileText('notes.txt', 'a\nb\nc\n', 'A\nb\nc\n', 'a\nb\nC\n')).toEqual({merged: 'A\nb\nC\n', conflicts: [], backup: null, rule: 'text'})
  })

  it('merges transcripts line by line, ignoring the base and blank lines', () => {
    const shared = `${line('user', 'hi')}\n${line('assistant', 'hello')}\n`
    const result = mergeFileText('sessions/s1.jsonl', null, `${shared}${line('user', 'continue')}\n`, `${shared}\r\n${line('user', 'bye')}\r\n`)
    expect(result).toEqual({merged: `${shared}${line('user', 'continue')}\n${line('user', 'bye')}\n`, conflicts: [], backup: null, rule: 'transcript'})
  })

  it('refuses unparsable input with an error naming the file, the side and the line', () => {
    expect(() => mergeFileText('projects.json', '{}', '{"a": 1', '{"b": 2}')).toThrow(BadInputError)
    expect(() => mergeFileText('projects.json', '{}', '{"a": 1}', '{b: 2}')).toThrow(/^projects\.json: the remote copy is not valid JSON/)
    expect(() => mergeFileText('s.jsonl', null, `${line('user', 'a')}\n{oops\n`, line('user', 'b'))).toThrow(/^s\.jsonl: line 2 of the local copy is not valid JSON/)
    expect(() => mergeFileText('s.jsonl', null, line('user', 'a'), '[1, 2]')).toThrow(/line 1 of the remote copy is not a message object/)
  })

  it('reads a damaged JSON base as no base (two-way) instead of failing', () => {
    expect(mergeFileText('projects.json', '{broken', json({a: 1}), json({b: 2})).merged).toBe(json({b: 2, a: 1}))
  })

  it('merge(x, x, x) = x for every rule', () => {
    const value = fc.dictionary(fc.constantFrom('projectId', 'timestamp', 'switchedAt', 'x'), fc.constantFrom('a', '2025-01-01T00:00:00Z', 1))
    const cases = fc.oneof(
      fc.tuple(fc.constantFrom('active_project.json', 'context_map.json', 'jarvis/a.json', 'projects.json'), value.map(json)),
      fc.tuple(fc.constantFrom('a.md', 'a.txt'), smallLines().map((lines) => toText(lines))),
      fc.tuple(fc.constant('sessions/a.jsonl'), fc.array(fc.constantFrom('hi', 'ok')).map((texts) => texts.map((t) => `${line('user', t)}\n`).join(''))),
    )
    fc.assert(
      fc.property(cases, ([path, text]) => {
        expect(mergeFileText(path, text, text, text).merged).toBe(text)
        expect(mergeFileText(path, null, text, text).merged).toBe(text)
      }),
      RUNS,
    )
  })
})
