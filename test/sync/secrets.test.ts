/**
 * Secrets and personal data never leave this machine in a push: a sync scans every file it is about to send and
 * leaves one that holds a secret exactly as it is, syncing the rest, and exits 5 naming the file, what was found and
 * where. Against a server that scans nothing itself (the protocol-only stand-in), so that what reaches the server
 * is what the client sent. The server's own scan of every push is test/server/protocol.test.ts.
 */
import {describe, expect, it} from 'vitest'

import {ExitCode, JarvisError} from '../../src/errors.js'
import {useProtocolStandIn} from '../compat/protocol-stand-in.js'
import {fakeGithubToken} from '../files/helpers.js'

const {standIn, client} = useProtocolStandIn()

const sent = () => JSON.stringify(standIn().requests.filter((request) => request.route === 'POST /api/memory/push').map((request) => request.body))

describe('a file holding a secret or personal data', () => {
  it('is left on this machine as it is while the rest syncs; exit 5 names the file, what was found and where', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    const token = fakeGithubToken()
    const email = ['dana', 'acme-corp.io'].join('@')
    await a.write('notes/ci.md', `# CI\n\nthe release job uses ${token}\n`)
    await a.write('people.md', `ask ${email} about billing\n`)
    await a.write('plan.md', '# Plan\n')
    const error = await a.sync().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(JarvisError)
    expect((error as JarvisError).exit).toBe(ExitCode.secretRefused)
    expect((error as JarvisError).message).toBe(
      'not synced, left on this machine as they are: secrets and personal data never leave it; remove them and sync again:\n' +
        '- a GitHub token in .memory/notes/ci.md at line 3, column 22\n' +
        '- an e-mail address in .memory/people.md at line 1, column 5',
    )
    expect((error as JarvisError).message).not.toContain(token)
    // Neither the secret nor the address ever reached the server; the clean file did.
    expect(sent()).not.toContain(token)
    expect(sent()).not.toContain(email)
    expect([...standIn().files.keys()]).toEqual(['plan.md'])
    expect(await a.read('notes/ci.md')).toBe(`# CI\n\nthe release job uses ${token}\n`)
    expect((await b.sync()).pulled).toEqual(['plan.md'])

    // Removed: the next sync sends it.
    await a.write('notes/ci.md', '# CI\n\nthe release job uses the CI_TOKEN secret of the repository\n')
    await expect(a.sync()).rejects.toMatchObject({exit: ExitCode.secretRefused, message: expect.stringContaining('.memory/people.md')})
    expect([...standIn().files.keys()].sort()).toEqual(['notes/ci.md', 'plan.md'])
  })

  it('an edit that adds one keeps the file as last synced on the server and the edit here, until it is removed', async () => {
    const a = await client('claude')
    await a.write('PROJECT_MEMORY.md', '# P\n\n- deploy on Fridays\n')
    await a.sync()
    const token = fakeGithubToken()
    await a.write('PROJECT_MEMORY.md', `# P\n\n- deploy on Fridays\n- deploy key ${token}\n`)
    const error = await a.sync().catch((caught: unknown) => caught)
    expect((error as JarvisError).exit).toBe(ExitCode.secretRefused)
    expect(standIn().files.get('PROJECT_MEMORY.md')!.content).toBe('# P\n\n- deploy on Fridays\n')
    expect(await a.read('PROJECT_MEMORY.md')).toContain(token)
    expect(sent()).not.toContain(token)
    await a.write('PROJECT_MEMORY.md', '# P\n\n- deploy on Fridays\n- the deploy key is in the vault\n')
    expect((await a.sync()).pushed).toEqual(['PROJECT_MEMORY.md'])
  })
})
