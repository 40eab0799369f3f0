/**
 * The file edits behind `jarvis agents install`, called without a process: whatever the user's settings hold and
 * however they are written, install keeps all of it, a second install changes nothing, uninstall gives the
 * file back byte for byte, and a malformed file is refused naming the file and line.
 */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {unifiedDiff} from '../../src/agents/diff.js'
import {putBlock, removeBlock} from '../../src/merge/marked-block.js'
import {parseSettings} from '../../src/agents/json-edit.js'
import {installInto, removeFrom} from '../../src/agents/plan.js'
import {putServerTable, removeServerTable, serverTable} from '../../src/agents/toml-edit.js'
import {undo, undoRecord} from '../../src/agents/undo.js'
import {type Change, wiringFor} from '../../src/agents/wiring.js'
import {BadInputError} from '../../src/errors.js'

const root = '/work/project'
const home = '/home/user'
const jarvis = {command: '/usr/local/bin/node', args: ['/opt/jarvis/bin/run.js']}

function changesFor(agent: 'claude' | 'gemini' | 'codex' | 'openclaw', file: string): Change[] {
  const {changes} = wiringFor({agent, scope: 'project', root, home, jarvis, gitRepo: true, instructions: 'Use the shared memory.', openclawWorkspace: true})
  return changes.filter((c) => c.file === file)
}

const claudeHooks = changesFor('claude', `${root}/.claude/settings.json`)
const geminiSettings = changesFor('gemini', `${root}/.gemini/settings.json`)

/** A user's settings: any keys but ours, maybe another MCP server and another hook. */
const userSettings = fc.record({
  own: fc.dictionary(fc.string({minLength: 1, maxLength: 8}).filter((k) => !['hooks', 'mcpServers', '__proto__'].includes(k)), fc.jsonValue({maxDepth: 2}), {maxKeys: 5}),
  server: fc.option(fc.record({command: fc.string({maxLength: 10}), args: fc.array(fc.string({maxLength: 6}), {maxLength: 3})})),
  hook: fc.option(fc.constantFrom('Stop', 'SessionStart', 'PreToolUse', 'AfterAgent')),
  indent: fc.constantFrom<string | number>(2, 4, '\t'),
})

function render(user: {own: Record<string, unknown>; server: {command: string; args: string[]} | null; hook: string | null; indent: string | number}): {text: string; value: Record<string, unknown>} {
  const value: Record<string, unknown> = {...user.own}
  if (user.server) value.mcpServers = {other: user.server}
  if (user.hook) value.hooks = {[user.hook]: [{matcher: '', hooks: [{type: 'command', command: 'echo mine'}]}]}
  const text = JSON.stringify(value, null, user.indent) + '\n'
  // What the user's file holds, read back: JSON text has no -0 from JSON.stringify (it writes 0), so the generated
  // value itself is not what a reader of the file sees.
  return {text, value: JSON.parse(text) as Record<string, unknown>}
}

