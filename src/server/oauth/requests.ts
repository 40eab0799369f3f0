/**
 * The parameters each endpoint of the authorization server takes, checked so that an app is told in one line what is
 * wrong: `code_challenge: required (PKCE with S256)`. The MCP SDK's handlers check the same parameters with the same
 * zod rules, but answer a failure with zod's raw issue list (a JSON array with line breaks) as `error_description`.
 * express-app.ts runs these checks before the SDK's handlers, or, for what `/authorize` answers by sending the app
 * back, when the SDK sends it back; a request these checks pass is one the SDK's own checks pass too.
 *
 * The text follows RFC 6749 §5.2: `error_description` holds printable ASCII without `"` or `\`.
 */
import {OAuthClientMetadataSchema} from '@modelcontextprotocol/sdk/shared/auth.js'
import {z} from 'zod'

/** What a parameter is, said after "required" so the app's developer knows what to send. */
const PARAMETER_NOTES: Record<string, string> = {
  client_id: 'the id /register gave the app, or the address of its client metadata document',
  response_type: 'code',
  code_challenge: 'PKCE with S256',
  code_challenge_method: 'S256',
  grant_type: 'authorization_code or refresh_token',
  code: 'the authorization code the app was sent back with',
  code_verifier: 'PKCE: the verifier of the code_challenge sent to /authorize',
  refresh_token: 'the refresh token of the last token answer',
  token: 'the access or refresh token to revoke',
  redirect_uris: 'the addresses the app is sent back to after sign-in',
}

const optionalText = z.string().optional()
const optionalUrl = z.string().url().optional()
const clientAuthentication = {client_id: z.string(), client_secret: optionalText}

/** `/authorize`: what decides where the app may be sent back; a problem here is shown, never redirected (RFC 6749 §4.1.2.1). */
const authorizationClientParams = z.object({
  client_id: z.string(),
  redirect_uri: z.string().refine((value) => URL.canParse(value), 'must be a URL').optional(),
})

/** `/authorize`: the rest of the request; a problem here sends the app back to its redirect URI with the error. */
const authorizationRequestParams = z.object({
  response_type: z.literal('code'),
  code_challenge: z.string(),
  code_challenge_method: z.literal('S256'),
  scope: optionalText,
  state: optionalText,
  resource: optionalUrl,
})

const tokenParams = z.object({...clientAuthentication, grant_type: z.string()})
/** The grants the SDK's token handler takes; it refuses any other with `unsupported_grant_type`, readably. */
const grantParams = new Map<string, z.ZodType>([
  ['authorization_code', z.object({code: z.string(), code_verifier: z.string(), redirect_uri: optionalText, resource: optionalUrl})],
  ['refresh_token', z.object({refresh_token: z.string(), scope: optionalText, resource: optionalUrl})],
])

const revocationParams = z.object({...clientAuthentication, token: z.string(), token_type_hint: optionalText})

/** Text as `error_description` may hold it (RFC 6749 §5.2): printable ASCII without `"` and `\`. */
function describable(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?')
}

/** A value the request holds, quoted in a description: at most 60 characters. */
function quoted(value: unknown): string {
  const shown = describable(typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))).replace(/'/g, '?')
  return `'${shown.length > 60 ? `${shown.slice(0, 57)}...` : shown}'`
}

function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'a list'
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<PropertyKey, unknown>)[key]
  }
  return value
}

