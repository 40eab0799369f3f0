/** The hook's input and output formats per agent, and `.nexus/hooks.log`. */
import {PassThrough} from 'node:stream'

import {afterAll, describe, expect, it} from 'vitest'

import {answerEventName, parseHookAgent, parseHookEvent} from '../../src/hook/events.js'
import {fitToBudget} from '../../src/hook/budget.js'
import {formatAnswer, omittedNote, reasonLine, recallBlock, sessionContextSections, sessionEventTexts, unchangedContextLine, unreadableNotice} from '../../src/hook/format.js'
import {parseHookInput, readHookStdin} from '../../src/hook/input.js'
import {appendHookLog, formatHookLogLine, parseHookLog, readHookFailures} from '../../src/hook/log.js'
import {runHook} from '../../src/hook/ops.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'

const dirs: string[] = []
afterAll(async () => removeAll(dirs))

describe('answers in each agent format', () => {
  it('Claude Code and Codex: hookSpecificOutput with the event that ran', () => {
    expect(JSON.parse(formatAnswer('claude', 'session-start', 'ctx'))).toEqual({hookSpecificOutput: {hookEventName: 'SessionStart', additionalContext: 'ctx'}})
    expect(JSON.parse(formatAnswer('codex', 'prompt', 'ctx'))).toEqual({hookSpecificOutput: {hookEventName: 'UserPromptSubmit', additionalContext: 'ctx'}})
    // A hook registered under another context event answers with that event's name (a wrong name is an error in Claude Code).
    expect(JSON.parse(formatAnswer('claude', 'session-start', 'ctx', 'UserPromptSubmit')).hookSpecificOutput.hookEventName).toBe('UserPromptSubmit')
    expect(answerEventName('claude', 'prompt', 'Stop')).toBe('UserPromptSubmit')
  })

  it('Gemini CLI: JSON only, BeforeAgent for a prompt; OpenClaw: prependContext', () => {
    expect(JSON.parse(formatAnswer('gemini', 'prompt', 'ctx'))).toEqual({hookSpecificOutput: {hookEventName: 'BeforeAgent', additionalContext: 'ctx'}})
    expect(JSON.parse(formatAnswer('openclaw', 'prompt', 'ctx'))).toEqual({prependContext: 'ctx'})
  })

  it('nothing to say is nothing at all', () => {
    for (const agent of ['claude', 'gemini', 'codex', 'openclaw'] as const) expect(formatAnswer(agent, 'prompt', ' \n')).toBe('')
    expect(recallBlock([])).toBe('')
  })

  it('the notice is one line that says why', () => {
    const notice = unreadableNotice('cannot reach the jarvis server at http://127.0.0.1:9: fetch failed\nto fix: start it.')
    expect(notice.split('\n')).toHaveLength(1)
    expect(notice).toBe('jarvis: the shared memory could not be read (cannot reach the jarvis server at http://127.0.0.1:9: fetch failed to fix: start it); tell the user and do not go on from a guess about what it holds.')
  })

  it('a long reason is shortened in its detail, never in what to do', () => {
    const remedy = "store gemini's own with `jarvis auth login --agent gemini --with-token` (token on stdin, kept in ~/.config/jarvis/config.json)"
    const refused = `the jarvis server at http://127.0.0.1:8787 refused the token stored for gemini in ~/.config/jarvis/config.json (tokens["http://127.0.0.1:8787"]["gemini"]) (HTTP 401: the token is not known to this server): ${remedy}`
    const line = reasonLine(refused, 240)
    expect(line.length).toBeLessThanOrEqual(240)
    expect(line).toMatch(/^the jarvis server at http:\/\/127\.0\.0\.1:8787 refused the token .*…: store gemini's own with/)
    expect(line.endsWith(`: ${remedy}`)).toBe(true)
    expect(reasonLine('cannot reach the jarvis server at http://127.0.0.1:9: fetch failed', 240)).toBe('cannot reach the jarvis server at http://127.0.0.1:9: fetch failed')
    // No clause to keep, or one that leaves the detail no room: cut at the end.
    expect(reasonLine('x'.repeat(300), 100)).toBe(`${'x'.repeat(99)}…`)
    expect(reasonLine(`short: ${'y'.repeat(300)}`, 100)).toBe(`short: ${'y'.repeat(92)}…`)
  })

  it('the session context: pinned memory first; recent events already pinned are not repeated', () => {
    const event = (key: string, content: string, extra = {}) => ({agent_id: 'gemini' as const, run_id: 'r', scope: 'global', kind: 'decision' as const, dedupe_key: key, confidence: 'high' as const, content_md: content, source: {system: 'cli' as const}, ttl_days: 0, event_id: `e-${key}`, created_at: '2026-09-01T10:00:00.000Z', deprecated: false, ...extra})
    const sections = sessionContextSections({
      agentId: 'claude',
      at: '2026-09-01T12:00:00.000Z',
      server: 'http://s',
      scopes: ['global'],
      pinnedMd: '# Pinned memory\n\n## global\n- [decision] db: Postgres only (gemini, 2026-09-01)\n',
      recent: [event('db', 'Postgres only'), event('old', 'gone', {deprecated: true}), event('cache', 'Redis for sessions', {kind: 'fact'})],
      files: [{path: 'PROJECT_MEMORY.md', summary: 'What this project is'}],
    })
    expect(sections.map((s) => s.lines[0])).toEqual([expect.stringMatching(/^\[JARVIS SHARED MEMORY\]/), '# Pinned memory', '## Recent events not pinned above', expect.stringMatching(/^## Memory files/)])
    expect(sections[2].lines.slice(1)).toEqual(['- 2026-09-01 [fact] global cache: Redis for sessions (gemini)'])
    expect(sections[3].lines[1]).toBe('- PROJECT_MEMORY.md — What this project is')
  })

  it('the session context: the newest event of a key wins; an older value of it is not listed', () => {
    const event = (key: string, content: string, at: string, extra = {}) => ({agent_id: 'gemini' as const, run_id: 'r', scope: 'global', kind: 'decision' as const, dedupe_key: key, confidence: 'high' as const, content_md: content, source: {system: 'cli' as const}, ttl_days: 0, event_id: `e-${key}-${at}`, created_at: `2026-09-0${at}T10:00:00.000Z`, deprecated: false, ...extra})
    const sections = sessionContextSections({
      agentId: 'claude',
      at: '2026-09-09T12:00:00.000Z',
      scopes: ['global', 'project:demo'],
      // `retries` pinned with its newest value; its older value is still in the recent events.
      pinnedMd: '# Pinned memory\n\n## global\n- [decision] retries: five retries (gemini, 2026-09-05)\n',
      recent: [event('retries', 'five retries', '5'), event('cache', 'Redis', '4'), event('retries', 'three retries', '2'), event('cache', 'Memcached', '1'), event('cache', 'Redis in the project', '3', {scope: 'project:demo'})],
      files: [],
    })
    expect(sections[2].lines.slice(1)).toEqual(['- 2026-09-04 [decision] global cache: Redis (gemini)', '- 2026-09-03 [decision] project:demo cache: Redis in the project (gemini)'])
  })
})

describe("jarvis's own words in what the model is given", () => {
  it('have no angle brackets, which Gemini CLI escapes before its model sees them', () => {
    const event = {agent_id: 'gemini' as const, run_id: 'r', scope: 'global', kind: 'fact' as const, dedupe_key: 'cache', confidence: 'high' as const, content_md: 'Redis for sessions', source: {system: 'cli' as const}, ttl_days: 0, event_id: 'e1', created_at: '2026-09-01T10:00:00.000Z', deprecated: false}
    const input = {agentId: 'gemini', at: '2026-09-01T12:00:00.000Z', server: 'http://s', scopes: ['global', 'project:shop', 'agent:gemini'], project: 'shop', state: '0123456789ab', replaces: true, pinnedMd: '# Pinned memory\n\n## global\n- [decision] db: Postgres only (gemini, 2026-09-01)\n', recent: [event], files: [{path: 'PROJECT_MEMORY.md', summary: 'What this project is'}]}
    const texts = [
      fitToBudget(sessionContextSections(input), 2000).text,
      fitToBudget(sessionContextSections(input), 100, omittedNote(100)).text,
      unchangedContextLine(input),
      unreadableNotice('cannot reach the jarvis server at http://127.0.0.1:9: fetch failed'),
      recallBlock([{path: 'notes/a.md', summary: 'A note'}]),
    ]
    expect(texts[1]).toMatch(/more lines? left out/)
    for (const text of texts) expect(text).not.toMatch(/[<>]/)
  })
})

describe('the session context within a small budget', () => {
  it('never ends on a heading of the pinned memory: a scope heading whose bullet does not fit goes too', () => {
    const long = `We use PostgreSQL 16 for the shop database; ${'every service reads it through pgbouncer. '.repeat(3)}`
    const pinnedMd = `# Pinned memory\n\n## global\n- [fact] tz: All times are UTC. (gemini, 2026-12-01)\n\n## project:shop\n- [decision] db-engine: ${long}(claude, 2026-12-07)\n`
    const input = {agentId: 'claude', at: '2026-12-07T10:00:00.000Z', server: 'http://127.0.0.1:8871', scopes: ['global', 'project:shop', 'agent:claude'], pinnedMd, recent: [], files: []}
    const endings = new Set<string>()
    for (let maxTokens = 100; maxTokens <= 260; maxTokens += 2) {
      const fitted = fitToBudget(sessionContextSections(input), maxTokens, omittedNote(maxTokens))
      if (fitted.omitted === 0) continue
      const lines = fitted.text.split('\n').filter((line) => line !== '')
      expect(lines.at(-1), `${maxTokens}`).toMatch(/^… \d+ more lines? left out/)
      // What the agent reads last before the note is a line of memory (or the header), never a heading alone.
      expect(lines.at(-2), `${maxTokens}`).not.toMatch(/^#/)
      endings.add(lines.at(-2)!.slice(0, 12))
    }
    // The budgets tried cut after the header and after the global bullet (where `## project:shop` used to be left).
    expect(endings).toContain('- [fact] tz:')
    expect(endings).toContain('Treat it as ')
  })
})

describe('the shared events a session is shown, for its episode', () => {
  const event = (key: string, content: string, at: string, extra = {}) => ({agent_id: 'gemini' as const, run_id: 'r', scope: 'project:shop', kind: 'decision' as const, dedupe_key: key, confidence: 'high' as const, content_md: content, source: {system: 'cli' as const}, ttl_days: 0, event_id: `e-${key}-${at}`, created_at: `2026-12-0${at}T10:00:00.000Z`, deprecated: false, ...extra})
  const input = {
    agentId: 'claude',
    at: '2026-12-07T12:00:00.000Z',
    scopes: ['global', 'project:shop'],
    pinnedMd: '# Pinned memory\n\n## global\n- [fact] tz: All times are UTC. (gemini, 2026-12-01)\n\n## project:shop\n- [decision] db: We use PostgreSQL 16 for the shop… (gemini, 2026-12-05)\n',
    recent: [event('db', 'We use PostgreSQL 16 for the shop database,\nbehind pgbouncer.', '5'), event('cache', 'Redis for the sessions cache', '4'), event('db', 'MySQL', '2')],
    files: [],
  }

  it('each pinned event (its whole text when the recent events hold it) and each recent event listed', () => {
    expect(sessionEventTexts(input)).toEqual(['All times are UTC.', 'We use PostgreSQL 16 for the shop database,\nbehind pgbouncer.', 'Redis for the sessions cache'])
  })

  it('only those the budget kept in the context', () => {
    const fitted = fitToBudget(sessionContextSections(input), 150, omittedNote(150))
    expect(fitted.text).toContain('tz: All times are UTC.')
    expect(fitted.text).not.toContain('Redis')
    expect(fitted.text).not.toContain('- [decision] db:')
    expect(sessionEventTexts(input, fitted.text)).toEqual(['All times are UTC.'])
    expect(sessionEventTexts(input, fitToBudget(sessionContextSections(input), 2000).text)).toEqual(sessionEventTexts(input))
  })
})

describe('what agents send', () => {
  it('events and agents by our names and by the agents own', () => {
    expect(['SessionStart', 'BeforeAgent', 'UserPromptSubmit', 'PreCompress', 'AfterAgent', 'SessionEnd', 'stop'].map(parseHookEvent)).toEqual(['session-start', 'prompt', 'prompt', 'pre-compact', 'stop', 'session-end', 'stop'])
    expect(parseHookEvent('teardown')).toBeUndefined()
    expect(['claude', 'Gemini', 'codex', 'chatgpt', 'openclaw', 'cursor'].map(parseHookAgent)).toEqual(['claude', 'gemini', 'codex', 'codex', 'openclaw', undefined])
  })

  it('parses every agent shape; empty stdin is an empty input; anything else is malformed', () => {
    expect(parseHookInput('{"session_id":"s","transcript_path":null,"cwd":"/p","prompt":"hi","last_assistant_message":null}')).toEqual({ok: true, input: {sessionId: 's', cwd: '/p', prompt: 'hi'}})
    expect(parseHookInput('{"sessionKey":"agent:main","workspaceDir":"/w","sessionFile":"/w/s.jsonl"}').input).toEqual({sessionId: 'agent:main', cwd: '/w', transcriptPath: '/w/s.jsonl'})
    expect(parseHookInput('')).toEqual({ok: true, input: {}})
    expect(parseHookInput('[1,2]')).toMatchObject({ok: false, reason: 'the hook input on stdin is not a JSON object'})
    expect(parseHookInput('{"cwd": 42, "session_id": "s"}')).toEqual({ok: true, input: {sessionId: 's'}})
  })

  it('does not wait for a sender that never closes stdin (it would wait past the test timeout)', async () => {
    const stream = new PassThrough()
    stream.write('{"a":1}')
    expect(await readHookStdin(stream, 200)).toBe('{"a":1}')
  })
})

describe('.nexus/hooks.log', () => {
  it('one line per failure: time, agent, event, reason; read back for jarvis status', async () => {
    const {root} = await initTree(await tempDir('jarvis-hooklog-'), {})
    dirs.push(root)
    expect(await readHookFailures(root)).toEqual([])
    await appendHookLog(root, {at: '2026-09-01T10:00:00.000Z', agent: 'claude', event: 'stop', reason: 'the tree is\nlocked'})
    await appendHookLog(root, {at: '2026-09-01T11:00:00.000Z', agent: '', event: 'session-start', reason: 'server down'})
    expect(formatHookLogLine({at: 't', agent: 'a b', event: 'e', reason: 'r'})).toBe('t a_b e r')
    expect(await readHookFailures(root)).toEqual([
      {at: '2026-09-01T10:00:00.000Z', agent: 'claude', event: 'stop', reason: 'the tree is locked'},
      {at: '2026-09-01T11:00:00.000Z', agent: '-', event: 'session-start', reason: 'server down'},
    ])
    expect(await readHookFailures(root, {since: '2026-09-01T10:30:00Z'})).toHaveLength(1)
    expect(await readHookFailures(root, {limit: 1})).toEqual([expect.objectContaining({reason: 'server down'})])
    expect(parseHookLog('garbage\n')).toEqual([])
  })

  it('runHook in process: never throws, logs into the tree it found', async () => {
    const {root} = await initTree(await tempDir('jarvis-hookop-'), {})
    dirs.push(root)
    const result = await runHook({event: 'session-start', agent: 'claude', stdin: JSON.stringify({cwd: root}), env: {}, cwd: '/'})
    expect(result.root).toBe(root)
    const context = JSON.parse(result.stdout).hookSpecificOutput.additionalContext as string
    expect(context).toMatch(/^jarvis: the shared memory could not be read \(no server to talk to.*\); tell the user/)
    expect(result.logged).toEqual([expect.stringMatching(/^the shared memory could not be read: no server to talk to/)])
    expect(await readHookFailures(root)).toHaveLength(1)
  })
})
