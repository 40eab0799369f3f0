import {Flags} from '@oclif/core'

/** Flags shared by every command that talks to a server. */
export const serverFlags = {
  server: Flags.string({description: 'URL of the jarvis server.', env: 'JARVIS_SERVER', helpGroup: 'SERVER'}),
  agent: Flags.string({description: 'Agent id (chatgpt, claude, gemini, openclaw).', env: 'JARVIS_AGENT', helpGroup: 'SERVER'}),
}

/** Where `jarvis serve` and its subcommands keep the memory when it is not the data directory's SQLite file. */
export const databaseFlag = Flags.string({
  description: 'PostgreSQL URL (postgres://user:password@host:5432/db) to keep the memory in, instead of the SQLite file under --data.',
  env: 'JARVIS_DATABASE_URL',
})

/** The workspace a `jarvis serve` subcommand works on: one of the isolated memories the server hosts. */
export function workspaceFlag(description: string) {
  return Flags.string({description: `${description} A name of lower-case letters, digits and "-" (e.g. team-a).`, default: 'default'})
}