describe('JSON settings (Claude Code, Gemini CLI, Codex hooks, OpenClaw)', () => {
  it('install keeps every user key, server and hook; twice is once; removal gives the bytes back', () => {
    fc.assert(
      fc.property(userSettings, fc.constantFrom(claudeHooks, geminiSettings), (user, changes) => {
        const {text, value} = render(user)
        const file = changes[0].file
        const installed = installInto(file, text, changes)!
        const parsed = parseSettings(installed, file)
        for (const [key, v] of Object.entries(value)) if (key !== 'hooks' && key !== 'mcpServers') expect(parsed[key]).toEqual(v)
        if (user.server) expect((parsed.mcpServers as Record<string, unknown>).other).toEqual(user.server)
        if (user.hook) expect(JSON.stringify((parsed.hooks as Record<string, unknown>)[user.hook])).toContain('echo mine')
        expect(Object.keys(parsed.hooks as object)).toEqual(expect.arrayContaining(['SessionStart', 'SessionEnd']))
        expect(installInto(file, installed, changes)).toBe(installed)
        expect(removeFrom(file, installed, changes)).toBe(text)
        expect(undo(undoRecord(text, installed), installed)).toBe(text)
      }),
    )
  })

  it('a one-line entry of the user stays on its line, as written', () => {
    const file = `${root}/.claude/settings.json`
    const text = '{\n  "hooks": {\n    "Stop": [\n      {"hooks": [{"type": "command", "command": "echo bye"}]}\n    ]\n  }\n}\n'
    const installed = installInto(file, text, claudeHooks)!
    expect(installed).toContain('      {"hooks": [{"type": "command", "command": "echo bye"}]},\n')
    expect(removeFrom(file, installed, claudeHooks)).toBe(text)
  })

  it('a compact one-line file stays one line and gets the entry in its style', () => {
    const file = `${root}/.mcp.json`
    const mcp = changesFor('claude', file)
    const text = '{"mcpServers":{"other":{"command":"x"}}}'
    const installed = installInto(file, text, mcp)!
    expect(installed.split('\n')).toHaveLength(1)
    expect(JSON.parse(installed).mcpServers.other).toEqual({command: 'x'})
    expect(removeFrom(file, installed, mcp)).toBe(text)
  })

  it('an older jarvis entry (another node, another path) is brought up to date, not added twice', () => {
    const file = `${root}/.claude/settings.json`
    const old = wiringFor({agent: 'claude', scope: 'project', root, home, jarvis: {command: '/old/node', args: ['/old/run.js']}, gitRepo: true, openclawWorkspace: false}).changes.filter((c) => c.file === file)
    const upgraded = installInto(file, installInto(file, null, old), claudeHooks)!
    const stops = (parseSettings(upgraded, file).hooks as Record<string, Array<{hooks: Array<{command: string}>}>>).Stop
    expect(stops).toHaveLength(1)
    expect(stops[0].hooks[0].command).toContain('/opt/jarvis/bin/run.js hook stop --agent claude')
  })

  it('a new file is created only when there is something to write, and removal of everything deletes nothing of the user', () => {
    const file = `${root}/.mcp.json`
    expect(installInto(file, null, [])).toBeNull()
    const created = installInto(file, null, changesFor('claude', file))!
    expect(JSON.parse(created).mcpServers.jarvis).toEqual({command: jarvis.command, args: [...jarvis.args, 'mcp', '--agent', 'claude', '--dir', root]})
    expect(JSON.parse(removeFrom(file, created, changesFor('claude', file))!)).toEqual({})
  })

  it('a malformed file is refused with its name and line', () => {
    const file = `${root}/.gemini/settings.json`
    const attempt = () => installInto(file, '{\n  "theme": "dark"\n  "mcpServers": {}\n}\n', geminiSettings)
    expect(attempt).toThrow(BadInputError)
    expect(attempt).toThrow(/\.gemini\/settings\.json line 3: not valid JSON \(comma expected\)/)
    expect(() => installInto(file, '[1, 2]\n', geminiSettings)).toThrow(/expected a JSON object/)
  })

  it('comments in the user file survive (Claude Code and Gemini CLI accept JSON with comments)', () => {
    const file = `${root}/.gemini/settings.json`
    const text = '{\n  // my theme\n  "theme": "dark"\n}\n'
    const installed = installInto(file, text, geminiSettings)!
    expect(installed).toContain('// my theme')
    expect(removeFrom(file, installed, geminiSettings)).toBe(text)
  })
})

describe('OpenClaw, one configuration for every project', () => {
  it('an uninstall in a tree leaves the server an install in another tree bound to that tree', () => {
    const file = `${home}/.openclaw/openclaw.json`
    const server = (tree: string) => wiringFor({agent: 'openclaw', scope: 'user', root: tree, home, jarvis, gitRepo: true, openclawWorkspace: false}).changes.filter((c) => c.file === file)
    const first = installInto(file, null, server('/work/first'))!
    const second = installInto(file, first, server('/work/second'))!
    expect(second).toContain('/work/second')
    // The first tree's uninstall: the registration is the second tree's now, and stays.
    expect(removeFrom(file, second, server('/work/first'))).toBe(second)
    expect(removeFrom(file, second, server('/work/second'))).not.toContain('jarvis')
  })
})

