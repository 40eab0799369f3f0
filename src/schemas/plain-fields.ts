/**
 * Values checked by hand, without zod, and fields of the sync's formats so checked: where a sync of a few files would
 * load zod and build its schemas only to read a few entries (the sync state's, a status or push answer's). Each
 * check of a format's field accepts only what its schema in common.ts reads unchanged (property-tested,
 * test/sync/no-op-checks.test.ts); anything else goes through zod, which names the problem. This module imports no zod.
 */

/**
 * A path relative to `.memory/` in its normal form (CONTRACT §3): `/` separators, no leading or trailing `/`,
 * no empty, `.` or `..` segment, no backslash or control character (memoryPathSchema).
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what a path may not hold
export const MEMORY_PATH_PATTERN = /^(?!\/)(?!.*\/$)(?!.*\/\/)(?!(?:.*\/)?\.{1,2}(?:\/|$))[^\\\u0000-\u001f]+$/
export const MEMORY_PATH_MAX = 1024
export const SHA256_HEX_PATTERN = /^[0-9a-f]{64}$/

/** A memory path (memoryPathSchema). As a key of a map zod reads (pathRecord), `__proto__` is not kept: see isPlainRecord. */
export function isMemoryPath(path: string): boolean {
  return path.length <= MEMORY_PATH_MAX && MEMORY_PATH_PATTERN.test(path)
}

export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && SHA256_HEX_PATTERN.test(value)
}

/** A revision or a change sequence (revisionSchema): an integer ≥ 0. */
export function isRevision(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/**
 * An object as JSON.parse makes it that zod's objects and records read key for key: not an array, its prototype
 * Object's, and no own `__proto__` key (JSON.parse makes one; zod drops it from an object).
 */
export function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype && !Object.hasOwn(value, '__proto__')
}

/** Any object but an array: what JSON.parse makes of a JSON object, whatever its keys (`__proto__` included). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
