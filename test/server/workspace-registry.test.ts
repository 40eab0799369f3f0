/**
 * The registry of a server's workspaces, over real SQLite storages: a workspace is opened once however many requests
 * ask for it together, a failed opening is tried again at the next request, each workspace's services write to its
 * own storage only, and closing closes every storage. And workspace names: strict, because they become paths and
 * schema names.
 */
import {rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, describe, expect, it} from 'vitest'

import {BadInputError} from '../../src/errors.js'
import {createKey, listKeys} from '../../src/server/keys.js'
import {startServer} from '../../src/server/start.js'
import {openStorage} from '../../src/server/storage/open.js'
import type {ServerStorage} from '../../src/server/storage/types.js'
import {checkWorkspaceName, isWorkspaceName} from '../../src/server/storage/workspace-name.js'
import {WorkspaceRegistry} from '../../src/server/workspaces.js'
import {call} from './helpers.js'
import {Cleanup, tempDir} from './temp.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

async function registry(options: {failFirst?: boolean} = {}) {
  const dataDir = cleanup.dir(await tempDir())
  const root = await openStorage({dataDir})
  const opened: string[] = []
  const storages: ServerStorage[] = []
  let failures = options.failFirst ? 1 : 0
  const workspaces = new WorkspaceRegistry({
    root,
    open: async (name) => {
      opened.push(name)
      if (failures-- > 0) throw new Error('the database is down')
      const storage = await openStorage({dataDir}, {workspace: name})
      storages.push(storage)
      return storage
    },
    now: () => new Date(),
    maxFileBytes: 1024,
    onAuditError: (error) => {
      throw error
    },
  })
  cleanup.add(() => workspaces.close())
  return {workspaces, root, opened, storages}
}

describe('WorkspaceRegistry', () => {
  it('opens a workspace once for requests that come together, and its services write to its storage only', async () => {
    const {workspaces, root, opened} = await registry()
    const [one, two] = await Promise.all([workspaces.get('team-a'), workspaces.get('team-a')])
    expect(one).toBe(two)
    expect(opened).toEqual(['team-a'])
    await one.memory.push({files: {'notes/a.md': 'A\n'}}, 'claude')
    expect((await one.storage.status()).files.map((file) => file.path)).toEqual(['notes/a.md'])
    expect((await root.status()).files).toEqual([])
    expect((await (await workspaces.root()).memory.status()).files).toEqual({})
  })

  it('tries a failed opening again at the next request', async () => {
    const {workspaces, opened} = await registry({failFirst: true})
    await expect(workspaces.get('team-b')).rejects.toThrow('the database is down')
    const workspace = await workspaces.get('team-b')
    expect(workspace.name).toBe('team-b')
    expect(opened).toEqual(['team-b', 'team-b'])
  })

  it('closes every storage when it closes, and opens nothing afterwards', async () => {
    const {workspaces, root, storages} = await registry()
    await workspaces.get('team-a')
    await workspaces.get('team-b')
    await workspaces.close()
    expect(await root.ping()).toBe(false)
    expect(await Promise.all(storages.map((storage) => storage.ping()))).toEqual([false, false])
    await expect(workspaces.get('team-c')).rejects.toThrow('closing')
  })
})

describe('a workspace whose storage cannot be opened', () => {
  it('a key whose workspace storage cannot be made is still made and printed; the missing audit entry is a warning', async () => {
    const dataDir = cleanup.dir(await tempDir())
    await writeFile(join(dataDir, 'workspaces'), 'in the way\n')
    const created = await createKey({dataDir, workspace: 'team-a', agent: 'claude'})
    expect(created.token).toMatch(/^jvk_/)
    expect(created.warnings).toEqual([expect.stringMatching(new RegExp(`key ${created.key.id} created .*the workspace team-a's audit log could not record it`))])
    expect((await listKeys({dataDir, workspace: 'team-a'})).map((key) => key.id)).toEqual([created.key.id])
  })

  it('answers 503 naming the workspace, keeps serving the others, and opens it at a later request', async () => {
    const dataDir = cleanup.dir(await tempDir())
    const server = await startServer({host: '127.0.0.1', port: 0, dataDir, tokens: {'t-default-token-0001': 'claude'}, logLevel: 'silent'})
    cleanup.add(() => server.close())
    const {token} = await createKey({dataDir, workspace: 'team-a', agent: 'claude'})
    // A file where the workspaces' directory should be (making the key made it): the workspace's SQLite file cannot be opened.
    await rm(join(dataDir, 'workspaces'), {recursive: true})
    await writeFile(join(dataDir, 'workspaces'), 'in the way\n')
    const refused = await call(server.url, token, 'GET', '/api/memory/status')
    expect(refused.status).toBe(503)
    expect(refused.body.message).toContain('the workspace team-a cannot be opened now')
    expect((await call(server.url, 't-default-token-0001', 'GET', '/api/memory/status')).status).toBe(200)
    await rm(join(dataDir, 'workspaces'))
    expect((await call(server.url, token, 'GET', '/api/memory/status')).status).toBe(200)
  })
})

describe('workspace names', () => {
  it('takes lower-case letters, digits and "-", 1 to 40, starting with a letter or digit', () => {
    for (const good of ['default', 'team-a', '0', 'a'.repeat(40), 'x-1-y']) expect(isWorkspaceName(good), good).toBe(true)
    for (const bad of ['', 'Team', 'team_a', '-a', 'a'.repeat(41), '../a', 'a/b', 'a b', 'é', "a'b"]) expect(isWorkspaceName(bad), bad).toBe(false)
  })

  it('refuses a bad one as bad input naming the field', () => {
    expect(() => checkWorkspaceName('Team_A', '--workspace')).toThrow(BadInputError)
    expect(() => checkWorkspaceName('Team_A', '--workspace')).toThrow('--workspace: "Team_A" is not a workspace name')
  })
})
