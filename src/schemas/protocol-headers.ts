/**
 * A request header of `GET /api/memory/status?since=`: the client takes the texts of the files the answer lists, up
 * to this many characters in all, in each entry's `content` (docs/protocol.md). A server that does not know it
 * ignores it; `jarvis serve` gives them for a listing of a few files. In a module of its own, without zod: every
 * sync sends it, and a sync with nothing to do loads no schema (scripts/bundle.mjs).
 */
export const STATUS_TEXTS_HEADER = 'x-jarvis-status-texts'
