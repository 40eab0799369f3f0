import {readFile, rmdir, stat, utimes, writeFile} from 'node:fs/promises'
import {hostname} from 'node:os'
import {join} from 'node:path'

import {describe, expect, it} from 'vitest'

import {LockedError} from '../../src/errors.js'
import {isTreeLockHeld, LOCK_STALE_MS, readLockOwner, readMemoryFile, withTreeLock} from '../../src/store/index.js'
import {spawnHelper, tempTree} from './helpers/temp.js'

const lockDir = (root: string) => join(root, '.nexus', 'lock')
const ownerFile = (root: string) => join(root, '.nexus', 'lock-owner.json')

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  )
}

describe('withTreeLock (one process)', () => {
  it('records the owner while held and cleans up after', async () => {
    const root = await tempTree()
    const result = await withTreeLock(root, {timeoutMs: 1000, command: 'test'}, async (lock) => {
      const owner = JSON.parse(await readFile(ownerFile(root), 'utf8'))
      expect(owner).toMatchObject({pid: process.pid, host: hostname(), command: 'test'})
      expect(new Date(owner.since).toISOString()).toBe(owner.since)
      expect(lock.owner.since).toBe(owner.since)
      expect(await readLockOwner(root)).toMatchObject({pid: process.pid})
      expect(await isTreeLockHeld(root)).toBe(true)
      return 42
    })
    expect(result).toBe(42)
    expect(await exists(lockDir(root))).toBe(false)
    expect(await exists(ownerFile(root))).toBe(false)
    expect(await isTreeLockHeld(root)).toBe(false)
  })

  it('releases when the callback throws', async () => {
    const root = await tempTree()
    await expect(withTreeLock(root, {timeoutMs: 1000}, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    expect(await exists(lockDir(root))).toBe(false)
    await withTreeLock(root, {timeoutMs: 0}, async () => {})
  })

  it('refuses re-entrant use with a clear error, and serialises concurrent callers', async () => {
    const root = await tempTree()
    await withTreeLock(root, {timeoutMs: 1000}, async () => {
      await expect(withTreeLock(root, {timeoutMs: 1000}, async () => {})).rejects.toMatchObject({code: 'LOCK_REENTRANT'})
    })
    const order: string[] = []
    await Promise.all(
      ['a', 'b', 'c'].map((name) =>
        withTreeLock(root, {timeoutMs: 5000}, async () => {
          order.push(`${name}:in`)
          await new Promise((resolve) => setTimeout(resolve, 20))
          order.push(`${name}:out`)
        }),
      ),
    )
    for (let i = 0; i < order.length; i += 2) expect(order[i].split(':')[0]).toBe(order[i + 1].split(':')[0])
  })

  it('creates .nexus/ when a cloned tree has only .memory/', async () => {
    const root = await tempTree()
    await rmdir(join(root, '.nexus'))
    await withTreeLock(root, {timeoutMs: 0}, async () => {})
    expect(await exists(join(root, '.nexus'))).toBe(true)
  })

  it('takes over a lock whose mtime is older than the stale window (a holder on another host, or hung)', async () => {
    const root = await tempTree()
    const {mkdir} = await import('node:fs/promises')
    await mkdir(lockDir(root))
    await writeFile(ownerFile(root), JSON.stringify({pid: 1, host: 'another-host', since: '2026-01-01T00:00:00.000Z'}))
    await expect(withTreeLock(root, {timeoutMs: 200}, async () => {})).rejects.toBeInstanceOf(LockedError)
    const old = new Date(Date.now() - LOCK_STALE_MS - 5000)
    await utimes(lockDir(root), old, old)
    await withTreeLock(root, {timeoutMs: 500}, async () => {})
  })

  it('takes over, without the stale window, a lock whose creator was killed before it recorded itself', async () => {
    const root = await tempTree()
    const {mkdir} = await import('node:fs/promises')
    await mkdir(lockDir(root)) // what a holder killed right after creating the lock leaves: the directory, no record
    // Fresh, it may be a live holder about to write its record: waited for.
    await expect(withTreeLock(root, {timeoutMs: 200}, async () => {})).rejects.toBeInstanceOf(LockedError)
    await new Promise((resolve) => setTimeout(resolve, 2100))
    // Older than any record would take, yet far from stale (10 s): taken over now, well inside a 1 s wait.
    await withTreeLock(root, {timeoutMs: 1000}, async () => {})
    expect(await isTreeLockHeld(root)).toBe(false)
  })

  it('fails safely instead of crashing when the lock is lost while held', async () => {
    const root = await tempTree()
    const outcome = withTreeLock(root, {timeoutMs: 0}, async (lock) => {
      await rmdir(lockDir(root)) // somebody removes the lock behind our back
      const deadline = Date.now() + 15_000
      while (!lock.signal.aborted && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      expect(lock.signal.aborted).toBe(true)
      expect(() => lock.assertHeld()).toThrow(/lost/)
      return 'finished'
    })
    await expect(outcome).rejects.toMatchObject({code: 'LOCK_COMPROMISED', exit: 1})
    await withTreeLock(root, {timeoutMs: 0}, async () => {}) // and the tree is usable again
  })
})

describe('withTreeLock (real processes)', () => {
  it('makes a second process fail with LockedError (exit 6) naming the holder and since when', async () => {
    const root = await tempTree()
    const holder = spawnHelper('lock-child.ts', ['hold', root])
    try {
      await holder.waitFor('locked')
      const owner = JSON.parse(await readFile(ownerFile(root), 'utf8'))
      expect(owner.pid).toBe(holder.proc.pid)
      const waiter = spawnHelper('lock-child.ts', ['try', root, '500'])
      const {code} = await waiter.exited
      const reported = JSON.parse(waiter.stdout().trim())
      expect(reported.code).toBe('LOCKED')
      expect(reported.exit).toBe(6)
      expect(code).toBe(6)
      expect(reported.data).toMatchObject({pid: holder.proc.pid, since: owner.since, host: hostname()})
      expect(reported.message).toContain(String(holder.proc.pid))
      expect(reported.message).toContain(owner.since)
    } finally {
      holder.proc.kill('SIGKILL')
      await holder.exited
    }
  })

  it('recovers at once from a holder killed with SIGKILL (no waiting for the stale window)', async () => {
    const root = await tempTree()
    const holder = spawnHelper('lock-child.ts', ['hold', root])
    await holder.waitFor('locked')
    holder.proc.kill('SIGKILL')
    expect((await holder.exited).signal).toBe('SIGKILL')
    // the dead process left its lock behind, made fresh here (well inside the stale window, however slow the machine)
    expect(await exists(lockDir(root))).toBe(true)
    await utimes(lockDir(root), new Date(), new Date())
    // a timeout shorter than the stale window: only the dead-pid check can let this through
    const got = await withTreeLock(root, {timeoutMs: 1000}, async (lock) => lock.owner.pid)
    expect(got).toBe(process.pid)
    // and another process can too
    const next = spawnHelper('lock-child.ts', ['try', root, '1000'])
    expect((await next.exited).code).toBe(0)
    expect(JSON.parse(next.stdout().trim())).toEqual({acquired: true})
  })

  it('serialises two processes incrementing a counter 20 times each: the count is 40', async () => {
    const root = await tempTree()
    const workers = [spawnHelper('lock-child.ts', ['count', root, '20']), spawnHelper('lock-child.ts', ['count', root, '20'])]
    const exits = await Promise.all(workers.map((worker) => worker.exited))
    for (const [i, exit] of exits.entries()) expect(exit.code, workers[i].stderr()).toBe(0)
    expect(await readMemoryFile(root, 'counter')).toBe('40')
  })

  it('still serialises when several processes race to recover the lock of a killed holder', async () => {
    const root = await tempTree()
    const holder = spawnHelper('lock-child.ts', ['hold', root])
    await holder.waitFor('locked')
    holder.proc.kill('SIGKILL')
    await holder.exited
    const workers = [1, 2, 3].map(() => spawnHelper('lock-child.ts', ['count', root, '10']))
    const exits = await Promise.all(workers.map((worker) => worker.exited))
    for (const [i, exit] of exits.entries()) expect(exit.code, workers[i].stderr()).toBe(0)
    expect(await readMemoryFile(root, 'counter')).toBe('30')
  })
})
