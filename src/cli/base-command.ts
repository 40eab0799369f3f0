import {Command, Flags, type Interfaces} from '@oclif/core'

import {ExitCode, isJarvisError} from '../errors.js'
import {errorEnvelope, errorLines, exitCodeOf, hasOclifExit, isUsageError, type JsonEnvelope, successEnvelope} from './envelope.js'
import type {CommandOutput} from './actions/output.js'
import {progressLine} from './progress.js'

export type JarvisFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof JarvisCommand)['baseFlags'] & T['flags']>
export type JarvisArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>

/**
 * The base of every jarvis command under oclif: `--json` with one envelope, `--dir`, flags parsed once in
 * `init()`, typed errors turned into the contract's exit codes (by cli/envelope.ts, shared with the fast door).
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
    }).catch((error: unknown) => {
      // Some of oclif's parse errors ("Flag --x can only be specified once", "expects a value") are plain CLIErrors,
      // whose exit code is 1: bad usage all the same (exit 2).
      if (error instanceof Error && !isJarvisError(error)) Object.assign(error, {oclif: {exit: ExitCode.badInput}})
      throw error
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

  /** What an action (cli/actions/) prints through, the same whichever door runs it. */
  protected get output(): CommandOutput {
    return {json: this.jsonEnabled(), log: (text) => this.log(text), logToStderr: (text) => this.logToStderr(text), warn: (message) => this.warn(message), progress: process.stderr.isTTY ? progressLine : undefined}
  }

  protected toSuccessJson(result: unknown): JsonEnvelope<unknown> {
    return successEnvelope(result, this.warnings)
  }

  protected toErrorJson(error: unknown): JsonEnvelope<never> {
    return errorEnvelope(error, this.warnings)
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
    for (const line of errorLines(error)) this.logToStderr(line)
  }
}
