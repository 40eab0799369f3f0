import {Flags, ux} from '@oclif/core'

import {JarvisCommand} from '../cli/base-command.js'
import {databaseFlag} from '../cli/flags.js'
import {serveUntilSignal, type ServeResult} from '../cli/serve.js'

export default class Serve extends JarvisCommand<typeof Serve> {
  static summary = 'Run the reference jarvis server (HTTP + WebSocket + web dashboard; embedded SQLite, or PostgreSQL for a team).'
  static description = `With neither --tokens nor JARVIS_SERVER_TOKENS, one token per agent is created in the data directory (mode 0600) and printed the first time. Stops cleanly on SIGTERM or Ctrl-C, finishing the writes in flight. With --json, one line as soon as it listens ({"event":"listening","url",…}) and the envelope when it stops.
Keys a team hands out and takes back — per agent, read, write or admin, with an expiry — come from \`jarvis serve token create|list|revoke\` on the same data directory; the tokens file keeps working beside them. One server hosts several workspaces, isolated memories of their own: a key made with --workspace W opens only W's files, events and active project; the tokens file is the default workspace. Its address opened in a browser is the web dashboard: sign in with an agent's token to read and edit memory files, the event log, pinned memory, agents and the active project. GET /healthz (alive) and GET /readyz (its storage answers) need no token. At --log-level info, one JSON line per request with its id.
With --database postgres://… (or JARVIS_DATABASE_URL) the memory lives in that PostgreSQL database, and any number of jarvis serve processes on it act as one server: the same revisions and conflicts, every WebSocket client hears every change. The schema is created or updated at start.
Apps such as ChatGPT and Claude's apps connect to <address>/mcp and sign in with OAuth: the person allows each one on the dashboard, as one agent of one workspace. They need an HTTPS address they can reach: serve with --tls-cert and --tls-key, or behind a TLS reverse proxy with --public-url https://….`
  static examples = ['<%= config.bin %> serve', '<%= config.bin %> serve --port 0 --data /tmp/jarvis-data', '<%= config.bin %> serve --tokens tokens.json', '<%= config.bin %> serve --host 0.0.0.0 --database postgres://jarvis@db.internal:5432/jarvis', '<%= config.bin %> serve --host 0.0.0.0 --port 443 --tls-cert fullchain.pem --tls-key privkey.pem --public-url https://memory.example.com', '<%= config.bin %> serve --public-url https://memory.example.com   # behind a TLS reverse proxy']

  static flags = {
    host: Flags.string({description: 'Address to listen on.', default: '127.0.0.1'}),
    port: Flags.integer({description: 'Port to listen on (0 picks a free one).', default: 8787, min: 0, max: 65_535}),
    data: Flags.string({description: 'Data directory (default: $XDG_DATA_HOME/jarvis).', env: 'JARVIS_DATA'}),
    database: databaseFlag,
    tokens: Flags.string({description: 'JSON file mapping each token to its agent id.'}),
    'tls-cert': Flags.string({description: 'Serve HTTPS with this PEM certificate (with --tls-key).', dependsOn: ['tls-key']}),
    'tls-key': Flags.string({description: 'The PEM private key of --tls-cert.', dependsOn: ['tls-cert']}),
    'public-url': Flags.string({description: 'The HTTPS address apps reach this server at (a reverse proxy\'s), for their OAuth sign-in. [default: the address it listens on]', env: 'JARVIS_PUBLIC_URL'}),
    'log-level': Flags.option({options: ['silent', 'error', 'warn', 'info', 'debug'] as const, default: 'warn', description: 'Structured (pino) log level, on stderr.'})(),
  }

  async run(): Promise<ServeResult> {
    return serveUntilSignal(
      {
        host: this.flags.host,
        port: this.flags.port,
        dataDir: this.flags.data,
        databaseUrl: this.flags.database,
        tokensFile: this.flags.tokens,
        logLevel: this.flags['log-level'],
        tlsCert: this.flags['tls-cert'],
        tlsKey: this.flags['tls-key'],
        publicUrl: this.flags['public-url'],
      },
      // Under --json stdout carries only the final envelope, so the running commentary goes to stderr.
      (line) => (this.jsonEnabled() ? process.stderr.write(`${line}\n`) : this.log(line)),
      (line) => this.warn(line),
      (line) => this.jsonEnabled() && ux.stdout(JSON.stringify(line)),
    )
  }

  /** `--json` is JSON Lines: the listening line first, then this envelope when the server stops. */
  logJson(json: unknown): void {
    ux.stdout(JSON.stringify(json))
  }
}
