import {mkdir, readFile, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, describe, expect, it} from 'vitest'

import {BadInputError} from '../../src/errors.js'
import {
  DEFAULT_AGENTS,
  defaultDataDir,
  parseTokenMap,
  resolveTokens,
  TOKENS_ENV,
  tokensByAgent,
} from '../../src/server/config.js'
import {Cleanup, tempDir} from './temp.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

describe('defaultDataDir', () => {
  it('uses $XDG_DATA_HOME/jarvis when it is absolute, else ~/.local/share/jarvis', () => {
    expect(defaultDataDir({XDG_DATA_HOME: '/data'}, '/home/u')).toBe('/data/jarvis')
    expect(defaultDataDir({}, '/home/u')).toBe('/home/u/.local/share/jarvis')
    expect(defaultDataDir({XDG_DATA_HOME: ''}, '/home/u')).toBe('/home/u/.local/share/jarvis')
    expect(defaultDataDir({XDG_DATA_HOME: 'relative/dir'}, '/home/u')).toBe('/home/u/.local/share/jarvis')
  })
})

describe('parseTokenMap', () => {
  it('accepts token → agent id', () => {
    expect(parseTokenMap('{"abcdefgh12": "claude"}', 'f.json')).toEqual({abcdefgh12: 'claude'})
  })

  it.each([
    ['not json', /f\.json: not valid JSON/],
    ['[]', /f\.json: must be a JSON object/],
    ['{}', /f\.json: .*at least one token/],
    ['{"abcdefgh12": 3}', /f\.json: token #1: agent id/],
    ['{"abcdefgh12": "../x"}', /f\.json: token #1: agent id must be an agent id/],
    ['{"short": "claude"}', /f\.json: .*token #1 \(for agent "claude"\) must be 8-512/],
    ['{"has space in it": "claude"}', /token #1/],
  ])('refuses %s naming the file and field', (text, message) => {
    let error: unknown
    try {
      parseTokenMap(text, 'f.json')
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(BadInputError)
    expect((error as Error).message).toMatch(message)
    expect((error as Error).message).not.toContain('has space in it')
  })
})

describe('resolveTokens', () => {
  it('prefers the option, then the file, then the environment', async () => {
    const dir = cleanup.dir(await tempDir())
    const file = join(dir, 'tokens.file.json')
    await writeFile(file, JSON.stringify({'file-token-1': 'gemini'}), {mode: 0o600})
    const env = {[TOKENS_ENV]: JSON.stringify({'env-token-1': 'chatgpt'})}
    expect(await resolveTokens({tokens: {'opt-token-1': 'claude'}, tokensFile: file, env, dataDir: dir})).toMatchObject({
      source: 'option',
      tokens: {'opt-token-1': 'claude'},
      byAgent: null,
    })
    expect(await resolveTokens({tokensFile: file, env, dataDir: dir})).toMatchObject({source: 'file', file, tokens: {'file-token-1': 'gemini'}, warnings: []})
    expect(await resolveTokens({env, dataDir: dir})).toMatchObject({source: 'env', tokens: {'env-token-1': 'chatgpt'}})
    await expect(resolveTokens({env: {[TOKENS_ENV]: '{"x": 1}'}, dataDir: dir})).rejects.toThrow(/JARVIS_SERVER_TOKENS/)
    await expect(resolveTokens({tokensFile: join(dir, 'missing.json'), env: {}, dataDir: dir})).rejects.toThrow(/missing\.json.*ENOENT/)
  })

  it('warns about a tokens file others can read', async () => {
    const dir = cleanup.dir(await tempDir())
    const file = join(dir, 'open.json')
    await writeFile(file, JSON.stringify({'file-token-1': 'gemini'}), {mode: 0o644})
    const resolved = await resolveTokens({tokensFile: file, env: {}, dataDir: dir})
    expect(resolved.warnings.join('\n')).toMatch(/readable by other users/)
  })

  it('generates tokens.json (0600, 32-byte base64url tokens, one per agent) and reuses it', async () => {
    const root = cleanup.dir(await tempDir())
    const dataDir = join(root, 'nested', 'data')
    const first = await resolveTokens({env: {}, dataDir})
    expect(first).toMatchObject({source: 'data-dir', generated: true, file: join(dataDir, 'tokens.json')})
    expect((await stat(join(dataDir, 'tokens.json'))).mode & 0o777).toBe(0o600)
    expect(Object.keys(first.byAgent ?? {}).sort()).toEqual([...DEFAULT_AGENTS].sort())
    for (const token of Object.values(first.byAgent ?? {})) {
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(Buffer.from(token, 'base64url')).toHaveLength(32)
    }
    const onDisk = JSON.parse(await readFile(join(dataDir, 'tokens.json'), 'utf8'))
    expect(tokensByAgent(onDisk)).toEqual(first.byAgent)
    const second = await resolveTokens({env: {}, dataDir})
    expect(second).toMatchObject({generated: false, byAgent: first.byAgent, warnings: []})
  })

  it('reports a broken tokens.json in the data directory by name', async () => {
    const dataDir = cleanup.dir(await tempDir())
    await mkdir(dataDir, {recursive: true})
    await writeFile(join(dataDir, 'tokens.json'), '{"abcdefgh12": ', {mode: 0o600})
    await expect(resolveTokens({env: {}, dataDir})).rejects.toThrow(/tokens\.json: not valid JSON/)
  })
})
