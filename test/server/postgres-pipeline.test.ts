/**
 * The round trips of a write transaction pipelined (src/server/storage/postgres-pipeline.ts), on a real PostgreSQL:
 * BEGIN, a lock and a read with parameters in one; the last statement with its COMMIT in one. What they store and
 * answer, and which failure is which — a statement that fails stores nothing and leaves the transaction to be rolled
 * back; a COMMIT that fails is told apart (a group commit must not try its items again).
 */
import pg from 'pg'
import {afterEach, describe, expect, it} from 'vitest'

import {LastStatementFailed, runAfter, runThenCommit} from '../../src/server/storage/postgres-pipeline.js'
import {freshDatabase} from '../helpers/postgres.js'

const clients: pg.Client[] = []
afterEach(async () => {
  for (const client of clients.splice(0)) await client.end()
})

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({connectionString: url})
  await client.connect()
  clients.push(client)
  return client
}

async function setup(): Promise<{writer: pg.Client; reader: pg.Client}> {
  const url = await freshDatabase()
  const writer = await connect(url)
  const reader = await connect(url)
  await writer.query('CREATE TABLE notes (id integer PRIMARY KEY, body text NOT NULL CHECK (body <> \'\'))')
  await writer.query('CREATE TABLE once (id integer, CONSTRAINT once_id UNIQUE (id) DEFERRABLE INITIALLY DEFERRED)')
  return {writer, reader}
}

const insert = (id: number, body: string) => ({name: 'notes_insert', text: 'INSERT INTO notes (id, body) VALUES ($1, $2) RETURNING id, body', values: [id, body]})
const ids = async (client: pg.Client, table = 'notes') => (await client.query<{id: number}>(`SELECT id FROM ${table} ORDER BY id`)).rows.map((row) => row.id)

describe('the last statement with its COMMIT', () => {
  it('answers the statement\'s rows and commits everything the transaction wrote, again and again on one connection', async () => {
    const {writer, reader} = await setup()
    for (const id of [1, 3]) {
      await writer.query('BEGIN')
      await writer.query('INSERT INTO notes (id, body) VALUES ($1, $2)', [id, 'before'])
      const result = await runThenCommit<{id: number; body: string}>(writer, insert(id + 1, 'last'))
      expect(result.rows).toEqual([{id: id + 1, body: 'last'}])
    }
    expect(await ids(reader)).toEqual([1, 2, 3, 4])
    // The connection is out of the transaction: a statement now runs on its own.
    await writer.query('INSERT INTO notes (id, body) VALUES (9, \'alone\')')
    expect(await ids(reader)).toEqual([1, 2, 3, 4, 9])
  })

  it('stores nothing when the statement fails: the error is the statement\'s, and the transaction rolls back', async () => {
    const {writer, reader} = await setup()
    await writer.query('BEGIN')
    await writer.query('INSERT INTO notes (id, body) VALUES (1, \'before\')')
    const failed = await runThenCommit(writer, insert(2, '')).catch((error: unknown) => error)
    expect(failed).toBeInstanceOf(LastStatementFailed)
    expect(failed).toMatchObject({stage: 'statement', cause: expect.objectContaining({code: '23514'})})
    // The COMMIT was skipped: the transaction is still open, aborted, until it is rolled back.
    await expect(writer.query('SELECT 1')).rejects.toThrow(/current transaction is aborted/)
    await writer.query('ROLLBACK')
    expect(await ids(reader)).toEqual([])
    // And the connection works as before, the named statement included.
    await writer.query('BEGIN')
    expect((await runThenCommit(writer, insert(5, 'after'))).rows).toEqual([{id: 5, body: 'after'}])
    expect(await ids(reader)).toEqual([5])
  })

  it('tells a COMMIT that fails from a statement that fails, and stores nothing', async () => {
    const {writer, reader} = await setup()
    await writer.query('BEGIN')
    await writer.query('INSERT INTO once (id) VALUES (1)')
    // The duplicate passes the statement (the constraint is checked at COMMIT) and fails the COMMIT.
    const failed = await runThenCommit(writer, {name: 'once_insert', text: 'INSERT INTO once (id) VALUES ($1)', values: [1]}).catch((error: unknown) => error)
    expect(failed).toBeInstanceOf(LastStatementFailed)
    expect(failed).toMatchObject({stage: 'commit', cause: expect.objectContaining({code: '23505'})})
    expect(await ids(reader, 'once')).toEqual([])
    await writer.query('INSERT INTO once (id) VALUES (2)')
    expect(await ids(reader, 'once')).toEqual([2])
  })
})

describe('BEGIN and the first statements with a read', () => {
  const read = (ids: number[]) => ({name: 'notes_read', text: 'SELECT id, body FROM notes WHERE id = ANY($1::int[]) ORDER BY id', values: [ids]})

  it('answers each leading statement\'s rows and the read\'s, inside the transaction it began', async () => {
    const {writer, reader} = await setup()
    await writer.query('INSERT INTO notes (id, body) VALUES (1, \'one\'), (2, \'two\'), (3, \'three\')')
    for (let round = 0; round < 2; round++) {
      const started = await runAfter(writer, ['BEGIN', 'SELECT pg_advisory_xact_lock(42)', 'SELECT count(*)::int AS n FROM notes'], read([1, 3]))
      expect(started.leading.map((result) => result.command)).toEqual(['BEGIN', 'SELECT', 'SELECT'])
      expect(started.leading[2].rows).toEqual([{n: 3 + 2 * round}])
      expect(started.result.rows).toEqual([{id: 1, body: 'one'}, {id: 3, body: 'three'}])
      // Inside the transaction: what it writes is not seen by another connection until the COMMIT.
      await writer.query('INSERT INTO notes (id, body) VALUES ($1, \'more\')', [10 + round])
      expect(await ids(reader)).not.toContain(10 + round)
      await runThenCommit(writer, insert(20 + round, 'last'))
      expect(await ids(reader)).toEqual(expect.arrayContaining([10 + round, 20 + round]))
    }
  })

  it('answers the first error when a leading statement fails, runs nothing after it, and the connection goes on', async () => {
    const {writer, reader} = await setup()
    // A connection that has not prepared the read yet: it is parsed in the same round trip, before BEGIN.
    const failed = runAfter(writer, ['BEGIN', 'INSERT INTO notes (id, body) VALUES (1, \'\')'], read([1]))
    await expect(failed).rejects.toMatchObject({code: '23514'})
    await writer.query('ROLLBACK')
    expect(await ids(reader)).toEqual([])
    // The read, prepared on this connection or not, works on it afterwards.
    const again = await runAfter(writer, ['BEGIN'], read([1]))
    expect(again.result.rows).toEqual([])
    await runThenCommit(writer, insert(1, 'one'))
    expect((await runAfter(writer, ['BEGIN'], read([1]))).result.rows).toEqual([{id: 1, body: 'one'}])
    await writer.query('ROLLBACK')
  })
})
