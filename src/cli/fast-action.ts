/**
 * One hot command run by the fast door: its argv read as its oclif command would read it, its action run, its output
 * and errors printed as oclif prints them. false when the call is anything the door leaves to oclif.
 */
import {format} from 'node:util'

import type {CommandOutput} from './actions/output.js'
import type {ActionSpec, ParsedFlags} from './actions/spec.js'

export interface FastAction {
  spec: ActionSpec
  run(input: {flags: ParsedFlags; args: Record<string, string>}, output: CommandOutput): Promise<unknown>
}

export async function runAction(action: FastAction, argv: string[]): Promise<boolean> {
  // oclif reads JARVIS_CONTENT_TYPE=json as --json: rare enough to leave to it.
  if (process.env.JARVIS_CONTENT_TYPE !== undefined) return false
  const [{parseActionArgv}, {errorEnvelope, errorLines, exitCodeOf, jsonText, successEnvelope}] = await Promise.all([import('./actions/spec.js'), import('./envelope.js')])
  const input = parseActionArgv(action.spec, argv, process.env)
  if (input === undefined) return false
  const json = input.flags.json === true
  const warnings: string[] = []
  // oclif prints each line as util.format(line) and a newline; so does this.
  const stdout = (text: string) => process.stdout.write(`${format(text)}\n`)
  const stderr = (text: string) => process.stderr.write(`${format(text)}\n`)
  const output: CommandOutput = {
    json,
    log: (text) => json || stdout(text),
    logToStderr: (text) => json || stderr(text),
    warn(message) {
      warnings.push(message)
      if (!json) stderr(`warning: ${message}`)
    },
  }
  try {
    const result = await action.run(input, output)
    if (json) stdout(jsonText(successEnvelope(result, warnings)))
  } catch (error) {
    process.exitCode = exitCodeOf(error)
    if (json) stdout(jsonText(errorEnvelope(error, warnings)))
    else for (const line of errorLines(error instanceof Error ? error : new Error(String(error)))) stderr(line)
  }
  return true
}
