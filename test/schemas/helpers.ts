import {readdirSync, readFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

// The named export: under Node16 resolution the default import of this CommonJS module is its namespace.
import {Ajv2020} from 'ajv/dist/2020.js'

import {type PublishedSchemaName, publishedSchemas} from '../../src/schemas/json-schema.js'

export const fixturesDir = fileURLToPath(new URL('../../fixtures/seeds/', import.meta.url))
export const docsDir = fileURLToPath(new URL('../../docs/schemas/', import.meta.url))

export interface Fixture {
  file: string
  schema: PublishedSchemaName
  text: string
}

/** `fixtures/seeds/<schema>.<label>.json`, each with the published schema its name points at. */
export function seedFixtures(): Fixture[] {
  return readdirSync(fixturesDir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const schema = file.slice(0, file.indexOf('.'))
      if (!(schema in publishedSchemas)) throw new Error(`fixture ${file} names no published schema`)
      return {file, schema: schema as PublishedSchemaName, text: readFileSync(fixturesDir + file, 'utf8')}
    })
}

/**
 * ajv for the draft 2020-12 schemas zod writes. Formats are not validated (ajv-formats is not a dependency):
 * every `format: date-time` zod writes comes with a `pattern` that ajv does check, and `format: uri` is only on
 * `server` in the config.
 */
export function makeAjv() {
  const ajv = new Ajv2020({strict: true, validateFormats: false, allErrors: true})
  for (const file of readdirSync(docsDir).filter((f) => f.endsWith('.schema.json'))) {
    ajv.addSchema(JSON.parse(readFileSync(docsDir + file, 'utf8')) as object)
  }
  return ajv
}
