import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {ExitCode, SecretRefusedError} from '../../src/errors.js'
import {assertNoSensitive, describeFindings, findSensitive, maskSensitive, SENSITIVE_RULES, sensitiveFieldsOf} from '../../src/events/index.js'
import {BACKTRACKING_TEXTS, DIGITS, Fakes, LOWER} from './fakes.js'

const seed = Number(process.env.JARVIS_FAKE_SEED ?? 20_260_202)
const f = new Fakes(seed)

/** A positive: the text, the secret inside it (never to be echoed), and the rule expected to name it. */
interface Positive {
  name: string
  text: string
  secret: string
  rule: string
}

function positive(name: string, rule: string, secret: string, wrap: (s: string) => string = (s) => `note: ${s} (rotated 2026-02-02)`): Positive {
  return {name, rule, secret, text: wrap(secret)}
}

const pwd = () => f.password()
const positives: Positive[] = [
  positive('GitHub classic personal access token', 'github-token', f.githubClassic('ghp'), (s) => `CI uses ${s} for the release job`),
  positive('GitHub OAuth token', 'github-token', f.githubClassic('gho'), (s) => `gh auth status printed ${s}`),
  positive('GitHub fine-grained token', 'github-token', f.githubFineGrained(), (s) => `GITHUB_TOKEN は ${s} に更新（2026-02-02）`),
  positive('AWS access key id alone', 'aws-access-key-id', f.awsAccessKeyId('AKIA'), (s) => `deploy user key id ${s}`),
  positive('AWS temporary access key id', 'aws-access-key-id', f.awsAccessKeyId('ASIA'), (s) => `STS gave ${s} for one hour`),
  positive('AWS secret access key', 'aws-secret-access-key', f.awsSecret(), (s) => `aws_secret_access_key = ${s}`),
  positive('Slack bot token', 'slack-token', f.slack('xoxb'), (s) => `Bot token: ${s}`),
  positive('Slack user token', 'slack-token', f.slack('xoxp'), (s) => `- the user token ${s} posts as me`),
  positive('Slack incoming webhook', 'slack-webhook', f.slackWebhook(), (s) => `alerts go to ${s}`),
  positive('OpenAI project key', 'openai-key', f.openaiProject(), (s) => `OPENAI_API_KEY=${s}`),
  positive('OpenAI legacy key', 'openai-key', f.openaiLegacy(), (s) => `use key ${s} for the batch job`),
  positive('OpenAI-compatible key in env line', 'openai-key', f.openaiLegacy(), (s) => `export DEEPSEEK_KEY=${s}`),
  positive('Anthropic key', 'anthropic-key', f.anthropic(), (s) => `Claude API key: ${s}`),
  positive('JWT', 'jwt', f.jwt(), (s) => `session cookie was ${s}; expires tomorrow`),
  positive('Telegram bot token', 'telegram-bot-token', f.telegramBot(), (s) => `the standup bot is ${s}`),
  positive('Telegram bot token in an env line', 'telegram-bot-token', f.telegramBot(), (s) => `JARVIS_TELEGRAM_TOKEN=${s}`),
  positive('Stripe live secret key', 'stripe-key', f.stripe('sk_live'), (s) => `The Stripe live key is ${s}.`),
  positive('Stripe restricted test key in an env line', 'stripe-key', f.stripe('rk_test'), (s) => `STRIPE_KEY=${s}`),
  positive('Stripe webhook signing secret', 'stripe-key', f.stripe('whsec'), (s) => `webhooks are signed with ${s}`),
  positive('JWT in an Authorization header', 'bearer-token', f.jwt(), (s) => `curl -H "Authorization: Bearer ${s}" https://api.internal/v1`),
  positive('opaque bearer token', 'bearer-token', f.chars(40), (s) => `Authorization: Bearer ${s}`),
  positive('PEM RSA private key', 'private-key', f.pem('RSA'), (s) => `server key:\n${s}\nkeep it safe`),
  positive('OpenSSH private key', 'private-key', f.pem('OPENSSH', 400), (s) => `deploy key\n\n${s}`),
  positive('PKCS#8 private key with escaped newlines', 'private-key', f.pem('', 120).replace(/\n/g, '\\n'), (s) => `{"private_key": "${s}"}`),
  positive('truncated private key (no END line)', 'private-key', f.pem('RSA', 80).split('\n').slice(0, 2).join('\n'), (s) => `pasted by mistake:\n${s}`),
  positive('basic auth in an https URL', 'url-password', `deploy:${f.chars(14)}`, (s) => `clone from https://${s}@git.acme-corp.io/app.git`),
  positive('URL password with special characters', 'url-password', `ci-bot:p%40ss!${f.chars(8)}`, (s) => `mirror: https://${s}@registry.acme-corp.io/`),
  positive('PostgreSQL connection string', 'database-password', f.chars(16), (s) => `DATABASE_URL=postgres://app:${s}@db.acme-corp.io:5432/app`),
  positive('Redis URL with password', 'url-password', `:${f.chars(20)}`, (s) => `cache is redis://${s}@cache.acme-corp.io:6379/0`),
  positive('password assignment', 'password-assignment', pwd(), (s) => `admin password=${s}`),
  positive('DB_PASSWORD in YAML', 'password-assignment', pwd(), (s) => `env:\n  DB_PASSWORD: "${s}"\n  DB_USER: app`),
  positive('client_secret in JSON', 'password-assignment', f.chars(32, LOWER + DIGITS), (s) => `{"client_id": "web", "client_secret": "${s}"}`),
  positive('Japanese password line', 'password-assignment', pwd(), (s) => `管理画面のパスワード：${s}`),
  positive('npm token', 'npm-token', f.npm(), (s) => `//npm.registry.example.test/:_authToken=${s}`),
  positive('SendGrid key', 'sendgrid-key', f.sendgrid(), (s) => `mail via ${s}`),
  positive('Linear key', 'linear-key', f.linear(), (s) => `linear: ${s}`),
  positive('Shopify token', 'shopify-token', f.shopify(), (s) => `shop admin token ${s}`),
  positive('e-mail address', 'email', f.email('gmail.com'), (s) => `ask ${s} about the invoice`),
  positive('e-mail with plus and subdomain', 'email', `${f.chars(6, LOWER)}+memory@mail.${f.chars(6, LOWER)}.co.jp`, (s) => `<${s}>`),
  positive('e-mail in Japanese text', 'email', f.email('example-corp.jp'), (s) => `担当者は${s}です`),
  positive('Japanese mobile, international', 'phone', `+81 90-${f.digits(4)}-${f.digits(4)}`, (s) => `連絡先 ${s}`),
  positive('Japanese mobile, national', 'phone', `090-${f.digits(4)}-${f.digits(4)}`, (s) => `call ${s} if the bot is down`),
  positive('Tokyo landline', 'phone', `03-${f.digits(4)}-${f.digits(4)}`, (s) => `office: ${s}.`),
  positive('Japanese mobile, no separators', 'phone', `090${f.digits(8)}`, (s) => `SMS ${s}`),
  positive('US number with area in parentheses', 'phone', `(555) ${f.digits(3)}-${f.digits(4)}`, (s) => `support line ${s}`),
  positive('US number with dashes', 'phone', `555-${f.digits(3)}-${f.digits(4)}`, (s) => `on-call: ${s}`),
  positive('US number with dots', 'phone', `415.${f.digits(3)}.${f.digits(4)}`, (s) => `fax ${s}`),
  positive('US number, international', 'phone', `+1 (415) ${f.digits(3)}-${f.digits(4)}`, (s) => `tel ${s}`),
  positive('UK number', 'phone', `+44 20 ${f.digits(4)} ${f.digits(4)}`, (s) => `London desk ${s} (9-5)`),
  positive('French number', 'phone', `+33 1 ${f.digits(2)} ${f.digits(2)} ${f.digits(2)} ${f.digits(2)}`, (s) => `Paris: ${s}`),
  positive('tel: URI', 'phone', `+8131${f.digits(7)}`, (s) => `[call](tel:${s})`),
  positive('phone followed by other numbers', 'phone', `+44 20 ${f.digits(4)} ${f.digits(4)}`, (s) => `ring ${s} 3 times`),
]

