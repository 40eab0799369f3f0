/**
 * The one import point of the schemas: on-disk formats, wire bodies, config, and the parse helpers.
 * Other folders import from here, never from the files behind it; but for json-schema.ts, the published JSON Schemas,
 * which only scripts/generate-schemas.ts and the schema tests render: a module of the index is set up by every call
 * that loads the schemas (a no-op sync), and that one named every published schema.
 *
 * A schema that a sync with nothing to do never reads is `z.lazy(() => …)`: zod builds it at its first parse, not when
 * this module loads. Building them all took ~4 ms of each `jarvis sync` (and of each other call of the fast door), a
 * process that parses two or three of them. Inside another schema such a schema is nested as `.unwrap()`, the built
 * one (a parse then does not pass through the lazy one at each element), and `.unwrap()` also reaches its `.shape`
 * or `.extend`. The published JSON Schemas are the same either way (test/schemas/generated.test.ts).
 */
export * from './common.js'
export * from './events.js'
export * from './memory.js'
export * from './nexus.js'
export * from './parse.js'
export * from './protocol.js'
export * from './session.js'
