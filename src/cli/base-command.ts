import {Command, Flags, type Interfaces} from '@oclif/core'

import {ExitCode, isJarvisError} from '../errors.js'

export type JarvisFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof JarvisCommand)['baseFlags'] & T['flags']>
export type JarvisArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>

/** The one envelope every command prints under `--json`. */
export type JsonEnvelope<R> =
  | {status: 0; result: R; warnings: string[]}
  | {status: number; error: {code: string; name: string; message: string; data?: Record<string, unknown>}; warnings: string[]}

/**
 * The base of every jarvis command: `--json` with one envelope, `--dir`, flags parsed once in `init()`,
 * and the single place where typed errors become the contract's exit codes.
 */
export abstract class JarvisCommand<T extends typeof Command> extends Command {
  static enableJsonFlag = true

  static baseFlags = {
    dir: Flags.directory({
      description: 'Root of the jarvis tree (default: the nearest parent holding .memory/).',
      env: 'JARVIS_DIR',
      helpGroup: 'GLOBAL',
    }),
  }

  protected flags!: JarvisFlags<T>
  protected args!: JarvisArgs<T>
  private readonly warnings: string[] = []

  public async init(): Promise<void> {
    await super.init()
    const {args, flags} = await this.parse({
      args: this.ctor.args,
      baseFlags: (super.ctor as typeof JarvisCommand).baseFlags,
      enableJsonFlag: this.ctor.enableJsonFlag,
      flags: this.ctor.flags,
      strict: this.ctor.strict,
    })
    this.flags = flags as JarvisFlags<T>
    this.args = args as JarvisArgs<T>
  }

  /** Warnings go to stderr for people and into the envelope for scripts. */
  public warn(input: string | Error): string | Error {
    this.warnings.push(typeof input === 'string' ? input : input.message)
    if (!this.jsonEnabled()) this.logToStderr(`warning: ${typeof input === 'string' ? input : input.message}`)
    return input
  }

  protected toSuccessJson(result: unknown): JsonEnvelope<unknown> {
    return {status: 0, result, warnings: this.warnings}
  }

  protected toErrorJson(error: unknown): JsonEnvelope<never> {
    const exit = exitCodeOf(error)
    if (isJarvisError(error)) {
      return {status: exit, error: {code: error.code, name: error.name, message: error.message, data: error.data}, warnings: this.warnings}
    }
    const message = error instanceof Error ? error.message : String(error)
    return {status: exit, error: {code: exit === ExitCode.badInput ? 'USAGE' : 'FAILED', name: 'Error', message}, warnings: this.warnings}
  }

  protected async catch(error: Error & {exitCode?: number}): Promise<void> {
    const exit = exitCodeOf(error)
    process.exitCode = exit
    if (this.jsonEnabled()) {
      this.logJson(this.toErrorJson(error))
      return
    }
    // oclif's own usage errors already print well, with help; ours print one clear line, never a stack.
    if (!isJarvisError(error) && (hasOclifExit(error) || isUsageError(error))) {
      if (isUsageError(error)) (error as {oclif?: {exit: number}}).oclif = {exit}
      throw error
    }
    this.logToStderr(`jarvis: ${error.message}`)
    if (!isJarvisError(error) && process.env.DEBUG && error.stack) this.logToStderr(error.stack)
  }
}

function hasOclifExit(error: unknown): error is {oclif: {exit: number}} {
  return typeof error === 'object' && error !== null && 'oclif' in error && typeof (error as {oclif?: {exit?: unknown}}).oclif?.exit === 'number'
}

/** oclif's flag and argument errors; some of them (an option outside its list) carry no exit code at all. */
function isUsageError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'parse' in error && 'showHelp' in error
}

/** The contract's exit code for anything a command may throw. */
export function exitCodeOf(error: unknown): number {
  if (isJarvisError(error)) return error.exit
  if (isUsageError(error)) return ExitCode.badInput
  if (hasOclifExit(error)) return error.oclif.exit
  return ExitCode.failed
}