/** What is wrong with `value` (undefined: not given), as `issue` says it. */
function whatIsWrong(issue: z.core.$ZodIssue, value: unknown, note: string | undefined): string {
  if (value === undefined) return note === undefined ? 'required' : `required (${note})`
  // A form or query parameter given twice arrives as a list of its values.
  if (Array.isArray(value) && issue.code === 'invalid_type' && issue.expected === 'string') return 'given more than once'
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${issue.expected === 'array' ? 'a list' : issue.expected === 'object' ? 'an object' : `a ${issue.expected}`}, not ${kindOf(value)}`
    case 'invalid_value':
      return `must be ${issue.values.map((expected) => String(expected)).join(' or ')}, not ${quoted(value)}`
    case 'invalid_format':
      return `must be ${issue.format === 'url' ? 'a URL' : `in ${issue.format} format`}, not ${quoted(value)}`
    default:
      return issue.message
  }
}

/** One zod issue: the parameter it is about (`redirect_uris[0]`) and what is wrong there. */
function describeIssue(issue: z.core.$ZodIssue, input: unknown, at: readonly PropertyKey[] = []): {parameter: string; problem: string} {
  const path = [...at, ...issue.path]
  // A union (a URL or ''): what the first form says is wrong.
  if (issue.code === 'invalid_union' && issue.errors[0]?.[0] !== undefined) return describeIssue(issue.errors[0][0], input, path)
  const parameter = path.length === 0 ? 'the request' : path.map((key) => (typeof key === 'number' ? `[${key}]` : String(key))).join('.').replace(/\.\[/g, '[')
  const note = path.length === 1 && typeof path[0] === 'string' ? PARAMETER_NOTES[path[0]] : undefined
  return {parameter, problem: whatIsWrong(issue, valueAt(input, path), note)}
}

/** The problems of `input` against `schema` (the first of each parameter: one reason is enough), in one line, or null. */
function problemOf(schema: z.ZodType, input: unknown): string | null {
  const parsed = schema.safeParse(input)
  if (parsed.success) return null
  const byParameter = new Map<string, string>()
  for (const issue of parsed.error.issues) {
    const {parameter, problem} = describeIssue(issue, input)
    if (!byParameter.has(parameter)) byParameter.set(parameter, problem)
  }
  return describable([...byParameter].map(([parameter, problem]) => `${parameter}: ${problem}`).join('; '))
}

/** An OAuth error answer: its `error` code and one line for `error_description`. */
export interface OAuthProblem {
  error: string
  description: string
}

/** `/authorize`: a problem with `client_id` or `redirect_uri`, which is answered to the person, not sent to the app. */
export function authorizationClientProblem(params: unknown): OAuthProblem | null {
  const description = problemOf(authorizationClientParams, params)
  return description === null ? null : {error: 'invalid_request', description}
}

/** `/authorize`: a problem with the rest of the request, which sends the app back with the error (RFC 6749 §4.1.2.1). */
export function authorizationRequestProblem(params: unknown): OAuthProblem | null {
  const description = problemOf(authorizationRequestParams, params)
  if (description === null) return null
  const responseType = valueAt(params, ['response_type'])
  return {error: typeof responseType === 'string' && responseType !== 'code' ? 'unsupported_response_type' : 'invalid_request', description}
}

/** `/token` (after client authentication was moved into the form). */
export function tokenRequestProblem(params: unknown): OAuthProblem | null {
  const description = problemOf(tokenParams, params) ?? problemOf(grantParams.get(String(valueAt(params, ['grant_type']))) ?? z.unknown(), params)
  return description === null ? null : {error: 'invalid_request', description}
}

/** `/revoke` (after client authentication was moved into the form). */
export function revocationRequestProblem(params: unknown): OAuthProblem | null {
  const description = problemOf(revocationParams, params)
  return description === null ? null : {error: 'invalid_request', description}
}

/** `/register`: the client metadata, against the SDK's own schema (RFC 7591 §3.2.2: `invalid_client_metadata`). */
export function registrationProblem(metadata: unknown): OAuthProblem | null {
  const description = problemOf(OAuthClientMetadataSchema, metadata)
  return description === null ? null : {error: 'invalid_client_metadata', description}
}

/**
 * Where `/authorize` sends the app back, completed: the request's `state`, which the app checks before it believes an
 * answer (RFC 6749 §4.1.2.1), and this server's `iss` (RFC 9207 §2, which the metadata says it sends); an error the
 * checks here describe gets their one line. `target` is the SDK's or the provider's; anything else than an absolute
 * address (the consent page, on this server) is left as it is.
 */
export function backToApp(target: string, params: unknown, issuer: string): string {
  if (!URL.canParse(target)) return target
  const back = new URL(target)
  if (back.searchParams.has('error')) {
    const problem = authorizationRequestProblem(params)
    if (problem !== null) {
      back.searchParams.set('error', problem.error)
      back.searchParams.set('error_description', problem.description)
    }
  }
  const state = valueAt(params, ['state'])
  if (typeof state === 'string') back.searchParams.set('state', state)
  back.searchParams.set('iss', issuer)
  return back.href
}
