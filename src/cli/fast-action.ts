/**
 * One hot command run by the fast door: its argv read as its oclif command would read it, its action run, its output
 * and errors printed as oclif prints them. false when the call is anything the door leaves to oclif.
 */
import {format} from 'node:util'

import type {CommandOutput} from './actions/output.js'
import {progressLine} from './progress.js'
import type {ActionSpec, ParsedFlags} from './actions/spec.js'

export interface FastAction {
  spec: ActionSpec
  run(input: {flags: ParsedFlags; args: Record<string, string>}, output: CommandOutput): Promise<unknown>
}

export async function runAction(action: FastAction, argv: string[]): Promise<boolean> {
  // oclif reads JARVIS_CONTENT_TYPE=json as --json: rare enough to leave to it.
  if (process.env.JARVIS_CONTENT_TYPE !== undefined) return false
  const input = (await import('./actions/spec.js')).parseActionArgv(action.spec, argv, process.env)
  if (input === undefined) return false
  process.exitCode = await runParsedAction(action, input, {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    progress: process.stderr.isTTY ? progressLine : undefined,
  })
  return true
}

/** Where a parsed call prints: this process's streams, or a warm server's client (cli/warm-call.ts). */
export interface ActionStreams {
  stdout(text: string): void
  stderr(text: string): void
  /** Set when stderr is a terminal: a long sync counts its files there. */
  progress?: (done: number, total: number) => void
  /** Aborts when the caller is gone: the action stops at its next request to the server. */
  signal?: AbortSignal
}

/** Runs a call its spec parsed, printing as oclif prints; its exit code. */
export async function runParsedAction(action: FastAction, input: {flags: ParsedFlags; args: Record<string, string>}, streams: ActionStreams): Promise<number> {
  const {errorEnvelope, errorLines, exitCodeOf, jsonText, successEnvelope} = await import('./envelope.js')
  const json = input.flags.json === true
  const warnings: string[] = []
  // oclif prints each line as util.format(line) and a newline; so does this.
  const stdout = (text: string) => streams.stdout(`${format(text)}\n`)
  const stderr = (text: string) => streams.stderr(`${format(text)}\n`)
  const output: CommandOutput = {
    json,
    log: (text) => json || stdout(text),
    logToStderr: (text) => json || stderr(text),
    warn(message) {
      warnings.push(message)
      if (!json) stderr(`warning: ${message}`)
    },
    progress: streams.progress,
    signal: streams.signal,
  }
  try {
    const result = await action.run(input, output)
    if (json) stdout(jsonText(successEnvelope(result, warnings)))
    return 0
  } catch (error) {
    if (json) stdout(jsonText(errorEnvelope(error, warnings)))
    else for (const line of errorLines(error instanceof Error ? error : new Error(String(error)))) stderr(line)
    return exitCodeOf(error)
  }
}
