/**
 * Fake secrets and personal data, built at run time from a seeded generator so that no secret-looking string is
 * ever stored in the repository (GitHub push protection and secret scanners would flag literal ones). Prefixes are
 * split where a scanner might match the prefix alone.
 */

/** mulberry32: small, seedable, good enough to vary fake tokens. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

export const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
export const LOWER = 'abcdefghijklmnopqrstuvwxyz'
export const DIGITS = '0123456789'
export const ALNUM = UPPER + LOWER + DIGITS
export const BASE64 = ALNUM + '+/'
export const BASE64URL = ALNUM + '-_'

export class Fakes {
  private readonly random: () => number

  constructor(seed: number) {
    this.random = seededRandom(seed)
  }

  /** `n` characters of `alphabet`, with at least one digit and one letter when the alphabet has both. */
  chars(n: number, alphabet = ALNUM): string {
    for (;;) {
      const s = Array.from({length: n}, () => alphabet[Math.floor(this.random() * alphabet.length)]).join('')
      const wantsMix = /\d/.test(alphabet) && /[A-Za-z]/.test(alphabet) && n >= 4
      if (!wantsMix || (/\d/.test(s) && /[A-Za-z]/.test(s) && /[A-Z]/.test(s) === /[A-Z]/.test(alphabet))) return s
    }
  }

  digits(n: number): string {
    return this.chars(n, DIGITS)
  }

  githubClassic(prefix = 'ghp'): string {
    return `${prefix}_${this.chars(36)}`
  }

  githubFineGrained(): string {
    return `github${'_pat_'}${this.chars(22)}_${this.chars(59)}`
  }

  awsAccessKeyId(prefix = 'AKIA'): string {
    return prefix + this.chars(16, UPPER + '234567')
  }

  awsSecret(): string {
    return this.chars(40, BASE64)
  }

  slack(prefix: 'xoxb' | 'xoxp'): string {
    return `${prefix}-${this.digits(12)}-${this.digits(13)}-${this.chars(24)}`
  }

  slackWebhook(): string {
    return `https://hooks.slack.com/services/T${this.chars(10, UPPER + DIGITS)}/B${this.chars(10, UPPER + DIGITS)}/${this.chars(24)}`
  }

  /** A bot token as BotFather gives it: the bot's id, a colon, `AA` and 33 more base64url characters. */
  telegramBot(): string {
    return `${this.digits(10)}:${'AA'}${this.chars(33, BASE64URL)}`
  }

  /** A Stripe key (`sk_live_…`, `rk_test_…`) or webhook signing secret (`whsec_…`), made here so none is ever in the repo. */
  stripe(prefix: 'sk_live' | 'rk_test' | 'whsec'): string {
    return `${prefix}_${this.chars(prefix === 'whsec' ? 32 : 99, ALNUM)}`
  }

  /** A project key with the `T3BlbkFJ` marker (base64 of "OpenAI") the preset's rule looks for. */
  openaiProject(): string {
    return `sk-${'proj'}-${this.chars(74, BASE64URL)}T3Blbk${'FJ'}${this.chars(74, BASE64URL)}`
  }

  /** An older or OpenAI-compatible `sk-` key without the marker. */
  openaiLegacy(): string {
    return `sk-${this.chars(48)}`
  }

  anthropic(): string {
    return `sk-${'ant'}-api03-${this.chars(93, BASE64URL)}AA`
  }

  npm(): string {
    return `npm_${this.chars(36)}`
  }

  sendgrid(): string {
    return `S${'G'}.${this.chars(22)}.${this.chars(43)}`
  }

  linear(): string {
    return `lin_${'api'}_${this.chars(40)}`
  }

  shopify(): string {
    return `shp${'at'}_${this.chars(32, 'abcdef' + DIGITS)}`
  }

  jwt(): string {
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
    return `${part({alg: 'HS256', typ: 'JWT'})}.${part({sub: this.digits(10), iat: 1_770_000_000 + Number(this.digits(5)), name: this.chars(8, LOWER)})}.${this.chars(43, BASE64URL)}`
  }

  /** A PEM private key: `MII` (an ASN.1 SEQUENCE, what real keys start with) and base64 lines of 64. */
  pem(label: 'RSA' | 'OPENSSH' | '' = 'RSA', bodyLength = 1600): string {
    const head = label === 'OPENSSH' ? 'b3BlbnNzaC1rZXktdjE' : 'MIIEvQ'
    const body = (head + this.chars(bodyLength, BASE64)).replace(/(.{64})/g, '$1\n').trimEnd()
    const kind = `${label ? `${label} ` : ''}PRIVATE ${'KEY'}`
    return `-----BEGIN ${kind}-----\n${body}\n-----END ${kind}-----`
  }

  password(): string {
    return `${this.chars(6, LOWER)}${this.digits(2)}${this.chars(3, UPPER)}!${this.chars(2, LOWER)}`
  }

  email(domain = 'gmail.com'): string {
    return `${this.chars(5, LOWER)}.${this.chars(6, LOWER)}@${domain}`
  }
}

/** 4,000-character texts made to make a careless pattern backtrack, with the rules the scan must find in each. */
export const BACKTRACKING_TEXTS: ReadonlyArray<readonly [name: string, text: string, rules: string[]]> = [
  ['a run of "a_"', 'a_'.repeat(2000), []],
  ['dots before an @', `${'x.'.repeat(1999)}@`, []],
  ['spaced digits', '1 '.repeat(2000), []],
  ['digits', DIGITS.repeat(400), []],
  ['a password of "="', `password${'='.repeat(3990)}`, ['password-assignment']],
  ['a private key with no end', `-----BEGIN ${'PRIVATE '}KEY-----\n${'A'.repeat(3900)}`, ['private-key']],
]
