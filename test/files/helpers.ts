import {execFileSync} from 'node:child_process'
import {randomInt} from 'node:crypto'
import {mkdir, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

/** A GitHub-token-shaped string built at run time (never committed). */
export function fakeGithubToken(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  let tail = ''
  for (let i = 0; i < 36; i++) tail += alphabet[randomInt(alphabet.length)]
  return 'ghp_' + tail
}

export const PRISMA = `// the database
datasource db {
  provider = "postgresql"
  url      = env("DATABASE_URL")
}

model User {
  id    Int    @id
  role  Role
  posts Post[]
}

model Post {
  id Int @id
}

// model Commented {
enum Role {
  ADMIN
  MEMBER
}
`

export const REPO_FILES: Record<string, string> = {
  'package.json': JSON.stringify({name: 'shop', scripts: {dev: 'next dev', build: 'next build'}, dependencies: {next: '15', react: '19', '@prisma/client': '6'}}),
  'app/page.tsx': 'export default function Page() {}',
  'app/layout.tsx': 'export default function Layout() {}',
  'app/shop/[id]/page.tsx': 'x',
  'app/shop/helpers.ts': 'x',
  'app/api/orders/route.ts': 'x',
  'pages/about.tsx': 'x',
  'pages/api/health.ts': 'x',
  'src/components/Button.tsx': 'x',
  'components/ui/Card.jsx': 'x',
  'lib/db.ts': 'x',
  'styles/globals.css': 'x',
  'components/ui/Card.module.scss': 'x',
  'scripts/seed.ts': 'x',
  'prisma/schema.prisma': PRISMA,
  'README.md': 'x',
}

/** A small git repository with a Next.js-like layout, committed; plus an untracked file that must not appear. */
export async function makeRepo(dir: string): Promise<void> {
  for (const [path, text] of Object.entries(REPO_FILES)) {
    await mkdir(dirname(join(dir, path)), {recursive: true})
    await writeFile(join(dir, path), text)
  }
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=jarvis-test', '-c', 'commit.gpgsign=false', ...args], {cwd: dir, stdio: 'pipe'})
  git('init', '-q')
  git('add', '.')
  git('commit', '-q', '-m', 'initial')
  await mkdir(join(dir, 'components'), {recursive: true})
  await writeFile(join(dir, 'components/Untracked.tsx'), 'x')
}

export const EXPECTED_STRUCTURE = {
  pages: ['app/layout.tsx', 'app/page.tsx', 'app/shop/[id]/page.tsx', 'pages/about.tsx'],
  components: ['components/ui/Card.jsx', 'src/components/Button.tsx'],
  api: ['app/api/orders/route.ts', 'pages/api/health.ts'],
  lib: ['lib/db.ts'],
  styles: ['components/ui/Card.module.scss', 'styles/globals.css'],
  scripts: ['package.json#build', 'package.json#dev', 'scripts/seed.ts'],
}

