import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {explainTokenRefusal, foreignTokenError, readUserConfig, resolveIdentity, userConfigSchema} from '../../src/ops/index.js'

const server = 'http://127.0.0.1:8787'
/** Fake tokens built at run time (no secret in the repo). */
const tok = (name: string) => `tk-${name}-${'x'.repeat(8)}`
const env = {HOME: '/home/ada', XDG_CONFIG_HOME: ''}

describe('resolveIdentity', () => {
  it('flag > environment > tree > user config, and an empty variable means unset', () => {
    const user = {server: 'http://user:1', agentId: 'gemini'}
    const tree = {server: 'http://tree:1', agentId: 'claude' as const}
    expect(resolveIdentity({flags: {server: 'http://flag:1'}, env: {JARVIS_SERVER: 'http://env:1'}, tree, user}).server).toBe('http://flag:1')
    expect(resolveIdentity({flags: {}, env: {JARVIS_SERVER: 'http://env:1/'}, tree, user}).server).toBe('http://env:1')
    expect(resolveIdentity({flags: {}, env: {JARVIS_SERVER: ''}, tree, user})).toMatchObject({server: 'http://tree:1', agentId: 'claude'})
    expect(resolveIdentity({flags: {}, env: {}, user})).toMatchObject({server: 'http://user:1', agentId: 'gemini'})
  })

  it('several agents on one machine: the token stored for the agent that runs wins over JARVIS_TOKEN, which serves the others', () => {
    const user = userConfigSchema().parse({token: tok('fallback'), tokens: {[server]: {claude: tok('claude'), gemini: tok('gemini')}}})
    const as = (agent: string, vars: NodeJS.ProcessEnv = {}) => resolveIdentity({flags: {server, agent}, env: vars, user})
    // One exported token (claude's) and gemini's own in the user config: each agent reads as itself.
    expect(as('gemini', {JARVIS_TOKEN: tok('claude')})).toMatchObject({token: tok('gemini'), tokenFrom: {kind: 'agent', server, agent: 'gemini'}})
    expect(as('claude', {JARVIS_TOKEN: tok('claude')})).toMatchObject({token: tok('claude'), tokenFrom: {kind: 'agent'}})
    // An agent with nothing stored for it takes JARVIS_TOKEN, then the config's `token`.
    expect(as('openclaw', {JARVIS_TOKEN: tok('env')})).toMatchObject({token: tok('env'), tokenFrom: {kind: 'env'}})
    expect(as('openclaw')).toMatchObject({token: tok('fallback'), tokenFrom: {kind: 'user'}})
    // The agent may come from JARVIS_AGENT or the tree as well as from --agent.
    expect(resolveIdentity({flags: {server}, env: {JARVIS_AGENT: 'gemini', JARVIS_TOKEN: tok('claude')}, user}).token).toBe(tok('gemini'))
    expect(resolveIdentity({flags: {}, env: {JARVIS_TOKEN: tok('claude')}, tree: {server, agentId: 'gemini'}, user}).token).toBe(tok('gemini'))
  })

  it('one token for every agent of a server yields to JARVIS_TOKEN, as before', () => {
    const single = userConfigSchema().parse({tokens: {[server]: tok('one')}})
    expect(resolveIdentity({flags: {server, agent: 'gemini'}, env: {}, user: single})).toMatchObject({token: tok('one'), tokenFrom: {kind: 'server', server}})
    expect(resolveIdentity({flags: {server, agent: 'gemini'}, env: {JARVIS_TOKEN: tok('env')}, user: single})).toMatchObject({token: tok('env'), tokenFrom: {kind: 'env'}})
  })

  it('knows whose token JARVIS_TOKEN is when the user config stores it under an agent', () => {
    const user = userConfigSchema().parse({tokens: {[server]: {claude: tok('claude')}}})
    const gemini = resolveIdentity({flags: {server, agent: 'gemini'}, env: {JARVIS_TOKEN: tok('claude')}, user})
    expect(gemini).toMatchObject({token: tok('claude'), tokenFrom: {kind: 'env'}, tokenOwner: 'claude'})
    expect(resolveIdentity({flags: {server, agent: 'gemini'}, env: {JARVIS_TOKEN: tok('other')}, user}).tokenOwner).toBeUndefined()
  })

  it('the precedence holds for any user config and environment (property)', () => {
    const agents = ['claude', 'gemini', 'chatgpt', 'openclaw']
    const maybeToken = fc.option(fc.constantFrom(tok('a'), tok('b'), tok('c')), {nil: undefined})
    fc.assert(
      fc.property(
        fc.constantFrom(...agents),
        fc.dictionary(fc.constantFrom(...agents), fc.constantFrom(tok('a'), tok('b'), tok('c'))),
        fc.boolean(),
        maybeToken,
        maybeToken,
        maybeToken,
        (agent, perAgent, asMap, oneForServer, userToken, envToken) => {
          const entry = asMap ? perAgent : oneForServer
          const user = userConfigSchema().parse({...(userToken ? {token: userToken} : {}), ...(entry === undefined ? {} : {tokens: {[server]: entry}})})
          const identity = resolveIdentity({flags: {server, agent}, env: envToken ? {JARVIS_TOKEN: envToken} : {}, user})
          const expected = (asMap ? perAgent[agent] : undefined) ?? envToken ?? (asMap ? undefined : oneForServer) ?? userToken
          expect(identity.token).toBe(expected)
          expect(identity.tokenFrom === undefined).toBe(expected === undefined)
        },
      ),
    )
  })
})

