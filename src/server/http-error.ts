/**
 * Errors a route answers with: `{error: code, message, ...extra}` and an HTTP status.
 * Codes are stable lowercase words that clients may branch on (docs/protocol.md, "Errors").
 */
export type HttpErrorCode =
  | 'bad_request'
  | 'bad_json'
  | 'path_refused'
  | 'invalid_content'
  | 'unauthorized'
  | 'forbidden'
  | 'sensitive'
  | 'idempotency_key_reused'
  | 'not_found'
  | 'stale'
  | 'too_large'
  | 'unsupported_media_type'
  | 'unavailable'
  | 'internal'

export class HttpError extends Error {
  readonly status: number
  readonly code: HttpErrorCode
  readonly extra: Record<string, unknown>

  constructor(status: number, code: HttpErrorCode, message: string, extra: Record<string, unknown> = {}) {
    super(message)
    this.name = 'HttpError'
    this.status = status
    this.code = code
    this.extra = extra
  }

  /** The JSON body sent to the client. */
  body(): Record<string, unknown> {
    return {error: this.code, message: this.message, ...this.extra}
  }
}
