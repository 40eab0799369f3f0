/**
 * Injected context is not the person's words: the rule (pure), then each agent's own transcript and hook input as
 * the real CLIs wrote them (fixtures/hook-context: Claude Code 2.1.197, Gemini CLI 0.61.0 and Codex CLI 0.169.0 run
 * with `jarvis agents install`'s hooks against a stand-in model), read as jarvis reads them.
 */
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {describe, expect, it} from 'vitest'

import {recallBlock, sessionContextSections, unreadableNotice} from '../../src/hook/format.js'
import {fitToBudget} from '../../src/hook/budget.js'
import {parseHookInput} from '../../src/hook/input.js'
import {readClaudeSession} from '../../src/session/claude-read.js'
import {readCodexRollout} from '../../src/session/codex-read.js'
import {readGeminiSession} from '../../src/session/gemini-read.js'
import {cleanPromptText, stripInjected} from '../../src/session/injected.js'
import type {SessionTranscript} from '../../src/session/universal.js'

const FIXTURES = new URL('../../fixtures/hook-context/', import.meta.url).pathname
const QUESTION = 'How are the Stripe webhooks verified?'
/** Text only jarvis or an agent writes: none of it may be taken for the person's words. */
const INJECTED = /\[MEMORY CONTEXT\]|\[JARVIS SHARED MEMORY\]|hook_context|system-reminder|shared memory could not be read/

interface RecordedHook {
  event: string
  stdin: Record<string, unknown>
  stdout: string
}

const hooksOf = (file: string): RecordedHook[] =>
  readFileSync(join(FIXTURES, file), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RecordedHook)

/** The person's messages of a transcript as the session readers give them. */
const prompts = (t: SessionTranscript) => t.messages.filter((m) => m.role === 'user' && m.type === 'message' && (m.metadata.kind ?? 'prompt') === 'prompt').map((m) => m.content.text)

describe('the rule', () => {
  it('takes out Gemini’s <hook_context> before and after the prompt, and Claude Code’s <system-reminder>', () => {
    expect(cleanPromptText(`<hook_context>[JARVIS SHARED MEMORY] read for gemini\n# Pinned memory</hook_context>\n\n${QUESTION}<hook_context>[MEMORY CONTEXT]\n- notes/billing.md\n  Summary: “x”</hook_context>`)).toEqual({
      text: QUESTION,
      injected: ['[JARVIS SHARED MEMORY] read for gemini\n# Pinned memory', '[MEMORY CONTEXT]\n- notes/billing.md\n  Summary: “x”'],
    })
    expect(stripInjected(`<system-reminder>\nThe file was changed.\n</system-reminder>\nFix the test`)).toBe('Fix the test')
    expect(stripInjected('<hook_context>never closed… \nso the rest is context')).toBe('')
  })

  it('recognises jarvis’s own blocks without a wrapper: the recall block, the session context, the unreadable notice', () => {
    const block = recallBlock([
      {path: 'notes/billing.md', summary: 'Billing — Stripe webhooks are verified with the signing secret'},
      {path: 'runbooks/deploy.md', summary: 'Deploys go out on Tuesdays'},
    ])
    expect(stripInjected(`${block}\n\n${QUESTION}`)).toBe(QUESTION)
    expect(stripInjected(`${QUESTION}\n${block}`)).toBe(QUESTION)
    expect(stripInjected('[MEMORY CONTEXT]\n(no memory file matches)\nok')).toBe('ok')
    const notice = unreadableNotice('cannot reach the jarvis server at http://127.0.0.1:9: fetch failed')
    expect(stripInjected(`${notice}\n\n${QUESTION}`)).toBe(QUESTION)
    const context = fitToBudget(sessionContextSections({agentId: 'gemini', at: '2026-09-01T09:00:00.000Z', scopes: ['global'], pinnedMd: '# Pinned memory\n_Nothing pinned yet._', recent: [], files: [{path: 'notes/billing.md', summary: 'Billing'}]}), 2000).text
    expect(stripInjected(context)).toBe('')
  })

  it('leaves the person’s words alone, byte for byte, when nothing was injected', () => {
    for (const text of [QUESTION, '  spaces around  \n', 'a [MEMORY CONTEXT] in the middle of a line', 'jarvis: the shared memory could not be read, said the log', '- notes/billing.md\n  Summary: “x”']) {
      expect(stripInjected(text)).toBe(text)
    }
  })
})