/** Realistic texts that must pass: the seed's own examples, and everything that merely looks like a number or a key. */
const negatives: Array<[string, string]> = [
  ['seed §13 example 1', 'TELEGRAM_BOT_TOKEN は ~/claude-telegram-bot/.env に保存（2026-02-02から有効）'],
  ['seed §13 example 2', 'Gateway API Key が無効（401エラー）。原因: API Keyの有効期限切れ。対処: 新しいKeyを発行して更新。'],
  ['a time and a word after a bot id', 'bot 1234567890:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA placeholder, deploy at 12:00 AM'],
  ['seed §13 example 3', '4者共有メモリは Gateway(D1) をSSOTとし、append-onlyで運用（2026-02-02決定）'],
  ['seed §6b good example', 'TELEGRAM_BOT_TOKEN は ~/claude-telegram-bot/.env に保存（2026-02-02から有効）\n\n理由: セキュリティ向上のため、環境変数で管理。\n影響: 以前の .env.local は廃止。'],
  ['Stripe keys named, not given', 'the live key sk_live_... is in 1Password; publishable pk_live_51HxQ2pLkT9uVbN3mZqR8sW4y is public; sk_test_xxxxxxxxxxxxxxxxxxxxxxxx'],
  ['ISO timestamps', 'synced at 2026-02-02T10:00:00Z and again at 2026-02-02T19:00:00.123+09:00'],
  ['dates in several forms', 'from 2026-02-02 to 02/03/2026, reviewed 2026/02/10 and 10.02.2026'],
  ['semver and calver', 'upgrade vitest 3.2.4 → 4.1.12, node 20.19.43, app 0.1.20260202, api v1.2.3-beta.4'],
  ['UUIDs', 'run 550e8400-e29b-41d4-a716-446655440000 replaced 6ba7b810-9dad-11d1-80b4-00c04fd430c8'],
  ['dedupe_key words', 'dedupe_key: config:telegram_bot_token_location (see constraint:no_secrets_in_memory)'],
  ['token budget', 'Keep the token budget under 4000 tokens; max_tokens=4096, TOKEN_TTL=3600'],
  ['password policy', 'password policy: at least 12 characters, rotated every 90 days; passwords live in 1Password'],
  ['keys named, not given', 'api_key: stored in 1Password\ntoken: TELEGRAM_BOT_TOKEN\nsecret: see vault path kv/app/prod'],
  ['placeholders', 'GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}, password=<your password>, OPENAI_API_KEY=sk-...'],
  ['sha256 and git hashes', 'content_hash e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, commit 9fceb02d0ae598e95dc970b74767f19372d61af8'],
  ['file paths', 'edit ~/claude-telegram-bot/.env, /etc/ssl/private/server.key and C:\\Users\\me\\.ssh\\id_ed25519'],
  ['Unix timestamps', 'created 1738454400 (ms 1738454400000), expires 1770000000'],
  ['IP addresses and ports', 'gateway on 192.168.100.200:8787, fallback 10.0.0.1, ports 8080 8081 8082'],
  ['number lists', 'sizes 256 512 1024, batches of 100 200 300 4000, price 1,234,567 yen'],
  ['package specifiers', 'pinned tsx@4.23.14 and @secretlint/core@11.7.1; see @oclif/core'],
  ['SSH git remote', 'origin is git@github.com:acme/jarvis.git'],
  ['plain URLs', 'docs at https://github.com/secretlint/secretlint and http://localhost:8787/v1/memory/snapshot?agent_id=claude'],
  ['URL credential placeholders', 'postgres://app:${DB_PASSWORD}@db:5432/app, https://user:<password>@host.io, redis://:****@cache:6379'],
  ['retina file names', 'icons icon@2x.png and logo@3x.webp'],
  ['reserved example e-mail', 'write to user@example.com or ops@acme.test in the docs'],
  ['ids with digits', 'run_2026_02_02_001, thread thr_abc123, chat -1001234567890, message 123456789'],
  ['bearer placeholder', 'send `Authorization: Bearer <token>` with the JARVIS_TOKEN'],
  ['words containing sk-', 'risk-free task-runner uses sk-learn; disk-usage ok'],
  ['AWS documentation example key id', `docs use ${'AKIA'}IOSFODNN7${'EXAMPLE'} as the sample id`],
  ['public key and key headers in prose', 'the server key is a PEM file (BEGIN PRIVATE KEY header); ssh-ed25519 public keys are fine'],
  ['markdown table of numbers', '| date | version | count |\n| --- | --- | --- |\n| 2026-02-02 | 1.2.3 | 42 |'],
  ['ISBN and postal code', 'ISBN 978-4-06-519981-7, 〒100-0001 千代田区'],
  ['time ranges and durations', 'window 09:00-17:30 JST, timeout 30000ms, retry 1000-5000ms'],
  ['whole seed event as JSON', JSON.stringify({agent_id: 'claude', run_id: 'run_2026_02_02_001', scope: 'global', kind: 'config', dedupe_key: 'telegram_bot_token_location', confidence: 'high', content_md: 'TELEGRAM_BOT_TOKEN は ~/claude-telegram-bot/.env に保存（2026-02-02から有効）', source: {system: 'telegram', thread_id: 'thr_abc123'}, supersedes: null, ttl_days: 0}, null, 2)],
  ['secretlint comments do not matter', '<!-- secretlint-disable --> nothing secret here'],
  ['code that names secrets', "const token = f.githubClassic()\nsecret = randomBytes(32)\napi_key = os.environ['API_KEY']\n'aws-secret-access-key': {kind: 'secret'}\ntoken: string"],
  ['documentation URL example', 'form: `https://user:pass@host`, or `postgres://user:password@db/app`'],
  ['base64 of ordinary text', 'payload aGVsbG8gd29ybGQgZnJvbSBqYXJ2aXM= decodes to a greeting'],
]

