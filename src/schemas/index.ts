/**
 * The one import point of the schemas: on-disk formats, wire bodies, config, and the parse helpers.
 * Other folders import from here, never from the files behind it.
 */
export * from './common.js'
export * from './events.js'
export * from './json-schema.js'
export * from './memory.js'
export * from './nexus.js'
export * from './parse.js'
export * from './protocol.js'
export * from './session.js'