describe('hook groups the user shares with jarvis (Claude Code, Gemini CLI, Codex CLI)', () => {
  const files = {claude: `${root}/.claude/settings.json`, gemini: `${root}/.gemini/settings.json`, codex: `${root}/.codex/hooks.json`}
  const hooksOnly = (agent: keyof typeof files, jarvisAt = jarvis) =>
    wiringFor({agent, scope: 'project', root, home, jarvis: jarvisAt, gitRepo: true, openclawWorkspace: false}).changes.filter((c) => c.kind === 'hook')
  const mine = {type: 'command', command: 'echo my-own-hook'}
  type Groups = Record<string, Array<{matcher?: string; hooks: Array<{command: string}>}>>
  const groupsOf = (text: string, file: string) => parseSettings(text, file).hooks as Groups

  /** The file install wrote, with the user's hook and a matcher added to jarvis's SessionStart group, as the user's editor writes it. */
  function sharedGroup(agent: keyof typeof files, installed: string): string {
    const value = parseSettings(installed, files[agent]) as {hooks: Groups}
    value.hooks.SessionStart[0] = {matcher: 'startup', hooks: [...value.hooks.SessionStart[0].hooks, mine]}
    return JSON.stringify(value, null, 2) + '\n'
  }

  for (const agent of ['claude', 'gemini', 'codex'] as const) {
    const file = files[agent]
    const changes = hooksOnly(agent)

    it(`${agent}: install again changes no byte; uninstall takes out only jarvis's entry and keeps the group, its matcher and the user's hook`, () => {
      const shared = sharedGroup(agent, installInto(file, null, changes)!)
      expect(installInto(file, shared, changes)).toBe(shared)
      const removed = removeFrom(file, shared, changes)!
      expect(groupsOf(removed, file)).toEqual({SessionStart: [{matcher: 'startup', hooks: [mine]}]})
      // Installed again, jarvis's hook comes in a group of its own, after the user's.
      expect(groupsOf(installInto(file, removed, changes)!, file).SessionStart.map((g) => g.hooks.map((h) => h.command))).toEqual([['echo my-own-hook'], [expect.stringMatching(/ hook session-start --agent /)]])
    })

    it(`${agent}: an upgrade rewrites only jarvis's entry in a shared group`, () => {
      const older = hooksOnly(agent, {command: '/old/node', args: ['/old/run.js']})
      const shared = sharedGroup(agent, installInto(file, null, older)!)
      const upgraded = installInto(file, shared, changes)!
      const group = groupsOf(upgraded, file).SessionStart
      expect(group).toHaveLength(1)
      expect(group[0].matcher).toBe('startup')
      expect(group[0].hooks.map((h) => h.command)).toEqual([expect.stringContaining('/opt/jarvis/bin/run.js hook session-start --agent '), 'echo my-own-hook'])
      // Every line but jarvis's own command is as the user left it.
      const changed = upgraded.split('\n').filter((line, index) => line !== shared.split('\n')[index])
      expect(changed).toEqual(Array.from({length: 5}, () => expect.stringMatching(/^ *"command": "\/usr\/local\/bin\/node \/opt\/jarvis\/bin\/run\.js hook [a-z-]+ --agent [a-z]+",$/)))
    })
  }
})

