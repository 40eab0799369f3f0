import {Flags} from '@oclif/core'

/** Flags shared by every command that talks to a server. */
export const serverFlags = {
  server: Flags.string({description: 'URL of the jarvis server.', env: 'JARVIS_SERVER', helpGroup: 'SERVER'}),
  agent: Flags.string({description: 'Agent id (chatgpt, claude, gemini, openclaw).', env: 'JARVIS_AGENT', helpGroup: 'SERVER'}),
}
