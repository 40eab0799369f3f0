import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {buildContextMap, classifyPath, parsePrismaSchema, writeContextMap} from '../../src/files/index.js'
import {contextMapSchema} from '../../src/schemas/index.js'
import {initTree} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {EXPECTED_STRUCTURE, makeRepo, PRISMA} from './helpers.js'

describe('context map', () => {
  const dirs: string[] = []
  let repo: string

  beforeEach(async () => {
    repo = await tempDir('jarvis-repo-')
    dirs.push(repo)
    await makeRepo(repo)
  })
  afterEach(async () => removeAll(dirs.splice(0)))

  it('classifies paths by web conventions', () => {
    expect(classifyPath('src/app/dashboard/page.tsx')).toBe('pages')
    expect(classifyPath('src/pages/api/x.ts')).toBe('api')
    expect(classifyPath('app/globals.css')).toBe('styles')
    expect(classifyPath('app/shop/helpers.ts')).toBeNull()
    expect(classifyPath('docs/intro.md')).toBeNull()
  })

  it('reads models and enums from a Prisma schema, ignoring comments', () => {
    expect(parsePrismaSchema(PRISMA)).toEqual({models: ['Post', 'User'], enums: ['Role']})
  })

  it('maps the tracked files of a git repository, sorted; only the timestamp changes between runs', async () => {
    const now = new Date('2026-03-01T12:00:00Z')
    const map = await buildContextMap(repo, {now})
    expect(map.timestamp).toBe('2026-03-01T12:00:00.000Z')
    expect(map.structure).toEqual(EXPECTED_STRUCTURE)
    expect(map.database).toEqual({models: ['Post', 'User'], enums: ['Role']})
    expect(map.config).toMatchObject({prismaSchema: 'prisma/schema.prisma', packageName: 'shop', frameworks: ['next', 'react', '@prisma/client']})
    const later = await buildContextMap(repo, {now: new Date('2026-03-02T00:00:00Z')})
    expect({...later, timestamp: map.timestamp}).toEqual(map)
  })

  it('writes .memory/context_map.json for the repository holding the tree (the tree in a subdirectory)', async () => {
    const {root} = await initTree(join(repo, 'web'), {})
    const result = await writeContextMap(root, {now: new Date('2026-03-01T12:00:00Z')})
    expect(result.path).toBe('context_map.json')
    const written = contextMapSchema.parse(JSON.parse(await readFile(join(root, '.memory/context_map.json'), 'utf8')))
    expect(written.structure).toEqual(EXPECTED_STRUCTURE)
  })

  it('a tree outside any git repository is exit 2', async () => {
    const dir = await tempDir('jarvis-nogit-')
    dirs.push(dir)
    const {root} = await initTree(dir, {})
    await expect(writeContextMap(root, {now: new Date()})).rejects.toMatchObject({exit: 2})
  })
})
