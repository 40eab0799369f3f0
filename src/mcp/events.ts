/** The memory event of a `memory_append` call, shared by both backends. PURE. */
import {BadInputError} from '../errors.js'
import {memoryEventSchema} from '../schemas/index.js'
import type {AppendInput} from './schemas.js'

/** `source.system` of an event written through MCP: `mcp` once the event schema knows it, else `other`. */
export const MCP_SOURCE_SYSTEM: string = (memoryEventSchema.unwrap().shape.source.shape.system.options as readonly string[]).includes('mcp') ? 'mcp' : 'other'

/** The wire event of a memory_append call (the op fills agent_id, run_id, and the defaults of scope and confidence). */
export function eventOf(input: AppendInput): Record<string, unknown> {
  if (input.key !== undefined && input.dedupe_key !== undefined && input.key !== input.dedupe_key) {
    throw new BadInputError(`memory_append: key ${JSON.stringify(input.key)} and dedupe_key ${JSON.stringify(input.dedupe_key)} differ: give one of them`, {field: 'key'})
  }
  const key = input.key ?? input.dedupe_key
  if (key === undefined) throw new BadInputError('memory_append: key is required: a stable key for what the event is about, e.g. decision:db_engine', {field: 'key'})
  const content = input.content.replace(/\r\n/g, '\n').replace(/\n+$/, '')
  const event: Record<string, unknown> = {
    kind: input.kind,
    dedupe_key: key,
    // The event log has no tag field: tags go into the content, where search finds them.
    content_md: input.tags?.length ? `${content}\n\nTags: ${input.tags.map((tag) => `#${tag.replace(/\s+/g, '-')}`).join(' ')}` : content,
    source: {system: MCP_SOURCE_SYSTEM},
  }
  for (const [field, value] of [['scope', input.scope], ['confidence', input.confidence], ['supersedes', input.supersedes], ['ttl_days', input.ttl_days]] as const) {
    if (value !== undefined) event[field] = value
  }
  return event
}
