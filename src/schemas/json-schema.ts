/**
 * The published JSON Schemas (docs/schemas/): which zod schema each file is made from, and the rendering.
 * scripts/generate-schemas.ts writes them and a test compares, so docs never drift from the code.
 */
import {z} from 'zod'

import {appendResponseSchema, memoryEventSchema, snapshotResponseSchema} from './events.js'
import {activeProjectSchema, contextMapSchema, taskResultSchema, workerMemorySchema} from './memory.js'
import {auditEntrySchema, nexusConfigSchema, outboxEntrySchema, syncStateSchema} from './nexus.js'
import {
  projectActiveRequestSchema,
  pullRequestSchema,
  pullResponseSchema,
  pushConflictSchema,
  pushRequestSchema,
  pushResponseSchema,
  statusResponseSchema,
  wsMessageSchema,
} from './protocol.js'
import {sessionRegistrySchema, universalMessageSchema} from './session.js'

/** File stem → schema; `docs/schemas/<stem>.schema.json`, and `fixtures/seeds/<stem>.<label>.json` are checked against it. */
export const publishedSchemas = {
  'active-project': activeProjectSchema,
  'context-map': contextMapSchema,
  'worker-memory': workerMemorySchema,
  'task-result': taskResultSchema,
  'memory-event': memoryEventSchema,
  'memory-append-response': appendResponseSchema,
  'memory-snapshot-response': snapshotResponseSchema,
  'universal-message': universalMessageSchema,
  'session-registry': sessionRegistrySchema,
  'nexus-config': nexusConfigSchema,
  'sync-state': syncStateSchema,
  'outbox-entry': outboxEntrySchema,
  'audit-entry': auditEntrySchema,
  'status-response': statusResponseSchema,
  'pull-request': pullRequestSchema,
  'pull-response': pullResponseSchema,
  'push-request': pushRequestSchema,
  'push-response': pushResponseSchema,
  'push-conflict': pushConflictSchema,
  'project-active-request': projectActiveRequestSchema,
  'ws-message': wsMessageSchema,
} as const satisfies Record<string, z.ZodType>
export type PublishedSchemaName = keyof typeof publishedSchemas

/** Object keys sorted at every depth (arrays keep their order): the same schema always prints the same bytes. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  )
}

/**
 * The JSON Schema of one published schema. `io: 'input'` because files and bodies may leave out a field that
 * has a default (the schema describes what may be written, not what a parse returns).
 */
export function toPublishedJsonSchema(name: PublishedSchemaName): Record<string, unknown> {
  const schema = z.toJSONSchema(publishedSchemas[name], {io: 'input', target: 'draft-2020-12', unrepresentable: 'throw'})
  return sortKeys({...schema, $id: `${name}.schema.json`}) as Record<string, unknown>
}

/** Every published schema as `{file, text}`: 2-space JSON with a final newline, files sorted by name. */
export function renderJsonSchemas(): {file: string; text: string}[] {
  return (Object.keys(publishedSchemas) as PublishedSchemaName[])
    .sort()
    .map((name) => ({file: `${name}.schema.json`, text: `${JSON.stringify(toPublishedJsonSchema(name), null, 2)}\n`}))
}
