/**
 * Secrets and personal data in memory events (seed 001 §8, CONTRACT §4): found before a write is accepted, masked
 * by the janitor when one got in anyway.
 *
 * Keys, tokens, passwords and private keys are found by secretlint's recommended preset — a real scanner with
 * per-provider formats — plus a few patterns of our own for kinds the preset misses (each explained below and in
 * docs/decisions/secret-scanner.md). E-mail addresses and phone numbers use the seed's patterns, tuned so that
 * dates, versions, ISO timestamps, UUIDs, hashes and IP addresses are not taken for them. The seed's bare keyword
 * list ("token", "key", "password", "secret") is deliberately NOT used: it would refuse `dedupe_key`,
 * "token budget" or "password policy".
 *
 * Nothing here ever returns, logs or throws the secret itself: a finding carries the kind of finding, a rule name,
 * the field and the 1-based line and column where it starts. secretlint's own message text and `data` echo the
 * secret, so they are read for their rule id and range only and then dropped.
 */
import type {SecretLintCoreConfig, SecretLintCoreResultMessage} from '@secretlint/types'

import {SecretRefusedError} from '../errors.js'

export type SensitiveKind = 'secret' | 'email' | 'phone'

/** One thing found: what kind, which rule, and where it starts (1-based line and column). Never the text itself. */
export interface SensitiveFinding {
  kind: SensitiveKind
  /** A stable, lowercase name such as `github-token`, `private-key`, `email`, `phone` (see SENSITIVE_RULES). */
  rule: string
  /** The field it was found in, as the caller named it (`content_md`, `source.thread_id`, …). */
  field: string
  line: number
  column: number
}

/** Every rule name a finding may carry, with the words describeFindings uses for it. */
export const SENSITIVE_RULES: Record<string, {kind: SensitiveKind; label: string}> = {
  // from secretlint's recommended preset
  'aws-access-key-id': {kind: 'secret', label: 'an AWS access key id'},
  'aws-secret-access-key': {kind: 'secret', label: 'an AWS secret access key'},
  'aws-account-id': {kind: 'secret', label: 'an AWS account id'},
  'gcp-service-account-key': {kind: 'secret', label: 'a GCP service account key'},
  'private-key': {kind: 'secret', label: 'a private key'},
  'npm-token': {kind: 'secret', label: 'an npm token'},
  'url-password': {kind: 'secret', label: 'a password in a URL'},
  'slack-token': {kind: 'secret', label: 'a Slack token'},
  'slack-webhook': {kind: 'secret', label: 'a Slack incoming webhook URL'},
  'sendgrid-key': {kind: 'secret', label: 'a SendGrid API key'},
  'shopify-token': {kind: 'secret', label: 'a Shopify token'},
  'github-token': {kind: 'secret', label: 'a GitHub token'},
  'openai-key': {kind: 'secret', label: 'an OpenAI-style API key'},
  'anthropic-key': {kind: 'secret', label: 'an Anthropic API key'},
  'linear-key': {kind: 'secret', label: 'a Linear API key'},
  '1password-token': {kind: 'secret', label: 'a 1Password service account token'},
  'database-password': {kind: 'secret', label: 'a password in a database connection string'},
  secret: {kind: 'secret', label: 'a secret'},
  // our own patterns (docs/decisions/secret-scanner.md)
  jwt: {kind: 'secret', label: 'a JSON Web Token'},
  'bearer-token': {kind: 'secret', label: 'a bearer token'},
  'telegram-bot-token': {kind: 'secret', label: 'a Telegram bot token'},
  'stripe-key': {kind: 'secret', label: 'a Stripe secret key or webhook signing secret'},
  'password-assignment': {kind: 'secret', label: 'a password or key assigned to a name (password=…)'},
  email: {kind: 'email', label: 'an e-mail address'},
  phone: {kind: 'phone', label: 'a phone number'},
}

// ---------------------------------------------------------------------------------------------------------------
// secretlint

