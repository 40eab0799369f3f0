/**
 * Fewer round trips for a write transaction on PostgreSQL: BEGIN, its first statements and a first read in one, and
 * the last statement with its COMMIT in one.
 *
 * node-postgres sends a statement with parameters as Parse, Bind, Describe, Execute and Sync, and waits for the
 * answer before it sends anything else. The extended query protocol allows any number of statements before one
 * Sync: here the statements that lead (BEGIN, a lock, a constant read) go before a statement's own messages, and a
 * COMMIT after them, in the same write. PostgreSQL runs them in order; when one fails it answers its error and skips
 * everything up to the Sync — so the COMMIT after a statement that failed does not run, and the transaction is left
 * to be rolled back, as before.
 *
 * What failed is told apart where a group commit depends on it (batches.ts): an error answered before the last
 * statement completed is the statement's (nothing is stored); an error after it is the COMMIT's, and a connection
 * lost once the COMMIT was sent leaves the outcome unknown — both are `stage: 'commit'`.
 */
import pg from 'pg'

/** A statement with parameters, prepared once per connection under `name` (its text never changes). */
export interface Statement {
  name: string
  text: string
  values: unknown[]
}

/** Sends a transaction's last statement with its COMMIT (the transaction is over once it is called). */
export type Last = <R extends pg.QueryResultRow = pg.QueryResultRow>(statement: Statement) => Promise<pg.QueryResult<R>>

/** The failure of a statement sent with its COMMIT: `statement` stored nothing; `commit` may have stored everything. */
export class LastStatementFailed extends Error {
  constructor(
    readonly stage: 'statement' | 'commit',
    readonly cause: unknown,
  ) {
    super((cause as Error)?.message ?? String(cause))
  }
}

interface Connection {
  parse(query: {text: string; name?: string}): void
  bind(config: {portal?: string; statement?: string; values?: unknown[]}): void
  describe(config: {type: 'P' | 'S'; name?: string}): void
  execute(config: {portal?: string; rows?: number}): void
  sync(): void
  submittedNamedStatements: Record<string, string>
}

declare module 'pg' {
  // The parts of Query that Pipelined uses and @types/pg does not declare (node-postgres 8, lib/query.js).
  interface Query {
    text: string
    name?: string
    prepare(connection: unknown): void
    hasBeenParsed(connection: unknown): boolean
    _getRows(connection: unknown, rows: number | undefined): void
    handleCommandComplete(message: unknown, connection: unknown): void
  }
}

/**
 * node-postgres's own Query (parameters, parsing of rows, named statements prepared once per connection), with
 * constant statements sent before its own (`leading`: each parsed, bound, described and executed on the unnamed
 * statement and portal) and COMMIT after it (`commit`), before its one Sync. Its named statement is parsed first
 * when the connection has not parsed it yet: node-postgres takes the first ParseComplete of a query for its named
 * statement's. `_getRows` is where Query sends its Execute and Sync; a Query with `rows` (a cursor) is never made here.
 */
class Pipelined extends pg.Query {
  /** CommandComplete messages received (one per statement that completed, the leading ones included). */
  completed = 0

  constructor(
    statement: Statement,
    private readonly leading: readonly string[],
    private readonly commit: boolean,
    callback: (error: Error | undefined, results: unknown) => void,
  ) {
    super({name: statement.name, text: statement.text, values: statement.values}, undefined, callback)
  }

  prepare(connection: Connection): void {
    if (this.leading.length > 0 && !this.hasBeenParsed(connection)) {
      connection.parse({text: this.text, name: this.name})
      connection.submittedNamedStatements[this.name!] = this.text
    }
    for (const text of this.leading) {
      connection.parse({text})
      connection.bind({portal: '', statement: ''})
      connection.describe({type: 'P', name: ''})
      connection.execute({portal: ''})
    }
    super.prepare(connection)
  }

  _getRows(connection: Connection, rows: number | undefined): void {
    if (rows !== undefined) throw new Error('a statement read in pages is never pipelined')
    connection.execute({portal: ''})
    if (this.commit) {
      connection.parse({text: 'COMMIT'})
      connection.bind({portal: '', statement: ''})
      connection.execute({portal: ''})
    }
    connection.sync()
  }

  handleCommandComplete(message: unknown, connection: unknown): void {
    this.completed++
    super.handleCommandComplete(message, connection)
  }
}

/** Every result of a query that ran several statements, in order (node-postgres gives one result alone, not in a list). */
function allResults(results: unknown): pg.QueryResult[] {
  return Array.isArray(results) ? (results as pg.QueryResult[]) : [results as pg.QueryResult]
}

/**
 * Runs the constant statements of `leading` (e.g. BEGIN, a lock, a constant read) and then `statement`, in one round
 * trip; answers the result of each of `leading`, and the statement's. An error is the first one PostgreSQL answered
 * (the statements after it did not run).
 */
export function runAfter(client: pg.ClientBase, leading: readonly string[], statement: Statement): Promise<{leading: pg.QueryResult[]; result: pg.QueryResult}> {
  return new Promise((resolve, reject) => {
    client.query(
      new Pipelined(statement, leading, false, (error, results) => {
        if (error) {
          reject(error)
          return
        }
        const all = allResults(results)
        resolve({leading: all.slice(0, leading.length), result: all[leading.length]})
      }),
    )
  })
}

/**
 * Runs `statement` and then COMMIT on `client`, which must be in a transaction; answers the statement's result.
 * Throws LastStatementFailed naming what failed.
 */
export function runThenCommit<R extends pg.QueryResultRow>(client: pg.ClientBase, statement: Statement): Promise<pg.QueryResult<R>> {
  return new Promise((resolve, reject) => {
    const query: Pipelined = new Pipelined(statement, [], true, (error, results) => {
      if (error) {
        // An error PostgreSQL answered before the statement completed is the statement's; after it, or a connection
        // that failed (the COMMIT may have been received), the COMMIT's.
        reject(new LastStatementFailed(query.completed === 0 && error instanceof pg.DatabaseError ? 'statement' : 'commit', error))
        return
      }
      const [result, commit] = allResults(results) as pg.QueryResult<R>[]
      // PostgreSQL answers ROLLBACK to the COMMIT of a transaction that had failed before.
      if (commit?.command !== 'COMMIT') {
        reject(new LastStatementFailed('commit', new Error(`the transaction ended with ${commit?.command ?? 'no answer'} instead of COMMIT`)))
        return
      }
      resolve(result)
    })
    client.query(query)
  })
}
