/**
 * Typed errors with a stable `code` and the contract's exit code (CONTRACT §2).
 * Lower layers throw these; only the base command turns them into an exit status.
 */
export const ExitCode = {
  ok: 0,
  failed: 1,
  badInput: 2,
  unreachable: 3,
  conflictLeft: 4,
  secretRefused: 5,
  locked: 6,
} as const

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

export interface JarvisErrorOptions {
  code: string
  exit: ExitCodeValue
  data?: Record<string, unknown>
  cause?: unknown
}

export class JarvisError extends Error {
  readonly code: string
  readonly exit: ExitCodeValue
  readonly data: Record<string, unknown>

  constructor(message: string, options: JarvisErrorOptions) {
    super(message, {cause: options.cause})
    this.name = new.target.name
    this.code = options.code
    this.exit = options.exit
    this.data = options.data ?? {}
  }
}

/** Bad usage or bad input: a malformed file, a field that fails its schema, a flag out of range. */
export class BadInputError extends JarvisError {
  constructor(message: string, data?: Record<string, unknown>, cause?: unknown) {
    super(message, {code: 'BAD_INPUT', exit: ExitCode.badInput, data, cause})
  }
}

/**
 * A memory file or folder this user may not read (its permissions): named with what to do. A sync sets it aside and
 * syncs the rest; a command that needs it stops here, never with the system's bare EACCES.
 */
export class UnreadableFileError extends BadInputError {
  constructor(path: string, folder: boolean, cause?: unknown) {
    super(`${path === '' ? '.memory/' : `.memory/${path}${folder ? '/' : ''}`}: ${unreadableProblem(folder)}`, {path, folder}, cause)
  }
}

/** What is wrong with a memory file or folder this user may not read, and what to do (UnreadableFileError, a sync's report). */
export function unreadableProblem(folder: boolean): string {
  return folder
    ? 'a folder this user may not read (permission denied): nothing in it is synced, nor deleted anywhere, until it can be; give it back read access (chmod u+rx) or move it out of .memory/'
    : 'this user may not read it (permission denied): it is not synced, nor deleted anywhere, until it can be; give it back read access (chmod u+r) or move it out of .memory/'
}

/** The working directory is not inside a jarvis tree. */
export class NotATreeError extends JarvisError {
  constructor(start: string) {
    super(`not a jarvis tree (no .memory/ in ${start} or any parent); run \`jarvis init\` or pass --dir`, {
      code: 'NOT_A_TREE',
      exit: ExitCode.badInput,
      data: {start},
    })
  }
}

/** A path that would leave its tree: `..`, absolute, NUL byte, or a symlink pointing outside. */
export class PathRefusedError extends JarvisError {
  constructor(path: string, reason: string) {
    super(`path refused: ${JSON.stringify(path)}: ${reason}`, {
      code: 'PATH_REFUSED',
      exit: ExitCode.badInput,
      data: {path, reason},
    })
  }
}

/** One line per problem, each `file: path.to.field: message` (or `file:line:col: message`). */
export class SchemaError extends JarvisError {
  readonly file: string
  readonly problems: string[]

  constructor(file: string, problems: string[]) {
    super(problems.map((problem) => `${file}: ${problem}`).join('\n'), {
      code: 'SCHEMA',
      exit: ExitCode.badInput,
      data: {file, problems},
    })
    this.file = file
    this.problems = problems
  }
}

/** The shared memory cannot be read or reached: stop, never guess. */
export class UnreachableError extends JarvisError {
  constructor(message: string, data?: Record<string, unknown>, cause?: unknown) {
    super(message, {code: 'UNREACHABLE', exit: ExitCode.unreachable, data, cause})
  }
}

/**
 * One error for several things a command left undone at once: every message, in order, with the highest of their
 * exit codes (and that one's code and data). None: undefined; one: itself.
 */
export function mostSevere(errors: readonly JarvisError[]): JarvisError | undefined {
  if (errors.length <= 1) return errors[0]
  const worst = errors.reduce((a, b) => (b.exit > a.exit ? b : a))
  return new JarvisError(errors.map((error) => error.message).join('\n'), {code: worst.code, exit: worst.exit, data: worst.data})
}

/** A conflict was left for a person to resolve. */
export class ConflictLeftError extends JarvisError {
  constructor(message: string, data?: Record<string, unknown>) {
    super(message, {code: 'CONFLICT_LEFT', exit: ExitCode.conflictLeft, data})
  }
}

/** A write held a secret or personal data and was refused before anything was written. */
export class SecretRefusedError extends JarvisError {
  constructor(message: string, data?: Record<string, unknown>) {
    super(message, {code: 'SECRET_REFUSED', exit: ExitCode.secretRefused, data})
  }
}

/** Another process holds the tree lock. */
export class LockedError extends JarvisError {
  constructor(root: string, holder: {pid?: number; since?: string; host?: string}) {
    const who = holder.pid === undefined ? 'another process' : `process ${holder.pid}${holder.host ? ` on ${holder.host}` : ''}`
    const since = holder.since ? ` since ${holder.since}` : ''
    super(`the jarvis tree at ${root} is locked by ${who}${since}; try again when it has finished`, {
      code: 'LOCKED',
      exit: ExitCode.locked,
      data: {root, ...holder},
    })
  }
}

/** A file that cannot be written (permissions, a read-only file, a folder in the way): nothing was changed, or the message says what was not put back. */
export class FileNotWritableError extends JarvisError {
  constructor(message: string, data?: Record<string, unknown>, cause?: unknown) {
    super(message, {code: 'NOT_WRITABLE', exit: ExitCode.failed, data, cause})
  }
}

const INCOMPLETE_INSTALL = 'INCOMPLETE_INSTALL'

/**
 * An install of jarvis without a file of its own (a build stopped halfway, a file deleted): jarvis's problem, never a
 * memory file's. Told by its code, not its class: the fast door's bundles each hold a copy of this module.
 */
export class IncompleteInstallError extends JarvisError {
  constructor(file: string) {
    super(`this install of jarvis is incomplete: ${file} is missing (run \`npm run build\` in its folder, or install it again)`, {code: INCOMPLETE_INSTALL, exit: ExitCode.failed, data: {file}})
  }
}

export function isIncompleteInstall(error: unknown): boolean {
  return error instanceof Error && (error as {code?: unknown}).code === INCOMPLETE_INSTALL
}

export function isJarvisError(error: unknown): error is JarvisError {
  return error instanceof JarvisError
}
