import {describe, expect, it} from 'vitest'

import {resolveIdentity, userConfigSchema} from '../../src/ops/index.js'

const server = 'http://127.0.0.1:8787'

describe('resolveIdentity', () => {
  it('flag > environment > tree > user config, and an empty variable means unset', () => {
    const user = {server: 'http://user:1', agentId: 'gemini'}
    const tree = {server: 'http://tree:1', agentId: 'claude' as const}
    expect(resolveIdentity({flags: {server: 'http://flag:1'}, env: {JARVIS_SERVER: 'http://env:1'}, tree, user}).server).toBe('http://flag:1')
    expect(resolveIdentity({flags: {}, env: {JARVIS_SERVER: 'http://env:1/'}, tree, user}).server).toBe('http://env:1')
    expect(resolveIdentity({flags: {}, env: {JARVIS_SERVER: ''}, tree, user})).toMatchObject({server: 'http://tree:1', agentId: 'claude'})
    expect(resolveIdentity({flags: {}, env: {}, user})).toMatchObject({server: 'http://user:1', agentId: 'gemini'})
  })

  it('several agents on one machine: each reads with its own token from the user config', () => {
    const user = userConfigSchema.parse({token: 'fallback', tokens: {[server]: {claude: 'claude-token', gemini: 'gemini-token'}}})
    const as = (agent: string, env: NodeJS.ProcessEnv = {}) => resolveIdentity({flags: {server, agent}, env, user}).token
    expect(as('claude')).toBe('claude-token')
    expect(as('gemini')).toBe('gemini-token')
    expect(as('openclaw')).toBe('fallback')
    expect(as('gemini', {JARVIS_TOKEN: 'from-env'})).toBe('from-env')
    const single = userConfigSchema.parse({tokens: {[server]: 'one-token'}})
    expect(resolveIdentity({flags: {server, agent: 'gemini'}, env: {}, user: single}).token).toBe('one-token')
  })
})