describe('findSensitive: positives', () => {
  it('has a table of at least 30 positives and 30 negatives', () => {
    expect(positives.length).toBeGreaterThanOrEqual(30)
    expect(negatives.length).toBeGreaterThanOrEqual(30)
    for (const p of positives) expect(p.text, p.name).toContain(p.secret)
  })

  it.each(positives.map((p) => [p.name, p] as const))('finds %s', async (_name, p) => {
    const findings = await findSensitive({content_md: p.text})
    expect(findings.map((x) => x.rule)).toContain(p.rule)
    const hit = findings.find((x) => x.rule === p.rule)!
    expect(hit.kind).toBe(SENSITIVE_RULES[p.rule].kind)
    expect(hit.field).toBe('content_md')
  })

  it.each(positives.map((p) => [p.name, p] as const))('never echoes the secret: %s', async (_name, p) => {
    const findings = await findSensitive({content_md: p.text})
    const described = describeFindings(findings)
    expect(described.length).toBeGreaterThan(0)
    expect(described).not.toContain(p.secret)
    expect(JSON.stringify(findings)).not.toContain(p.secret)
    const error = await assertNoSensitive({content_md: p.text}).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(SecretRefusedError)
    const refused = error as SecretRefusedError
    expect(refused.exit).toBe(ExitCode.secretRefused)
    expect(refused.message).not.toContain(p.secret)
    expect(JSON.stringify(refused.data)).not.toContain(p.secret)
    expect(refused.data.findings).toEqual(findings)
  })

  it.each(positives.map((p) => [p.name, p] as const))('masks %s so that a second scan finds nothing', async (_name, p) => {
    const masked = await maskSensitive(p.text)
    expect(masked.findings.length).toBeGreaterThan(0)
    expect(masked.text).not.toContain(p.secret)
    expect(masked.text).toContain('[REDACTED:')
    expect(await findSensitive({content_md: masked.text})).toEqual([])
    expect((await maskSensitive(masked.text)).text).toBe(masked.text)
  })
})