describe('Codex config.toml', () => {
  const file = `${root}/.codex/config.toml`
  const table = serverTable('jarvis', {command: '/usr/bin/node', args: ['/opt/jarvis/bin/run.js', 'mcp', '--dir', '/a "quoted" dir']})
  const userToml = fc
    .record({
      model: fc.option(fc.constantFrom('o3', 'gpt-5')),
      comment: fc.option(fc.constantFrom('# my settings', '# keep this')),
      other: fc.option(fc.constantFrom('[mcp_servers.other]\ncommand = "npx"\nargs = ["-y", "other"]\n', '[mcp_servers.other]\ncommand = "x"\n\n[mcp_servers.other.env]\nA = "1"\n')),
      after: fc.option(fc.constantFrom('[projects."/work/project"]\ntrust_level = "trusted"\n', '[features]\nhooks = true\n')),
    })
    .map((u) => [u.comment, u.model ? `model = "${u.model}"` : null, u.other, u.after].filter((part) => part !== null).join('\n') + (u.comment || u.model || u.other || u.after ? '\n' : ''))

  it('install adds one table and keeps the rest; twice is once; removal gives the bytes back', () => {
    fc.assert(
      fc.property(userToml, (text) => {
        const installed = putServerTable(text, file, 'jarvis', table)
        expect(installed.startsWith(text)).toBe(true)
        expect(putServerTable(installed, file, 'jarvis', table)).toBe(installed)
        expect(removeServerTable(installed, file, 'jarvis')).toBe(text)
      }),
    )
  })

  it('an existing jarvis table is rewritten where it is, the tables after it untouched', () => {
    const text = '[mcp_servers.jarvis]\ncommand = "old"\n\n[mcp_servers.jarvis.env]\nX = "1"\n\n[features]\nhooks = true\n'
    const installed = putServerTable(text, file, 'jarvis', table)
    expect(installed).toBe(`${table}\n[features]\nhooks = true\n`)
    expect(removeServerTable(installed, file, 'jarvis')).toBe('[features]\nhooks = true\n')
  })

  it('a malformed file or a jarvis server in a form it cannot edit is refused with the file named', () => {
    expect(() => putServerTable('model = \n', file, 'jarvis', table)).toThrow(/config\.toml line 1/)
    expect(() => putServerTable('mcp_servers = { jarvis = { command = "x" } }\n', file, 'jarvis', table)).toThrow(/cannot edit safely/)
  })
})

describe('instruction block', () => {
  const file = `${root}/CLAUDE.md`
  const noMarkers = fc.string().filter((s) => !s.includes('<!-- jarvis:'))

  it('keeps the user text, rewrites itself in place, and goes without a trace', () => {
    fc.assert(
      fc.property(noMarkers, fc.string({minLength: 1}), fc.string({minLength: 1}), (user, first, second) => {
        const text = user === '' || user.endsWith('\n') ? user : `${user}\n`
        const once = putBlock(text, file, first)
        expect(once.startsWith(text)).toBe(true)
        expect(putBlock(once, file, first)).toBe(once)
        const upgraded = putBlock(once, file, second)
        expect(upgraded.startsWith(text)).toBe(true)
        expect(upgraded).toContain(second.trimEnd())
        expect(removeBlock(upgraded, file)).toBe(text)
      }),
    )
  })

  it('text after the block stays where it is', () => {
    const text = '# Notes\n\n<!-- jarvis:begin -->\nold\n<!-- jarvis:end -->\n\n## Mine\n'
    expect(putBlock(text, file, 'new')).toBe('# Notes\n\n<!-- jarvis:begin -->\nnew\n<!-- jarvis:end -->\n\n## Mine\n')
  })

  it('unbalanced markers are refused with the line', () => {
    expect(() => putBlock('a\nb\n<!-- jarvis:begin -->\nno end\n', file, 'x')).toThrow(/CLAUDE\.md line 3/)
  })
})

describe('dry-run diff', () => {
  it('is a unified diff with the changed lines and their context', () => {
    const before = 'a\nb\nc\nd\ne\nf\n'
    const after = 'a\nb\nc\nd\nX\ne\nf\n'
    expect(unifiedDiff('/p/f', before, after)).toBe('--- a/p/f\n+++ b/p/f\n@@ -2,5 +2,6 @@\n b\n c\n d\n+X\n e\n f\n')
    expect(unifiedDiff('/p/f', null, 'x\n')).toBe('--- /dev/null\n+++ b/p/f\n@@ -0,0 +1,1 @@\n+x\n')
    expect(unifiedDiff('/p/f', 'same\n', 'same\n')).toBe('')
  })
})
