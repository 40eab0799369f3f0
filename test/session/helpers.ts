import type {UniversalMessage} from '../../src/schemas/index.js'

/** A fixed clock and id generator, so that writers' output can be compared byte for byte. */
export function clock() {
  let n = 0
  return {now: () => new Date('2026-09-01T12:00:00.000Z'), newId: () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`}
}

/** What a message says, without ids, timestamps or metadata. */
export function gist(m: UniversalMessage): string {
  if (m.type === 'tool_use') return `${m.role} use ${m.content.tool_use?.tool_name} ${JSON.stringify(m.content.tool_use?.tool_input)}`
  if (m.type === 'tool_result') return `${m.role} result ${JSON.stringify({o: m.content.tool_result?.output, e: m.content.tool_result?.error})}`
  return `${m.role} text ${m.content.text}`
}
