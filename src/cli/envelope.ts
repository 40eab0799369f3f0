/**
 * What a command prints under `--json`, and the exit code of anything it throws. One place for both doors that
 * run commands — oclif's (base-command.ts) and the fast door that skips oclif (fast.ts) — so that they answer
 * alike. Loads no oclif: oclif's own errors are recognised by their shape.
 */
import {ExitCode, isJarvisError} from '../errors.js'

/** The one envelope every command prints under `--json`. */
export type JsonEnvelope<R> =
  | {status: 0; result: R; warnings: string[]}
  | {status: number; error: {code: string; name: string; message: string; data?: Record<string, unknown>}; warnings: string[]}

export function successEnvelope<R>(result: R, warnings: string[]): JsonEnvelope<R> {
  return {status: 0, result, warnings}
}

export function errorEnvelope(error: unknown, warnings: string[]): JsonEnvelope<never> {
  const exit = exitCodeOf(error)
  if (isJarvisError(error)) return {status: exit, error: {code: error.code, name: error.name, message: error.message, data: error.data}, warnings}
  const message = error instanceof Error ? error.message : String(error)
  return {status: exit, error: {code: exit === ExitCode.badInput ? 'USAGE' : 'FAILED', name: 'Error', message}, warnings}
}

/** oclif's JSON output (`logJson` without a theme): two-space JSON on one write. */
export function jsonText(envelope: unknown): string {
  return JSON.stringify(envelope, null, 2)
}

export function hasOclifExit(error: unknown): error is {oclif: {exit: number}} {
  return typeof error === 'object' && error !== null && 'oclif' in error && typeof (error as {oclif?: {exit?: unknown}}).oclif?.exit === 'number'
}

/** oclif's flag and argument errors; some of them (an option outside its list) carry no exit code at all. */
export function isUsageError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'parse' in error && 'showHelp' in error
}

/** The contract's exit code for anything a command may throw. */
export function exitCodeOf(error: unknown): number {
  if (isJarvisError(error)) return error.exit
  if (isUsageError(error)) return ExitCode.badInput
  if (hasOclifExit(error)) return error.oclif.exit
  return ExitCode.failed
}

/** The one line a person sees for a failed command (never a stack, unless DEBUG asks for it). */
export function errorLines(error: Error): string[] {
  const lines = [`jarvis: ${error.message}`]
  if (!isJarvisError(error) && process.env.DEBUG && error.stack) lines.push(error.stack)
  return lines
}
