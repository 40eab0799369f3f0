/** A resumed session: which context its conversation already holds, read from its transcript (PURE), and the lines it gets. */
import {describe, expect, it} from 'vitest'

import {fitToBudget} from '../../src/hook/budget.js'
import {sessionContextSections, unchangedContextLine} from '../../src/hook/format.js'
import {continuesConversation, keepsContextOnResume, lastContextState} from '../../src/hook/resume.js'
import {stripInjected} from '../../src/session/injected.js'

const input = {agentId: 'claude', at: '2026-12-07T10:00:00.000Z', server: 'http://127.0.0.1:8871', scopes: ['global', 'project:shop', 'agent:claude'], pinnedMd: '# Pinned memory\n\n## project:shop\n- [decision] db: Postgres 17 (claude, 2026-12-07)\n', recent: [], files: []}
const block = (state: string) => fitToBudget(sessionContextSections({...input, state}), 2000).text

/** How each agent records a hook's context in its transcript (fixtures/hook-context/). */
const claudeAttachment = (text: string) => JSON.stringify({parentUuid: 'p', isSidechain: false, attachment: {type: 'hook_additional_context', content: [text], hookName: 'SessionStart', hookEvent: 'SessionStart'}, type: 'attachment', uuid: 'u'})
const claudeHookSuccess = (text: string) => JSON.stringify({type: 'attachment', attachment: {type: 'hook_success', stdout: JSON.stringify({hookSpecificOutput: {hookEventName: 'SessionStart', additionalContext: text}})}})
const codexDeveloper = (text: string) => JSON.stringify({timestamp: 't', type: 'response_item', payload: {type: 'message', role: 'developer', content: [{type: 'input_text', text}]}})
const user = (text: string) => JSON.stringify({type: 'user', message: {role: 'user', content: text}})

describe('the context a resumed conversation holds', () => {
  it('is the memory state of the last context in its transcript, in Claude Code and Codex CLI records alike', () => {
    expect(block('0123456789ab').split('\n')[0]).toBe('[JARVIS SHARED MEMORY] What the agents of this project share, read for claude at 2026-12-07T10:00:00.000Z from http://127.0.0.1:8871 (scopes: global, project:shop, agent:claude; memory state 0123456789ab).')
    const claude = [claudeHookSuccess(block('0123456789ab')), claudeAttachment(block('0123456789ab')), user('Which Postgres?'), claudeHookSuccess(block('abcdef012345')), claudeAttachment(block('abcdef012345')), user('And now?')]
    expect(lastContextState(claude.join('\n'))).toBe('abcdef012345')
    expect(lastContextState([codexDeveloper(block('0123456789ab')), user('hi')].join('\n'))).toBe('0123456789ab')
    // The one line of a resume that found it unchanged holds the state too: it still is the conversation's.
    expect(lastContextState([claudeAttachment(block('0123456789ab')), claudeAttachment(unchangedContextLine({...input, state: '0123456789ab'}))].join('\n'))).toBe('0123456789ab')
    expect(lastContextState(user('no context here'))).toBeUndefined()
  })

  it('none after a compaction: the compacted conversation may not hold it', () => {
    expect(lastContextState([claudeAttachment(block('0123456789ab')), JSON.stringify({type: 'system', subtype: 'compact_boundary', parentUuid: null})].join('\n'))).toBeUndefined()
    expect(lastContextState([codexDeveloper(block('0123456789ab')), JSON.stringify({timestamp: 't', type: 'compacted', payload: {message: '', replacement_history: []}})].join('\n'))).toBeUndefined()
    // A context given after the compaction is held.
    expect(lastContextState([JSON.stringify({type: 'system', subtype: 'compact_boundary', parentUuid: null}), claudeAttachment(block('abcdef012345'))].join('\n'))).toBe('abcdef012345')
  })

  it('is looked for only where the agent gives it again on resume: not Gemini CLI, which drops its hook context then', () => {
    expect(['resume', 'fork', 'startup', 'clear', 'compact', undefined].map(continuesConversation)).toEqual([true, true, false, false, false, false])
    expect((['claude', 'codex', 'gemini', 'openclaw'] as const).map(keepsContextOnResume)).toEqual([true, true, false, false])
  })
})

describe('what a continued conversation is told', () => {
  it('a context given again says it replaces the earlier ones; the unchanged line says which one is current', () => {
    const again = fitToBudget(sessionContextSections({...input, state: 'abcdef012345', replaces: true}), 2000).text.split('\n')
    expect(again[1]).toBe('It replaces the earlier [JARVIS SHARED MEMORY] blocks of this conversation: where they differ, this one is current.')
    expect(block('abcdef012345')).not.toContain('replaces')
    const line = unchangedContextLine({...input, state: 'abcdef012345'})
    expect(line).toBe(
      '[JARVIS SHARED MEMORY] Read again for claude at 2026-12-07T10:00:00.000Z from http://127.0.0.1:8871 (scopes: global, project:shop, agent:claude; memory state abcdef012345): unchanged since the [JARVIS SHARED MEMORY] block of this conversation with memory state abcdef012345, which is still current; where an earlier block differs from it, it is not.',
    )
    // jarvis's own text, never taken for the person's words.
    expect(stripInjected(line)).toBe('')
  })
})