describe('the one sentence for a token of another agent', () => {
  const user = userConfigSchema().parse({tokens: {[server]: {claude: tok('claude')}}})

  it('is known before any request when the user config says whose token it is', () => {
    const gemini = resolveIdentity({flags: {server, agent: 'gemini'}, env: {JARVIS_TOKEN: tok('claude')}, user})
    const error = foreignTokenError(gemini, env)
    expect(error?.exit).toBe(3)
    expect(error?.message).toBe(
      "gemini runs with JARVIS_TOKEN, which holds claude's token: store gemini's own with `jarvis auth login --agent gemini --with-token` (token on stdin, kept in ~/.config/jarvis/config.json)",
    )
    expect(foreignTokenError(resolveIdentity({flags: {server, agent: 'claude'}, env: {JARVIS_TOKEN: tok('claude')}, user}), env)).toBeUndefined()
  })

  it("turns the server's 403 naming the token's agent into that sentence; other refusals keep theirs", () => {
    const gemini = resolveIdentity({flags: {server, agent: 'gemini'}, env: {JARVIS_TOKEN: tok('unknown')}, user: {}})
    const refused = explainTokenRefusal(gemini, 403, 'querystring/agent_id names "gemini", but the token belongs to claude', env)
    expect(refused?.message).toMatch(/^gemini runs with JARVIS_TOKEN, which holds claude's token: store gemini's own with `jarvis auth login --agent gemini --with-token`/)
    expect(refused?.data).toMatchObject({reason: 'token', token_owner: 'claude', token_from: 'env', status: 403})
    expect(explainTokenRefusal(gemini, 403, 'agent gemini may not read agent:claude', env)).toBeUndefined()
  })

  it('a 401 names where the refused token came from', () => {
    const fromEnv = resolveIdentity({flags: {server, agent: 'gemini'}, env: {JARVIS_TOKEN: tok('old')}, user: {}})
    expect(explainTokenRefusal(fromEnv, 401, 'the token is not known to this server', env)?.message).toBe(
      `the jarvis server at ${server} refused JARVIS_TOKEN (HTTP 401: the token is not known to this server): set JARVIS_TOKEN to gemini's token, or store gemini's own with \`jarvis auth login --agent gemini --with-token\` (token on stdin, kept in ~/.config/jarvis/config.json)`,
    )
    const stored = resolveIdentity({flags: {server, agent: 'claude'}, env: {JARVIS_TOKEN: tok('new')}, user})
    expect(explainTokenRefusal(stored, 401, 'the token has expired', env)?.message).toContain(`refused the token stored for claude in ~/.config/jarvis/config.json (tokens["${server}"]["claude"]) (HTTP 401: the token has expired)`)
    const none = resolveIdentity({flags: {server, agent: 'gemini'}, env: {}, user: {}})
    expect(explainTokenRefusal(none, 401, 'missing Authorization: Bearer <token> header', env)?.message).toMatch(/^no token for gemini on http:\/\/127\.0\.0\.1:8787: store gemini's own with/)
  })
})

describe('readUserConfig', () => {
  it('a missing user config is an empty one; one that cannot be read is bad input naming it', async () => {
    const home = await mkdtemp(join(tmpdir(), 'jarvis-user-config-'))
    try {
      const at = {XDG_CONFIG_HOME: home}
      expect(await readUserConfig(at)).toEqual({})
      await mkdir(join(home, 'jarvis', 'config.json'), {recursive: true})
      await expect(readUserConfig(at)).rejects.toMatchObject({
        exit: 2,
        message: `${join(home, 'jarvis', 'config.json')} is a directory, not jarvis's user config file: remove or rename that directory (jarvis keeps your settings and agent tokens in that file)`,
      })
      await rm(join(home, 'jarvis'), {recursive: true})
      await writeFile(join(home, 'jarvis'), '')
      await expect(readUserConfig(at)).rejects.toThrow(/config\.json: a folder on its path is a file: remove or rename that file/)
    } finally {
      await rm(home, {recursive: true, force: true})
    }
  })
})
