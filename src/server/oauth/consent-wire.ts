/** The consent page's API answers (consent.ts), as plain types: read by the server and by the dashboard. */
import type {GrantRole, OAuthGrant} from '../storage/oauth-types.js'

/** What the consent page shows. */
export interface ConsentView {
  id: string
  client: {id: string; name: string; redirectUri: string; redirectHost: string}
  resource: string
  /** `mcp`: the MCP tools; `api`: the REST API. */
  resourceKind: 'mcp' | 'api'
  expiresAt: string
  workspace: string
  /** The agent this app usually is (chatgpt for ChatGPT, claude for Claude), else the key's own. */
  suggestedAgent: string
  /** The agents the key may grant: every agent (an admin key) or its own only. */
  agents: {any: true} | {only: string}
  roles: GrantRole[]
}

export interface ConsentDecision {
  allow: boolean
  agent?: string
  role?: string
}

export interface ConsentOutcome {
  /** Where the browser goes next: back to the app, with a code or with `error=access_denied`. */
  redirect: string
  grant: OAuthGrant | null
}
