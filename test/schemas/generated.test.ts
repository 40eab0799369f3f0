import {readdirSync, readFileSync} from 'node:fs'
import {describe, expect, it} from 'vitest'

import {renderJsonSchemas} from '../../src/schemas/json-schema.js'
import {docsDir} from './helpers.js'

describe('published JSON Schemas', () => {
  const rendered = renderJsonSchemas()

  it.each(rendered.map((r) => [r.file, r.text] as const))('docs/schemas/%s is what the zod schema generates (run `npm run schemas`)', (file, text) => {
    expect(readFileSync(docsDir + file, 'utf8')).toBe(text)
  })

  it('holds no schema that is no longer generated', () => {
    const onDisk = readdirSync(docsDir).filter((f) => f.endsWith('.schema.json')).sort()
    expect(onDisk).toEqual(rendered.map((r) => r.file))
  })

  it('renders the same bytes every time', () => {
    expect(renderJsonSchemas()).toEqual(rendered)
  })
})
