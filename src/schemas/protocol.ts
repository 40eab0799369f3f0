/**
 * Bodies of the sync protocol (CONTRACT §3). New fields may appear in any body and are kept (seed 001 §12);
 * `hash`, `rev` and `seq` are optional because a seed-style server sends only timestamps.
 */
import {z} from 'zod'

import {isoDateTimeSchema, memoryPathSchema, pathRecord, projectSlugSchema, revisionSchema, sha256HexSchema} from './common.js'
import {activeProjectSchema} from './memory.js'

export const statusFileSchema = z.looseObject({
  updatedAt: isoDateTimeSchema,
  hash: sha256HexSchema.optional(),
  rev: revisionSchema.optional(),
  /** A tombstone: the file was deleted on the server at `rev`. */
  deleted: z.boolean().optional(),
})
export type StatusFile = z.output<typeof statusFileSchema>

export const statusResponseSchema = z
  .looseObject({
    /** Sent by `jarvis serve`; the protocol table's minimum is `files` alone, so nothing reads it. */
    serverTime: isoDateTimeSchema.optional(),
    /** The server's change sequence; `?since=<seq>` then lists only the files changed after it. */
    seq: z.number().int().nonnegative().optional(),
    files: pathRecord(statusFileSchema),
    activeProjectId: z.string().nullable().optional(),
  })
  .meta({title: 'Status answer', description: 'Answer of GET /api/memory/status'})
export type StatusResponse = z.output<typeof statusResponseSchema>

export {STATUS_TEXTS_HEADER} from './protocol-headers.js'

export const pullRequestSchema = z.lazy(() =>
  z
    .looseObject({files: z.array(memoryPathSchema)})
    .meta({title: 'Pull request', description: 'Body of POST /api/memory/pull'}),
)
export type PullRequest = z.output<typeof pullRequestSchema>

/**
 * `content` is the file's text. A seed-style server may send a `.json` file as a JSON value instead; the client
 * accepts it and writes it pretty-printed (CONTRACT §3). A path the server does not have is left out.
 */
export const pulledFileSchema = z.lazy(() =>
  z.looseObject({
    content: z.json(),
    updatedAt: isoDateTimeSchema,
    hash: sha256HexSchema.optional(),
    rev: revisionSchema.optional(),
  }),
)
export type PulledFile = z.output<typeof pulledFileSchema>

export const pullResponseSchema = z.lazy(() =>
  z
    .looseObject({files: pathRecord(pulledFileSchema.unwrap())})
    .meta({title: 'Pull answer', description: 'Answer of POST /api/memory/pull'}),
)
export type PullResponse = z.output<typeof pullResponseSchema>

/**
 * `base` holds, per path, the revision the client merged against (`null`: the client believes the path is new);
 * the server answers 409 when it is stale. `deletes` (new, seed 001 §12) lists paths to delete, guarded by the
 * same `base`; a seed-style server ignores it, so a client only sends it to a server that speaks revisions.
 */
export const pushRequestSchema = z.lazy(() =>
  z
    .looseObject({
      files: pathRecord(z.string()).default({}),
      base: pathRecord(revisionSchema.nullable()).optional(),
      deletes: z.array(memoryPathSchema).optional(),
    })
    .meta({title: 'Push request', description: 'Body of POST /api/memory/push'}),
)
export type PushRequest = z.output<typeof pushRequestSchema>
export type PushRequestInput = z.input<typeof pushRequestSchema>

export const pushedFileSchema = z.lazy(() =>
  z.looseObject({rev: revisionSchema, hash: sha256HexSchema, updatedAt: isoDateTimeSchema}),
)
export type PushedFile = z.output<typeof pushedFileSchema>

/** Deletions are answered apart from `files`, so that every entry of `files` keeps its `hash`. */
export const pushResponseSchema = z.lazy(() =>
  z
    .looseObject({
      files: pathRecord(pushedFileSchema.unwrap()),
      deleted: pathRecord(z.looseObject({rev: revisionSchema, updatedAt: isoDateTimeSchema})).optional(),
      /** The server's change sequence after this push (see docs/protocol.md for when it may serve as `since`). */
      seq: z.number().int().nonnegative().optional(),
    })
    .meta({title: 'Push answer', description: 'Answer of POST /api/memory/push'}),
)
export type PushResponse = z.output<typeof pushResponseSchema>

/** Body of a 409 answer to a push: nothing was written; `stale` names each path whose `base` is out of date. */
export const pushConflictSchema = z.lazy(() =>
  z
    .looseObject({error: z.string().min(1), stale: z.array(memoryPathSchema)})
    .meta({title: 'Push conflict', description: 'Body of the 409 answer of POST /api/memory/push'}),
)
export type PushConflict = z.output<typeof pushConflictSchema>

/**
 * `switchedBy` (new, optional) says who switched; the server records `user-cli` when it is missing. The project id is
 * a project slug: a switch to `Atlas Project` would name a scope no request may ask for.
 */
export const projectActiveRequestSchema = z.lazy(() =>
  z
    .looseObject({
      // The id names the project's scope (`project:<id>`) and folder (`projects/<id>/`): a slug, as `init --project` takes.
      projectId: projectSlugSchema,
      switchedBy: activeProjectSchema.shape.switchedBy.optional(),
    })
    .meta({title: 'Project switch', description: 'Body of POST /api/projects/active'}),
)
export type ProjectActiveRequest = z.output<typeof projectActiveRequestSchema>

/** The answer of GET and POST `/api/projects/active` is the active project itself. */
export const projectActiveResponseSchema = activeProjectSchema
export type ProjectActiveResponse = z.output<typeof projectActiveResponseSchema>

/**
 * Server → client on `/ws/memory`. Every message is only a reason to sync, so all fields but `type` are optional
 * (a seed-style server sends little more); a client ignores a `type` it does not know.
 */
export const stateChangedMessageSchema = z.lazy(() =>
  z.looseObject({
    type: z.literal('STATE_CHANGED'),
    projectId: z.string().nullable().optional(),
  }),
)
export type StateChangedMessage = z.output<typeof stateChangedMessageSchema>
export const memUpdateMessageSchema = z.lazy(() =>
  z.looseObject({
    type: z.literal('MEM_UPDATE'),
    path: memoryPathSchema.optional(),
    rev: revisionSchema.optional(),
    /** The agent whose write caused the update, so a client can skip its own echoes. */
    author: z.string().optional(),
  }),
)
export type MemUpdateMessage = z.output<typeof memUpdateMessageSchema>
export const wsMessageSchema = z.lazy(() =>
  z
    .discriminatedUnion('type', [stateChangedMessageSchema.unwrap(), memUpdateMessageSchema.unwrap()])
    .meta({title: 'WebSocket message', description: 'Server to client on /ws/memory'}),
)
export type WsMessage = z.output<typeof wsMessageSchema>