describe('findSensitive: negatives', () => {
  it.each(negatives)('passes %s', async (_name, text) => {
    expect(await findSensitive({content_md: text})).toEqual([])
    await expect(assertNoSensitive({content_md: text})).resolves.toBeUndefined()
    expect((await maskSensitive(text)).text).toBe(text)
  })
})

describe('findings name the field, line and column', () => {
  it('reports 1-based line and column in the field it was found in', async () => {
    const token = f.githubClassic()
    const email = f.email('proton.me')
    const findings = await findSensitive({content_md: `first line\nsecond ${token} here`, 'source.thread_id': `x ${email}`})
    expect(findings).toEqual([
      {kind: 'secret', rule: 'github-token', field: 'content_md', line: 2, column: 8},
      {kind: 'email', rule: 'email', field: 'source.thread_id', line: 1, column: 3},
    ])
    expect(describeFindings(findings)).toBe('a GitHub token in content_md at line 2, column 8; an e-mail address in source.thread_id at line 1, column 3')
  })

  it('reports each of several findings once, in order', async () => {
    const text = `a ${f.email('gmail.com')} b ${f.githubClassic()} c 090-${f.digits(4)}-${f.digits(4)}`
    expect((await findSensitive({content_md: text})).map((x) => x.rule)).toEqual(['email', 'github-token', 'phone'])
  })

  it('reports overlapping matches once (a JWT after Bearer, a token after password=)', async () => {
    expect(await findSensitive({content_md: `Authorization: Bearer ${f.jwt()}`})).toHaveLength(1)
    expect(await findSensitive({content_md: `token: ${f.githubClassic()}`})).toHaveLength(1)
  })

  it('is not switched off by a secretlint-disable comment in the text', async () => {
    const text = `<!-- secretlint-disable -->\n${f.githubClassic()}\n<!-- secretlint-enable -->`
    expect((await findSensitive({content_md: text})).map((x) => x.rule)).toEqual(['github-token'])
  })

  it('scans the free-text fields of an event', async () => {
    const fields = sensitiveFieldsOf({content_md: 'ok', dedupe_key: 'k', run_id: 'r', source: {thread_id: f.email('gmail.com')}})
    expect(Object.keys(fields)).toEqual(['content_md', 'dedupe_key', 'run_id', 'source.thread_id'])
    expect((await findSensitive(fields)).map((x) => x.field)).toEqual(['source.thread_id'])
  })

  it('masks several findings and keeps the rest of the text', async () => {
    const email = f.email('gmail.com')
    const token = f.githubClassic()
    const {text, findings} = await maskSensitive(`mail ${email}, token ${token}.`)
    expect(text).toBe('mail [REDACTED:email], token [REDACTED:github-token].')
    expect(findings.map((x) => x.column)).toEqual([6, 6 + email.length + 8])
  })

  it('masks only the credentials of a URL and the value of an assignment', async () => {
    expect((await maskSensitive(`redis://:${f.chars(20)}@cache.acme-corp.io:6379`)).text).toBe('redis://[REDACTED:url-password]@cache.acme-corp.io:6379')
    expect((await maskSensitive(`DB_PASSWORD=${f.password()} next`)).text).toBe('DB_PASSWORD=[REDACTED:password-assignment] next')
  })
})

