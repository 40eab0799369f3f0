/**
 * Session hand-off between Claude Code, Gemini CLI and Codex CLI (seed 002): the universal message every transcript is
 * converted to, and the cross-provider registry in `.nexus/sessions.json`.
 */
import {z} from 'zod'

import {isoDateTimeSchema} from './common.js'

export const providerSchema = z.enum(['claude', 'gemini', 'codex'])
export type Provider = z.output<typeof providerSchema>

/**
 * Which of `text`, `tool_use`, `tool_result` is set follows `type`, but that is not enforced: a transcript
 * line that carries both text and a tool call must convert without losing either.
 */
export const universalContentSchema = z.lazy(() =>
  z.looseObject({
    text: z.string().optional(),
    tool_use: z
      .looseObject({
        tool_name: z.string().min(1),
        /** Whatever the tool was called with; any JSON. */
        tool_input: z.unknown().optional(),
        /** The provider's call id (Claude `tool_use.id`, Gemini `toolCalls[].id`, Codex `call_id`); pairs the call with its result. */
        tool_use_id: z.string().min(1).optional(),
      })
      .optional(),
    tool_result: z
      .looseObject({
        output: z.string().optional(),
        error: z.string().optional(),
        /** The id of the call this result answers. */
        tool_use_id: z.string().min(1).optional(),
        /** The universal name of the tool that produced it, when the source says. */
        tool_name: z.string().min(1).optional(),
      })
      .optional(),
  }),
)
export type UniversalContent = z.output<typeof universalContentSchema>

/** Thinking (Claude) or thoughts (Gemini) carried as text; a signature or redacted data is never carried across tools. */
export const universalReasoningSchema = z.lazy(() =>
  z.looseObject({
    text: z.string(),
    subject: z.string().optional(),
    /** A Claude thinking signature or Gemini thought signature existed in the source (kept only in `original`). */
    signed: z.boolean().optional(),
    /** Claude `redacted_thinking`: encrypted, nothing readable. */
    redacted: z.boolean().optional(),
  }),
)
export type UniversalReasoning = z.output<typeof universalReasoningSchema>

/** An image or document by reference: the bytes stay in `metadata.original` at `at` (a JSON pointer), never in the message. */
export const universalImageRefSchema = z.lazy(() =>
  z.looseObject({
    mediaType: z.string(),
    /** Decoded size in bytes (0 when only a URI is known). */
    size: z.number().int().nonnegative().optional(),
    sha256: z.string().optional(),
    /** JSON pointer into `metadata.original` to the block or part holding the base64 data, e.g. `/0/message/content/1`. */
    at: z.string().optional(),
    /** Gemini `fileData.fileUri`. */
    uri: z.string().optional(),
  }),
)
export type UniversalImageRef = z.output<typeof universalImageRefSchema>

/** Which source record a message came from: `key` names the record, `index` of `size` messages made from it. */
export const universalSourceSchema = z.lazy(() =>
  z.looseObject({
    format: z.enum(['claude-jsonl', 'gemini-json', 'gemini-jsonl', 'gemini-checkpoint', 'codex-jsonl']),
    key: z.string(),
    index: z.number().int().nonnegative(),
    size: z.number().int().positive(),
  }),
)
export type UniversalSource = z.output<typeof universalSourceSchema>

export const universalMetadataSchema = z.lazy(() =>
  z.looseObject({
    provider: z.string().optional(),
    model: z.string().optional(),
    /** `prompt` typed by a person, `meta` injected by the harness, `compact-summary`, `command` output. */
    kind: z.string().optional(),
    /** Claude `message.id` or Gemini record id of the response this block belongs to. */
    responseId: z.string().optional(),
    /** The provider's own tool name when it differs from the universal one. */
    toolName: z.string().optional(),
    reasoning: z.array(universalReasoningSchema.unwrap()).optional(),
    images: z.array(universalImageRefSchema.unwrap()).optional(),
    source: universalSourceSchema.unwrap().optional(),
    /** Every source record of `source.key`, verbatim (only on the message with `source.index` 0). */
    original: z.array(z.unknown()).optional(),
  }),
)
export type UniversalMetadata = z.output<typeof universalMetadataSchema>

export const universalMessageSchema = z.lazy(() =>
  z
    .looseObject({
      id: z.string().min(1),
      /** `null` for the first message of a conversation. */
      parentId: z.string().min(1).nullable().default(null),
      sessionId: z.string().min(1),
      timestamp: isoDateTimeSchema,
      role: z.enum(['user', 'assistant']),
      type: z.enum(['message', 'tool_use', 'tool_result']),
      content: universalContentSchema.unwrap(),
      /** Provider-specific extras (`provider`, model, original records); kept as they are. */
      metadata: universalMetadataSchema.unwrap().default({}),
    })
    .meta({title: 'Universal message', description: 'One conversation message in the provider-neutral format'}),
)
export type UniversalMessage = z.output<typeof universalMessageSchema>
export type UniversalMessageInput = z.input<typeof universalMessageSchema>

export const providerSessionInfoSchema = z.lazy(() =>
  z.looseObject({
    provider: providerSchema,
    sessionId: z.string().min(1),
    messageCount: z.number().int().nonnegative(),
    lastSync: isoDateTimeSchema.optional(),
  }),
)
export type ProviderSessionInfo = z.output<typeof providerSessionInfoSchema>

export const sessionRegistryEntrySchema = z.lazy(() =>
  z.looseObject({
    sessionId: z.string().min(1),
    /** The tag `jarvis session sync <tag>` names (new, optional: seed 002 keys its sync state by it). */
    sessionTag: z.string().min(1).optional(),
    projectPath: z.string().min(1),
    createdAt: isoDateTimeSchema,
    lastActivity: isoDateTimeSchema,
    providers: z.array(providerSessionInfoSchema.unwrap()).default([]),
  }),
)
export type SessionRegistryEntry = z.output<typeof sessionRegistryEntrySchema>

/** Seed 002 names the entries but not the file around them: a version, for a later format change, and a list. */
export const sessionRegistrySchema = z.lazy(() =>
  z
    .looseObject({
      version: z.literal(1).default(1),
      sessions: z.array(sessionRegistryEntrySchema.unwrap()).default([]),
    })
    .meta({title: 'Session registry', description: '.nexus/sessions.json'}),
)
export type SessionRegistry = z.output<typeof sessionRegistrySchema>
export type SessionRegistryInput = z.input<typeof sessionRegistrySchema>
