/** session/: Claude Code, Gemini CLI and Codex CLI readers and writers around the universal message (docs/session.md). */
export * from './check.js'
export * from './claude.js'
export * from './codex.js'
export * from './gemini.js'
export * from './tools.js'
export * from './universal.js'