describe('properties', () => {
  const positiveArb = fc.constantFrom(...positives)
  const filler = fc.stringMatching(/^[a-z ]{0,40}$/)

  it('for every positive wrapped in arbitrary text: found, never echoed, masked away', async () => {
    await fc.assert(
      fc.asyncProperty(positiveArb, filler, filler, async (p, before, after) => {
        const text = `${before}\n${p.text}\n${after}`
        const findings = await findSensitive({content_md: text})
        expect(findings.length).toBeGreaterThan(0)
        expect(describeFindings(findings)).not.toContain(p.secret)
        const masked = await maskSensitive(text)
        expect(masked.text).not.toContain(p.secret)
        expect(await findSensitive({content_md: masked.text})).toEqual([])
      }),
      {numRuns: 150},
    )
  })

  it('never takes dates, ISO timestamps, versions or UUIDs for phone numbers', async () => {
    const pad = (n: number, w: number) => String(n).padStart(w, '0')
    const date = fc.record({y: fc.integer({min: 1970, max: 2099}), m: fc.integer({min: 1, max: 12}), d: fc.integer({min: 1, max: 28})})
    const iso = fc.tuple(date, fc.integer({min: 0, max: 23}), fc.integer({min: 0, max: 59}), fc.constantFrom('Z', '+09:00', '-05:00', '.123Z'))
      .map(([x, h, mi, z]) => `${x.y}-${pad(x.m, 2)}-${pad(x.d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:00${z}`)
    const plainDate = date.chain((x) => fc.constantFrom(`${x.y}-${pad(x.m, 2)}-${pad(x.d, 2)}`, `${pad(x.d, 2)}/${pad(x.m, 2)}/${x.y}`, `${x.y}${pad(x.m, 2)}${pad(x.d, 2)}`, `${x.y}.${x.m}.${x.d}`))
    const version = fc.tuple(fc.nat(99), fc.nat(99), fc.nat(99999)).map(([a, b, c]) => `${a}.${b}.${c}`)
    const uuid = fc.uuid()
    const hex = fc.stringMatching(/^[0-9a-f]{64}$/)
    const timestamp = fc.integer({min: 1_000_000_000, max: 2_000_000_000}).chain((s) => fc.constantFrom(String(s), `${s}000`))
    const token = fc.oneof(iso, plainDate, version, uuid, hex, timestamp)
    await fc.assert(
      fc.asyncProperty(fc.array(token, {minLength: 1, maxLength: 6}), fc.constantFrom(' ', ', ', ' and ', '\n', ' | '), async (parts, sep) => {
        expect(await findSensitive({content_md: `values: ${parts.join(sep)}`})).toEqual([])
      }),
      {numRuns: 300},
    )
  })

  it('finds in each of several texts scanned at once exactly what it finds in that text alone', async () => {
    // A push's files and an event's fields go through the scanner together: no finding may cross from one text to
    // the next, be lost at a text's end, or land in the wrong text. The pieces end and start where patterns do.
    const edges = fc.constantFrom('', 'aws_account_id =', 'AWS_SECRET_ACCESS_KEY=', 'password:', 'Bearer', 'https://deploy:', 'mongodb://', '-----BEGIN RSA PRIVATE KEY-----', '\n', ' ', '@', '+81 90', '1234-5678-9012')
    const piece = fc.oneof(positiveArb.map((p) => p.text), fc.constantFrom(...negatives.map(([, text]) => text)), filler, fc.stringMatching(/^[A-Za-z0-9_+\-/=.@:() \n]{0,60}$/))
    const text = fc.tuple(edges, piece, edges).map(([before, middle, after]) => `${before}${middle}${after}`)
    await fc.assert(
      fc.asyncProperty(fc.array(text, {minLength: 2, maxLength: 6}), async (texts) => {
        const fields = Object.fromEntries(texts.map((value, i) => [`.memory/f${i}.md`, value]))
        const alone = (await Promise.all(texts.map((value, i) => findSensitive({[`.memory/f${i}.md`]: value})))).flat()
        expect(await findSensitive(fields)).toEqual(alone)
      }),
      {numRuns: 200},
    )
  })

  it('never echoes any generated secret-like text, found or not', async () => {
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[A-Za-z0-9_+\-/=.@:() ]{6,80}$/), async (text) => {
        const findings = await findSensitive({content_md: text})
        const described = describeFindings(findings)
        for (const word of text.split(/\s+/).filter((w) => w.length >= 8)) expect(described).not.toContain(word)
      }),
      {numRuns: 300},
    )
  })
})

// How long a scan takes is measured by `npm run bench` (bench/events.ts, in "Event log: appends and snapshots"), not asserted here.
describe('texts made to make a pattern backtrack', () => {
  it.each(BACKTRACKING_TEXTS)('%s (4,000 characters) is scanned to the end with the right findings', async (_name, text, rules) => {
    expect((await findSensitive({content_md: text})).map((finding) => finding.rule)).toEqual(rules)
  })
})

describe('secretlint profiler', () => {
  it('leaves no performance marks behind, so a long-running server neither leaks nor slows down', async () => {
    const before = performance.getEntriesByType('mark').length
    for (let i = 0; i < 300; i++) await findSensitive({content_md: `call ${i}: nothing to see, 2026-02-02`})
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(performance.getEntriesByType('mark').length).toBe(before)
  })
})
