/**
 * A request header of `GET /api/memory/status?since=`: the client takes the texts of the files the answer lists, up
 * to this many characters in all, in each entry's `content` (docs/protocol.md). A server that does not know it
 * ignores it; `jarvis serve` gives them for a listing of a few files. In a module of its own, without zod: every
 * sync sends it, and a sync with nothing to do loads no schema (scripts/bundle.mjs).
 */
export const STATUS_TEXTS_HEADER = 'x-jarvis-status-texts'

/**
 * A request header naming the agent the client acts as (the tree's or `--agent`): `jarvis serve` refuses a request
 * whose token belongs to another agent (403, "… but the token belongs to <agent>"), so that a tree set up for one
 * agent never reads another agent's private notes or files its edits under that agent. A server that does not know
 * it ignores it.
 */
export const AGENT_HEADER = 'x-jarvis-agent'