/**
 * Built once: the rules of the recommended preset, registered one by one, with two changes.
 * - `filter-comments` is left out: it honours `secretlint-disable` comments, and an event must not be able to
 *   switch the scan off by containing that text. (It has to be left out rather than disabled: secretlint ignores
 *   `disabled` on a rule inside a preset.)
 * - The AWS rule's `enableIDScanRule` is on, so an access key id (`AKIA…`) is found on its own, not only a secret
 *   access key written as `aws_secret_access_key = …`.
 */
const FILTER_COMMENTS = '@secretlint/secretlint-rule-filter-comments'
const AWS = '@secretlint/secretlint-rule-aws'

interface Secretlint {
  lintSource: typeof import('@secretlint/core').lintSource
  config: SecretLintCoreConfig
}

let secretlint: Promise<Secretlint> | undefined

/** secretlint is loaded on the first scan (about 30 ms), so commands that write nothing never pay for it. */
function loadSecretlint(): Promise<Secretlint> {
  secretlint ??= (async () => {
    const [{lintSource}, {secretLintProfiler}, {rules}] = await Promise.all([
      import('@secretlint/core'),
      import('@secretlint/profiler'),
      import('@secretlint/secretlint-rule-preset-recommend'),
    ])
    /*
     * secretlint's core marks every lint on the global `performance` timeline through this profiler, and the
     * profiler keeps every mark, measure and pending promise forever and scans its whole list on each mark: in a
     * long-running `jarvis serve` that scans every append, memory grows without bound and each call gets slower
     * (measured with the event loop turning between calls, as in a server: 6 ms a call over the first thousand
     * calls, 27 ms by the second thousand, 98 ms by the fourth, heap 35 → 98 MB). We never read the profile, so
     * its marks are switched off. `@secretlint/profiler` is the exact version @secretlint/core depends on (one
     * copy in node_modules); test/events/redact.test.ts checks that scanning leaves no marks behind.
     */
    secretLintProfiler.mark = () => {}
    const config: SecretLintCoreConfig = {
      rules: rules
        .filter((rule) => rule.meta.id !== FILTER_COMMENTS)
        .map((rule) => (rule.meta.id === AWS ? {id: rule.meta.id, rule, options: {enableIDScanRule: true}} : {id: rule.meta.id, rule})),
    }
    return {lintSource, config}
  })()
  return secretlint
}

/** secretlint rule id (without the `@secretlint/secretlint-rule-` prefix) and message id → our rule name. */
function presetRuleName(message: Pick<SecretLintCoreResultMessage, 'ruleId' | 'messageId'>): string {
  const rule = message.ruleId.replace(/^@secretlint\/secretlint-rule-/, '')
  switch (rule) {
    case 'aws':
      return message.messageId === 'AWSAccessKeyID' ? 'aws-access-key-id' : message.messageId === 'AWSAccountID' ? 'aws-account-id' : 'aws-secret-access-key'
    case 'gcp':
      return 'gcp-service-account-key'
    case 'privatekey':
      return 'private-key'
    case 'npm':
      return 'npm-token'
    case 'basicauth':
      return 'url-password'
    case 'slack':
      return message.messageId === 'IncomingWebhook' ? 'slack-webhook' : 'slack-token'
    case 'sendgrid':
      return 'sendgrid-key'
    case 'shopify':
      return 'shopify-token'
    case 'github':
      return 'github-token'
    case 'openai':
      return 'openai-key'
    case 'anthropic':
      return 'anthropic-key'
    case 'linear':
      return 'linear-key'
    case '1password':
      return '1password-token'
    case 'database-connection-string':
      return 'database-password'
    default:
      return 'secret'
  }
}

/** A half-open range of the scanned text and the rule that claimed it. */
interface Span {
  start: number
  end: number
  rule: string
}

/** Characters a token, key or base64 value is made of: used to widen a reported range to the whole value. */
const TOKEN_CHAR = /[A-Za-z0-9+/=_-]/

async function secretlintSpans(text: string): Promise<Span[]> {
  // `filePath: ''` with an `ext` makes the npm rule also look for `_authToken=` lines, as it does for unknown files.
  const {lintSource, config} = await loadSecretlint()
  const result = await lintSource({
    source: {filePath: '', ext: '.md', content: text, contentType: 'text'},
    options: {config, noPhysicFilePath: true, maskSecrets: true},
  })
  return result.messages.map((message) => {
    const start = message.range[0]
    let end = message.range[1]
    // The AWS rule reports the secret access key's range from the start of `aws_secret_access_key = …` with the
    // length of the key alone, so it stops inside the value. Widen every range to the end of the token it ends in,
    // so masking never leaves part of a secret behind.
    while (end < text.length && end > start && TOKEN_CHAR.test(text[end]) && TOKEN_CHAR.test(text[end - 1])) end++
    return {start, end, rule: presetRuleName(message)}
  })
}

