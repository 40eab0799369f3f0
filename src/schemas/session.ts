/**
 * Session hand-off between Claude Code and Gemini CLI (seed 002): the universal message every transcript is
 * converted to, and the cross-provider registry in `.nexus/sessions.json`.
 */
import {z} from 'zod'

import {isoDateTimeSchema} from './common.js'

export const providerSchema = z.enum(['claude', 'gemini'])
export type Provider = z.output<typeof providerSchema>

/**
 * Which of `text`, `tool_use`, `tool_result` is set follows `type`, but that is not enforced: a transcript
 * line that carries both text and a tool call must convert without losing either.
 */
export const universalContentSchema = z.looseObject({
  text: z.string().optional(),
  tool_use: z
    .looseObject({
      tool_name: z.string().min(1),
      /** Whatever the tool was called with; any JSON. */
      tool_input: z.unknown().optional(),
    })
    .optional(),
  tool_result: z.looseObject({output: z.string().optional(), error: z.string().optional()}).optional(),
})
export type UniversalContent = z.output<typeof universalContentSchema>

export const universalMessageSchema = z
  .looseObject({
    id: z.string().min(1),
    /** `null` for the first message of a conversation. */
    parentId: z.string().min(1).nullable().default(null),
    sessionId: z.string().min(1),
    timestamp: isoDateTimeSchema,
    role: z.enum(['user', 'assistant']),
    type: z.enum(['message', 'tool_use', 'tool_result']),
    content: universalContentSchema,
    /** Provider-specific extras (`provider`, model, original ids); kept as they are. */
    metadata: z.looseObject({provider: z.string().optional()}).default({}),
  })
  .meta({title: 'Universal message', description: 'One conversation message in the provider-neutral format of seed 002'})
export type UniversalMessage = z.output<typeof universalMessageSchema>
export type UniversalMessageInput = z.input<typeof universalMessageSchema>

export const providerSessionInfoSchema = z.looseObject({
  provider: providerSchema,
  sessionId: z.string().min(1),
  messageCount: z.number().int().nonnegative(),
  lastSync: isoDateTimeSchema.optional(),
})
export type ProviderSessionInfo = z.output<typeof providerSessionInfoSchema>

export const sessionRegistryEntrySchema = z.looseObject({
  sessionId: z.string().min(1),
  /** The tag `jarvis session sync <tag>` names (new, optional: seed 002 keys its sync state by it). */
  sessionTag: z.string().min(1).optional(),
  projectPath: z.string().min(1),
  createdAt: isoDateTimeSchema,
  lastActivity: isoDateTimeSchema,
  providers: z.array(providerSessionInfoSchema).default([]),
})
export type SessionRegistryEntry = z.output<typeof sessionRegistryEntrySchema>

/** Seed 002 names the entries but not the file around them: a version, for a later format change, and a list. */
export const sessionRegistrySchema = z
  .looseObject({
    version: z.literal(1).default(1),
    sessions: z.array(sessionRegistryEntrySchema).default([]),
  })
  .meta({title: 'Session registry', description: '.nexus/sessions.json (seed 002 SessionRegistryEntry / ProviderSessionInfo)'})
export type SessionRegistry = z.output<typeof sessionRegistrySchema>
export type SessionRegistryInput = z.input<typeof sessionRegistrySchema>
