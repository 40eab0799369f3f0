/** Where an action (a command's work once its flags are parsed) prints: oclif's command or the fast door. */
export interface CommandOutput {
  /** `--json`: the door prints the result as the envelope; `log` and `logToStderr` then print nothing. */
  json: boolean
  log(text: string): void
  logToStderr(text: string): void
  /** `warning: …` on stderr for people, and into the envelope's warnings for scripts. */
  warn(message: string): void
  /** Set when stderr is a terminal: a long sync counts its files there (cli/progress.ts). */
  progress?: (done: number, total: number) => void
  /** Aborts when the caller is gone (a call a watch runs, whose client was stopped with Ctrl-C or killed). */
  signal?: AbortSignal
}