// ---------------------------------------------------------------------------------------------------------------
// our own secret patterns: kinds a memory event realistically holds that the preset does not find

/**
 * Values that are placeholders, not secrets: `<token>`, `${TOKEN}`, `{{ secrets.X }}`, `***`, `xxxx`, `sk-...`,
 * `[REDACTED:…]`, and the bare words of documentation examples (`user:pass@host`, `password: password`).
 */
const PLACEHOLDER = /^(?:.*(?:\.{3}|…)|<[^>]*>?|\$\{.*|\{\{.*|\$[A-Z_][A-Z0-9_]*|%[A-Z_]+%|\*+|x{3,}|X{3,}|\.{3,}|…|\[REDACTED.*|changeme|example\w*|your[_-]?\w*|dummy\w*|redacted|pass(?:word|wd)?|secret|token|user(?:name)?)$/i

function characterClasses(value: string): number {
  return [/[a-z]/, /[A-Z]/, /\d/, /[^A-Za-z0-9]/].filter((re) => re.test(value)).length
}

/**
 * OpenAI-style keys without the `T3BlbkFJ` marker the preset's openai rule requires (older `sk-` keys, proxies and
 * OpenAI-compatible providers that copy the format): `sk-`, an optional project/service prefix, then 32 or more
 * key characters that mix at least two character classes (so `sk-` followed by a long word is not taken).
 */
const OPENAI_STYLE = /(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-|live-|test-)?([A-Za-z0-9_-]{32,256})(?![A-Za-z0-9_-])/g

/**
 * JSON Web Tokens: three base64url parts, the first two JSON objects (so both start with `eyJ`, base64 of `{"`),
 * and a signature. The preset has no JWT rule; a JWT is a bearer credential until it expires.
 */
const JWT = /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,2048}\.eyJ[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{16,1024}(?![A-Za-z0-9_-])/g

/**
 * A Telegram bot token as BotFather gives it: the bot's numeric id, a colon, then 35 base64url characters starting
 * with `A` (`123456789:AA…`). The preset has no Telegram rule, and `jarvis telegram` asks its user to hold one.
 */
const TELEGRAM_BOT_TOKEN = /(?<![A-Za-z0-9_:-])\d{5,16}:(A[A-Za-z0-9_-]{34})(?![A-Za-z0-9_-])/g

/**
 * A Stripe secret or restricted key (`sk_live_…`, `rk_test_…`) or webhook signing secret (`whsec_…`): the preset has
 * no Stripe rule, and payment keys are what a memory of a shop's code is most likely to be handed. Publishable keys
 * (`pk_…`) are public by design and pass.
 */
const STRIPE_KEY = /(?<![A-Za-z0-9_])(?:[sr]k_(?:live|test)_|whsec_)([A-Za-z0-9]{20,247})(?![A-Za-z0-9_])/g

/** `Bearer <token>` as pasted from an Authorization header: at least 16 token characters. */
const BEARER = /(?<![A-Za-z])Bearer\s+([A-Za-z0-9._~+/-]{16,2048}=*)(?![A-Za-z0-9._~+/=-])/g

/**
 * A secret assigned to a name: `password=…`, `DB_PASSWORD: …`, `api_key = "…"`, `client-secret: …`, `token: …`
 * and the Japanese `パスワード：…`. The name must end in one of these words and be followed directly by `=`, `:` or
 * `=>`, so prose such as "token budget", "password policy" or `dedupe_key: …` is not taken. The value must look
 * like a secret: six or more characters, at least two character classes (or twelve or more characters), and not a
 * placeholder, a path, a URL, a number, a date or version, an identifier such as `TELEGRAM_BOT_TOKEN`, or code
 * (`{…}`, `getToken()`, `os.environ[…]`).
 */
// The name's leading parts (`DB_`, `my.`) are not matched: any name that ends in one of the words starts with it
// after a character that is not a letter or digit, and matching them made each position of a long run of letters
// and digits (a base64 blob) cost the run's length.
const ASSIGNMENT =
  /(?<![A-Za-z0-9])(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?token|パスワード|暗証番号|トークン|シークレット|APIキー)["']?[ \t]*(?:=>|[:=：])[ \t]*["'`]?([^\s"'`,;)\]}]{1,512})/giu

function looksLikeSecretValue(value: string): boolean {
  if (value.length < 6) return false
  if (PLACEHOLDER.test(value)) return false
  if (/^(?:~|\.{1,2})?\//.test(value) || value.includes('://')) return false // a path or a URL
  if (/^[\d.:+\-/]+$/.test(value)) return false // a number, a date, a time or a version
  if (/^[A-Za-z]+(?:[_.-][A-Za-z]+)*$/.test(value)) return false // a word or an identifier: true, required, TELEGRAM_BOT_TOKEN
  if (/^[{[(]/.test(value) || /^[A-Za-z_$][\w$.]*[([]/.test(value)) return false // code: an object, a call, an index
  if (/^(?:true|false|null|none|undefined)$/i.test(value)) return false
  return characterClasses(value) >= 2 || value.length >= 12
}

/**
 * Credentials in any URL (`redis://:pw@host`, `amqp://user:pw@host`, passwords with `%40` or `!`), which the
 * preset's basicauth rule (http/ftp, `[-A-Za-z0-9_]` passwords only) and its database rule (postgres, mysql,
 * mongodb) miss. Only the `user:password` part is claimed, so a masked URL still names its host.
 */
const URL_CREDENTIALS = /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}:\/\/([^\s:/?#@[\]]{0,256}):([^\s/?#@[\]]{3,256})@(?=[A-Za-z0-9[])/g

/** A PEM private-key header followed by key material, even when the END line is missing or the body is short. */
const PEM_PRIVATE_KEY =
  /-----BEGIN[ ]?(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----(?:\s|\\n|\\r)*[A-Za-z0-9+/=]{40}[\s\S]{0,10000}?(?:-----END[ ]?(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----|$)/g

function ownSecretSpans(text: string): Span[] {
  const spans: Span[] = []
  for (const m of text.matchAll(OPENAI_STYLE)) {
    if (characterClasses(m[1]) >= 2 && /\d/.test(m[1])) spans.push({start: m.index, end: m.index + m[0].length, rule: 'openai-key'})
  }
  for (const m of text.matchAll(JWT)) spans.push({start: m.index, end: m.index + m[0].length, rule: 'jwt'})
  for (const m of text.includes(':') ? text.matchAll(TELEGRAM_BOT_TOKEN) : []) {
    if (characterClasses(m[1]) >= 3) spans.push({start: m.index, end: m.index + m[0].length, rule: 'telegram-bot-token'})
  }
  for (const m of text.includes('_') ? text.matchAll(STRIPE_KEY) : []) {
    if (characterClasses(m[1]) >= 2 && !PLACEHOLDER.test(m[1])) spans.push({start: m.index, end: m.index + m[0].length, rule: 'stripe-key'})
  }
  for (const m of text.matchAll(BEARER)) {
    if (!PLACEHOLDER.test(m[1]) && characterClasses(m[1]) >= 2) spans.push({start: m.index, end: m.index + m[0].length, rule: 'bearer-token'})
  }
  for (const m of text.matchAll(ASSIGNMENT)) {
    const value = m[1]
    if (!looksLikeSecretValue(value)) continue
    const start = m.index + m[0].length - value.length
    spans.push({start, end: start + value.length, rule: 'password-assignment'})
  }
  // A URL with credentials needs `://`: a text without it (a long base64 blob, say) is not searched.
  for (const m of text.includes('://') ? text.matchAll(URL_CREDENTIALS) : []) {
    const password = m[2]
    if (PLACEHOLDER.test(password) || PLACEHOLDER.test(decodeURIComponentSafe(password))) continue
    const start = m[0].indexOf('://') + 3 + m.index
    spans.push({start, end: m.index + m[0].length - 1, rule: 'url-password'})
  }
  for (const m of text.matchAll(PEM_PRIVATE_KEY)) spans.push({start: m.index, end: m.index + m[0].length, rule: 'private-key'})
  return spans
}

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

// ---------------------------------------------------------------------------------------------------------------
// personal data: the seed's e-mail and phone patterns, tuned

/**
 * The seed's `[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}`, with lengths bounded (RFC 5321: 64 and 253) and a
 * boundary on both sides. Not taken: the reserved example domains (RFC 2606/6761: example.com/.net/.org, *.example,
 * *.test, *.invalid, *.localhost), which cannot belong to anybody; `name@2x.png`-style file names (a file extension
 * as the "top-level domain"); and `git@github.com:owner/repo` SSH remotes.
 */
const EMAIL = /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@((?:[A-Za-z0-9-]{1,63}\.){1,8}([A-Za-z]{2,24}))(?![A-Za-z0-9-]|\.[A-Za-z0-9])/g
const RESERVED_DOMAIN = /(?:^|\.)(?:example\.(?:com|net|org)|example|test|invalid|localhost)$/i
const FILE_EXTENSION_TLD = /^(?:png|jpe?g|gif|svg|webp|ico|bmp|pdf|js|mjs|cjs|ts|tsx|jsx|json|md|css|scss|html?|txt|ya?ml|toml|lock|wasm|zip|gz)$/i

function emailSpans(text: string): Span[] {
  const spans: Span[] = []
  // An address needs `@`: a text without it is not searched.
  for (const m of text.includes('@') ? text.matchAll(EMAIL) : []) {
    const [whole, domain, tld] = m
    if (RESERVED_DOMAIN.test(domain) || FILE_EXTENSION_TLD.test(tld)) continue
    const after = text.slice(m.index + whole.length, m.index + whole.length + 2)
    if (/^:[\w~./-]/.test(after) && !/^:\d/.test(after)) continue // git@github.com:owner/repo.git
    spans.push({start: m.index, end: m.index + whole.length, rule: 'email'})
  }
  return spans
}

/**
 * The seed's phone pattern `(\+?\d{1,3}[-.\s]?)?\(?\d{3}\)?[-.\s]?\d{3,4}[-.\s]?\d{4}` also matches the digit runs
 * in UUIDs, Unix timestamps, hashes and compact dates. Instead, a phone number is one of these shapes, standing on
 * its own (no letter, digit, `-`, `.`, `/`, `@` or `#` right before or after it):
 *   international  `+81 90-1234-5678`, `+44 20 7946 0958`, `+1 (555) 123-4567`, `+819012345678` — 9 to 15 digits;
 *   area in parens `(555) 123-4567`, `(03) 1234-5678` — 9 to 11 digits;
 *   national, trunk 0  `090-1234-5678`, `03-1234-5678`, `020 7946 0958`, `01 23 45 67 89`, `09012345678` —
 *                  10 or 11 digits, separated by `-` or spaces (never `.`: `0.1.20260202` is a version);
 *   North American `555-123-4567`, `555.123.4567`, `555 123-4567` — same separator, or space then `-`.
 * Any candidate that holds a date (`2026-02-02`, `02-02-2026`), or whose digits are all the same, is not a phone.
 * Not found (documented trade-off): US numbers written as ten bare digits or with spaces only (`555 123 4567`),
 * which cannot be told from ids and lists of numbers.
 */
const BEFORE = String.raw`(?<![\w.+/@#-]|(?<!tel):)`
const AFTER = String.raw`(?![\w/@#]|[.:,-]\d)`
const PHONE_SHAPES = [
  String.raw`\+\d{1,3}(?:[ .-]?(?:\(\d{1,5}\)|\d{1,8})){1,6}`,
  String.raw`\(\d{2,5}\)[ .-]?\d{1,4}[ .-]?\d{3,4}`,
  String.raw`0\d{1,4}(?:[ -]\d{1,8}){1,4}`,
  String.raw`0\d{9,10}`,
  String.raw`[2-9]\d{2}([.-])\d{3}\1\d{4}`,
  String.raw`[2-9]\d{2} \d{3}-\d{4}`,
]
const PHONE = new RegExp(`${BEFORE}(?:${PHONE_SHAPES.map((s) => `(?:${s})`).join('|')})${AFTER}`, 'g')
const DATE_INSIDE = /(?:^|\D)(?:\d{4}([-/.])\d{1,2}\1\d{1,2}|\d{1,2}([-/.])\d{1,2}\2\d{4})(?:\D|$)/

function isPhone(candidate: string): boolean {
  const digits = candidate.replace(/\D/g, '')
  const [min, max] = candidate.startsWith('+') ? [9, 15] : candidate.startsWith('(') ? [9, 11] : candidate.startsWith('0') ? [10, 11] : [10, 10]
  return digits.length >= min && digits.length <= max && !/^(\d)\1+$/.test(digits) && !DATE_INSIDE.test(candidate)
}

function phoneSpans(text: string): Span[] {
  const spans: Span[] = []
  for (const m of text.matchAll(PHONE)) {
    // The shapes are greedy over spaces, so `+44 20 7946 0958 3 times` first gives one group too many: drop
    // space-separated groups from the end until the candidate is a phone number (or nothing is left).
    let candidate = m[0]
    while (!isPhone(candidate) && / \d+$/.test(candidate)) candidate = candidate.replace(/ \d+$/, '')
    if (isPhone(candidate)) spans.push({start: m.index, end: m.index + candidate.length, rule: 'phone'})
  }
  return spans
}

// ---------------------------------------------------------------------------------------------------------------
// one text → its spans; fields → findings

/**
 * Overlapping spans become one (the earlier one names it). An e-mail or phone span that overlaps a secret is
 * dropped instead: `https://user:pw@host.io` also looks like the e-mail `pw@host.io`, and the secret's span
 * already covers what must go.
 */
function mergeSpans(spans: Span[]): Span[] {
  const isSecret = (span: Span) => (SENSITIVE_RULES[span.rule]?.kind ?? 'secret') === 'secret'
  const secrets = spans.filter(isSecret)
  const personal = spans.filter((span) => !isSecret(span) && !secrets.some((s) => span.start < s.end && s.start < span.end))
  const sorted = [...secrets, ...personal].sort((a, b) => a.start - b.start || b.end - a.end)
  const merged: Span[] = []
  for (const span of sorted) {
    const last = merged.at(-1)
    if (last && span.start < last.end) last.end = Math.max(last.end, span.end)
    else merged.push({...span})
  }
  return merged
}

async function scanText(text: string): Promise<Span[]> {
  return (await scanTexts([text]))[0]
}

/**
 * Put between the texts of one scan. No preset rule's pattern crosses it: each stops at a line break or at a
 * character outside its token class, and a NUL is in none of them (tested against scanning each text alone).
 */
const TEXT_BREAK = '\n\u0000\n'

/**
 * The spans of each text. secretlint costs ~1 ms a call whatever the text's size (it builds its rules and a line
 * index every time), so the texts of one write — the fields of an event, the files of a push — go through it as
 * one text, and each span comes back to the text it starts in. Our own patterns run on each text alone.
 */
async function scanTexts(texts: readonly string[]): Promise<Span[][]> {
  const starts: number[] = []
  let at = 0
  for (const text of texts) {
    starts.push(at)
    at += text.length + TEXT_BREAK.length
  }
  const presetSpans = texts.some((text) => text.length >= 6) ? await secretlintSpans(texts.join(TEXT_BREAK)) : []
  const perText: Span[][] = texts.map(() => [])
  for (const span of presetSpans) {
    const i = lastAtOrBefore(starts, span.start)
    const end = starts[i] + texts[i].length
    if (span.start >= end) continue
    perText[i].push({start: span.start - starts[i], end: Math.min(span.end, end) - starts[i], rule: span.rule})
  }
  return texts.map((text, i) => (text.length < 6 ? [] : mergeSpans([...perText[i], ...ownSecretSpans(text), ...emailSpans(text), ...phoneSpans(text)])))
}

/** The index of the last of the ascending `starts` that is at most `offset`. */
function lastAtOrBefore(starts: readonly number[], offset: number): number {
  let low = 0
  let high = starts.length - 1
  while (low < high) {
    const middle = (low + high + 1) >> 1
    if (starts[middle] <= offset) low = middle
    else high = middle - 1
  }
  return low
}

function position(text: string, offset: number): {line: number; column: number} {
  let line = 1
  let lineStart = 0
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++
    lineStart = i + 1
  }
  return {line, column: offset - lineStart + 1}
}

function toFinding(text: string, field: string, span: Span): SensitiveFinding {
  const kind = SENSITIVE_RULES[span.rule]?.kind ?? 'secret'
  return {kind, rule: span.rule, field, ...position(text, span.start)}
}

/**
 * Scans every field (e.g. `{content_md, 'source.thread_id': …}`) and returns what it found, in field order and then
 * by position. Empty when the fields are clean.
 */
export async function findSensitive(fields: Record<string, string>): Promise<SensitiveFinding[]> {
  const scanned = Object.entries(fields).filter(([, text]) => typeof text === 'string' && text.length > 0)
  const spans = await scanTexts(scanned.map(([, text]) => text))
  return scanned.flatMap(([field, text], i) => spans[i].map((span) => toFinding(text, field, span)))
}

/** The free-text fields of a memory event that a write is scanned in, keyed by the names findings use. */
export function sensitiveFieldsOf(event: {
  content_md: string
  dedupe_key?: string
  run_id?: string
  source?: {thread_id?: string; message_id?: string}
}): Record<string, string> {
  const fields: Record<string, string> = {content_md: event.content_md}
  if (event.dedupe_key) fields.dedupe_key = event.dedupe_key
  if (event.run_id) fields.run_id = event.run_id
  if (event.source?.thread_id) fields['source.thread_id'] = event.source.thread_id
  if (event.source?.message_id) fields['source.message_id'] = event.source.message_id
  return fields
}

/** "a GitHub token in content_md at line 1, column 7; an e-mail address in content_md at line 2, column 3". */
export function describeFindings(findings: SensitiveFinding[]): string {
  return findings
    .map((f) => `${SENSITIVE_RULES[f.rule]?.label ?? 'a secret'} in ${f.field} at line ${f.line}, column ${f.column}`)
    .join('; ')
}

/** Refuses (exit 5) when any field holds a secret or personal data; the error's `data.findings` lists them. */
export async function assertNoSensitive(fields: Record<string, string>): Promise<void> {
  const findings = await findSensitive(fields)
  if (findings.length === 0) return
  throw new SecretRefusedError(
    `refused: the event holds ${describeFindings(findings)}. Secrets and personal data are never stored in the shared memory; remove them and write again.`,
    {findings},
  )
}

/**
 * Refuses (exit 5) the text of a memory file holding a secret or personal data; findings are named by
 * `.memory/<path>`, line and column. One message for every door that writes a memory file: the commands, the MCP
 * tools, the hooks, and the server's push and write routes.
 */
export async function assertCleanMemoryFile(path: string, text: string): Promise<void> {
  await assertCleanMemoryFiles(new Map([[path, text]]))
}

/** As assertCleanMemoryFile, for the files of one write (a push): scanned together, refused together. */
export async function assertCleanMemoryFiles(files: ReadonlyMap<string, string>): Promise<void> {
  const findings = await findSensitive(Object.fromEntries([...files].map(([path, text]) => [`.memory/${path}`, text])))
  if (findings.length === 0) return
  const paths = [...new Set(findings.map((finding) => finding.field.slice('.memory/'.length)))]
  throw new SecretRefusedError(
    `refused: found ${describeFindings(findings)}. Secrets and personal data are never stored in the shared memory; remove them and write again; nothing was written.`,
    {findings, path: paths[0], paths},
  )
}

/** The text with every finding replaced by `[REDACTED:<rule>]`, and the findings (positions in the original text). */
export async function maskSensitive(text: string, field = 'content_md'): Promise<{text: string; findings: SensitiveFinding[]}> {
  const spans = await scanText(text)
  let masked = text
  for (const span of [...spans].reverse()) masked = `${masked.slice(0, span.start)}[REDACTED:${span.rule}]${masked.slice(span.end)}`
  return {text: masked, findings: spans.map((span) => toFinding(text, field, span))}
}
