/**
 * A PostgreSQL database another application already uses is refused with a message that says so, and nothing of
 * the other application is changed: not "newer than this jarvis; upgrade jarvis", not "relation files already exists".
 */
import pg from 'pg'
import {afterEach, describe, expect, it} from 'vitest'

import {PostgresStorage} from '../../src/server/storage/postgres.js'
import {freshDatabase} from '../helpers/postgres.js'

const clients: pg.Client[] = []
afterEach(async () => {
  for (const client of clients.splice(0)) await client.end()
})

async function databaseWith(sql: string): Promise<{url: string; client: pg.Client}> {
  const url = await freshDatabase()
  const client = new pg.Client({connectionString: url})
  await client.connect()
  clients.push(client)
  await client.query(sql)
  return {url, client}
}

describe('a PostgreSQL database another application uses', () => {
  it('with its own schema_migrations (Rails): refused as another application, its rows kept', async () => {
    const {url, client} = await databaseWith("CREATE TABLE schema_migrations (version varchar PRIMARY KEY); INSERT INTO schema_migrations VALUES ('20240101000000')")
    await expect(PostgresStorage.open(url)).rejects.toThrow(/is used by another application \(its schema_migrations table is not the one jarvis keeps\); give jarvis a database of its own/)
    // A command that only reads (serve token list, export) says the same, not "newer than this jarvis".
    await expect(PostgresStorage.open(url, {migrate: false})).rejects.toThrow(/is used by another application \(its schema_migrations table is not the one jarvis keeps\)/)
    expect((await client.query('SELECT version FROM schema_migrations')).rows).toEqual([{version: '20240101000000'}])
    expect((await client.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'")).rows[0].n).toBe(1)
  })

  it('with a files table of its own: refused as another application, the table untouched', async () => {
    const {url, client} = await databaseWith("CREATE TABLE files (id serial PRIMARY KEY, name text); INSERT INTO files (name) VALUES ('invoice.pdf')")
    await expect(PostgresStorage.open(url)).rejects.toThrow(/is used by another application \(it has a files table that jarvis did not make\)/)
    expect((await client.query('SELECT name FROM files')).rows).toEqual([{name: 'invoice.pdf'}])
    expect((await client.query("SELECT to_regclass('schema_migrations') IS NULL AS gone")).rows[0].gone).toBe(true)
  })

  it('an empty database, and then the same database again, open', async () => {
    const url = await freshDatabase()
    for (let i = 0; i < 2; i++) await (await PostgresStorage.open(url)).close()
  })
})