describe('Claude Code 2.1.197: hook context lives in attachment entries, never in the person’s message', () => {
  const hooks = hooksOf('claude/hooks.jsonl')

  it('the transcript gives the question alone', async () => {
    const transcript = await readClaudeSession(join(FIXTURES, 'claude/transcript.jsonl'), {history: 'full'})
    expect(prompts(transcript)).toEqual([QUESTION])
    // What the hooks answered is in the file (as attachments), so the check above means something.
    const raw = readFileSync(join(FIXTURES, 'claude/transcript.jsonl'), 'utf8')
    expect(raw).toContain('"type":"hook_additional_context"')
    expect(raw).toContain('[MEMORY CONTEXT]')
    expect(JSON.stringify(transcript.messages.map((m) => m.content.text ?? ''))).not.toMatch(INJECTED)
  })

  it('the prompt hook’s input carries the question alone', () => {
    const prompt = hooks.find((h) => h.event === 'prompt')!
    expect(prompt.stdin.hook_event_name).toBe('UserPromptSubmit')
    expect(stripInjected(parseHookInput(JSON.stringify(prompt.stdin)).input.prompt!)).toBe(QUESTION)
  })
})

describe('Gemini CLI 0.61.0: <hook_context> in front of the first prompt and after each prompt', () => {
  it('the transcript gives the question without the session context or the recall (it was dropped whole before)', async () => {
    for (const file of ['gemini/transcript.jsonl', 'gemini/transcript-unreadable.jsonl']) {
      const raw = readFileSync(join(FIXTURES, file), 'utf8')
      expect(raw).toContain('<hook_context>')
      const transcript = await readGeminiSession(join(FIXTURES, file))
      expect(prompts(transcript), file).toEqual([QUESTION])
      expect(JSON.stringify(transcript.messages.map((m) => m.content.text ?? '')), file).not.toMatch(INJECTED)
    }
  })

  it('BeforeAgent’s and AfterAgent’s `prompt` lose the session context (the readable one and the unreadable notice)', () => {
    for (const file of ['gemini/hooks.jsonl', 'gemini/hooks-unreadable.jsonl']) {
      const withPrompt = hooksOf(file).filter((h) => typeof h.stdin.prompt === 'string')
      expect(withPrompt.map((h) => h.stdin.hook_event_name)).toEqual(['BeforeAgent', 'AfterAgent'])
      for (const hook of withPrompt) {
        expect(hook.stdin.prompt, file).toMatch(/^<hook_context>/)
        expect(stripInjected(parseHookInput(JSON.stringify(hook.stdin)).input.prompt!), file).toBe(QUESTION)
      }
    }
  })
})

describe('Codex CLI 0.169.0: hook context is a developer message', () => {
  it('the rollout gives the question alone; its developer messages (which hold the context) are not the person’s', async () => {
    const raw = readFileSync(join(FIXTURES, 'codex/rollout.jsonl'), 'utf8')
    expect(raw).toMatch(/"role":"developer","content":\[\{"type":"input_text","text":"\[JARVIS SHARED MEMORY\]/)
    expect(raw).toMatch(/"role":"developer","content":\[\{"type":"input_text","text":"\[MEMORY CONTEXT\]/)
    const {transcript} = await readCodexRollout(join(FIXTURES, 'codex/rollout.jsonl'))
    expect(prompts(transcript)).toEqual([QUESTION])
    expect(JSON.stringify(transcript.messages.map((m) => m.content.text ?? ''))).not.toMatch(INJECTED)
  })

  it('UserPromptSubmit’s `prompt` is the question alone', () => {
    const prompt = hooksOf('codex/hooks.jsonl').find((h) => h.event === 'prompt')!
    expect(prompt.stdin.hook_event_name).toBe('UserPromptSubmit')
    expect(stripInjected(parseHookInput(JSON.stringify(prompt.stdin)).input.prompt!)).toBe(QUESTION)
  })
})
