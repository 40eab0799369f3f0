/**
 * Tool names and inputs between Claude Code, Gemini CLI and Codex CLI (research §5.2). The universal vocabulary is
 * Claude Code's: a Gemini or Codex call is renamed on read and renamed back on write. Only key renames are applied, and only
 * where both tools mean the same thing, so the mapping is a bijection: Gemini → Claude → Gemini gives back the
 * same name and input. A key without a counterpart stays as it is (the call is history, never re-run), and a
 * tool without a counterpart is carried as a generic call: its own name, its input untouched.
 */
import type {Provider} from '../schemas/index.js'
import {isRecord} from '../schemas/plain-fields.js'

export interface MappedTool {
  name: string
  input: unknown
  /** False when the tool had no counterpart (or its input could not be renamed safely) and was carried as is. */
  mapped: boolean
}

interface ToolMapping {
  claude: string
  gemini: string
  /** [Claude key, Gemini key] renames at the top level of the input. */
  keys: Array<[string, string]>
  /** [array key, [Claude item key, Gemini item key][]]: renames inside the objects of an array. */
  items?: [string, Array<[string, string]>]
}

/** Current names only: an older Gemini name (`search_file_content`) is carried as a generic call, so it comes back unchanged. */
export const TOOL_MAPPINGS: readonly ToolMapping[] = [
  {claude: 'Bash', gemini: 'run_shell_command', keys: [['run_in_background', 'is_background']]},
  {claude: 'Read', gemini: 'read_file', keys: []},
  {claude: 'Write', gemini: 'write_file', keys: []},
  {claude: 'Edit', gemini: 'replace', keys: [['replace_all', 'allow_multiple']]},
  {claude: 'Glob', gemini: 'glob', keys: [['path', 'dir_path']]},
  {claude: 'Grep', gemini: 'grep_search', keys: [['path', 'dir_path'], ['glob', 'include_pattern']]},
  {claude: 'LS', gemini: 'list_directory', keys: [['path', 'dir_path']]},
  {claude: 'WebFetch', gemini: 'web_fetch', keys: []},
  {claude: 'WebSearch', gemini: 'google_web_search', keys: []},
  {claude: 'TodoWrite', gemini: 'write_todos', keys: [], items: ['todos', [['content', 'description']]]},
  {claude: 'EnterPlanMode', gemini: 'enter_plan_mode', keys: []},
  {claude: 'ExitPlanMode', gemini: 'exit_plan_mode', keys: []},
]

/**
 * Codex CLI's tools that mean what a Claude Code tool means. Its shell tool takes `cmd` where Bash takes `command`;
 * `apply_patch` (raw patch text), `update_plan`, `view_image` and the rest have no counterpart of the same shape.
 */
export const CODEX_TOOL_MAPPINGS: ReadonlyArray<{claude: string; codex: string; keys: Array<[string, string]>}> = [{claude: 'Bash', codex: 'exec_command', keys: [['command', 'cmd']]}]

type OtherProvider = Exclude<Provider, 'claude'>
const asMapping = (m: (typeof CODEX_TOOL_MAPPINGS)[number]): ToolMapping => ({claude: m.claude, gemini: m.codex, keys: m.keys})
/** Per provider: its own name → mapping, and the universal name → mapping (`gemini` holds the provider's name). */
const tables: Record<OtherProvider, {byClaude: Map<string, ToolMapping>; byOwn: Map<string, ToolMapping>}> = {
  gemini: {byClaude: new Map(TOOL_MAPPINGS.map((m) => [m.claude, m])), byOwn: new Map(TOOL_MAPPINGS.map((m) => [m.gemini, m]))},
  codex: {byClaude: new Map(CODEX_TOOL_MAPPINGS.map((m) => [m.claude, asMapping(m)])), byOwn: new Map(CODEX_TOOL_MAPPINGS.map((m) => [m.codex, asMapping(m)]))},
}

/** Renames keys `from` → `to` keeping key order; undefined when a target key is already taken (not a bijection then). */
function renameKeys(input: Record<string, unknown>, pairs: Array<[string, string]>): Record<string, unknown> | undefined {
  const rename = new Map(pairs)
  const targets = new Set(pairs.map(([, to]) => to))
  for (const key of Object.keys(input)) if (targets.has(key) && !rename.has(key)) return undefined
  if (pairs.every(([from]) => !(from in input))) return input
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(input)) out[rename.get(key) ?? key] = value
  return out
}

function translate(mapping: ToolMapping, input: unknown, direction: 'toProvider' | 'toClaude'): unknown {
  if (!isRecord(input)) return input
  const flip = (pairs: Array<[string, string]>): Array<[string, string]> => (direction === 'toProvider' ? pairs : pairs.map(([a, b]) => [b, a]))
  let out = renameKeys(input, flip(mapping.keys))
  if (out === undefined) return undefined
  if (mapping.items) {
    const [arrayKey, itemPairs] = mapping.items
    const list = out[arrayKey]
    if (Array.isArray(list)) {
      const items = list.map((item) => (isRecord(item) ? renameKeys(item, flip(itemPairs)) : item))
      if (items.includes(undefined)) return undefined
      if (items.some((item, i) => item !== list[i])) out = {...out, [arrayKey]: items}
    }
  }
  return out
}

/** A provider's tool call in the universal vocabulary. */
export function toolFromProvider(provider: Provider, name: string, input: unknown): MappedTool {
  if (provider === 'claude') return {name, input, mapped: true}
  const mapping = tables[provider].byOwn.get(name)
  if (!mapping) return {name, input, mapped: false}
  const translated = translate(mapping, input, 'toClaude')
  return translated === undefined ? {name, input, mapped: false} : {name: mapping.claude, input: translated, mapped: true}
}

/** A universal tool call as the provider names it. */
export function toolToProvider(provider: Provider, name: string, input: unknown): MappedTool {
  if (provider === 'claude') return {name, input, mapped: true}
  const mapping = tables[provider].byClaude.get(name)
  if (!mapping) return {name, input, mapped: false}
  const translated = translate(mapping, input, 'toProvider')
  return translated === undefined ? {name, input, mapped: false} : {name: mapping.gemini, input: translated, mapped: true}
}
