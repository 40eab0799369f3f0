import type {AuthLoginResult, AuthLogoutResult, AuthStatusResult} from '../ops/auth.js'

export function renderLogin(result: AuthLoginResult): string {
  const checked = result.verified ? 'checked with the server' : 'not checked (--no-verify)'
  return `${result.replaced ? 'replaced' : 'stored'} ${result.agent}'s token for ${result.server} in ${result.file} (${checked}); ${result.agent}'s hooks and MCP server now use it`
}

export function renderLogout(result: AuthLogoutResult): string {
  const whose = result.agent === '*' ? 'every token' : `${result.agent}'s token`
  return result.removed ? `removed ${whose} for ${result.server} from ${result.file}` : `no ${result.agent === '*' ? 'token' : `token of ${result.agent}`} stored for ${result.server} in ${result.file}; nothing changed`
}

export function renderAuthStatus(result: AuthStatusResult): string {
  const lines = [`server: ${result.server ?? '(none: pass --server, set JARVIS_SERVER or run jarvis init)'}`]
  for (const agent of result.agents) {
    const from = agent.source === 'none' ? 'no token' : agent.source === 'agent' ? `its own, ${agent.from}` : `${agent.from}${agent.owner ? ` (stored as ${agent.owner}'s)` : ''}`
    lines.push(`  ${agent.agent.padEnd(9)} ${from}`)
  }
  return lines.join('\n')
}
