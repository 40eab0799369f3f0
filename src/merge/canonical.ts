import {isRecord} from '../schemas/plain-fields.js'
import type {JsonObject} from './types.js'

/**
 * JSON with object keys sorted by UTF-16 code unit (never localeCompare: it depends on the
 * machine's locale, and two sides must order values identically to converge).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`
  const object = value as JsonObject
  const keys = Object.keys(object)
    .filter((key) => object[key] !== undefined)
    .sort()
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(object[key])}`).join(',')}}`
}

export function jsonEqual(a: unknown, b: unknown): boolean {
  return a === b || canonicalJson(a) === canonicalJson(b)
}

/** `isRecord`, narrowed to what the merge holds: values parsed from JSON. */
export function isPlainObject(value: unknown): value is JsonObject {
  return isRecord(value)
}

/** `key in object` would see Object.prototype; a JSON key named `__proto__` or `constructor` must not. */
export function hasOwn(object: JsonObject, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(object, key)
}

/** Plain assignment of `__proto__` would replace the prototype instead of adding a key. */
export function setOwn(object: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(object, key, {value, enumerable: true, writable: true, configurable: true})
}
