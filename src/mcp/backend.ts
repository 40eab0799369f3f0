/**
 * What the MCP tools call: one method per tool, typed by the tool table's schemas. Two implementations, one table:
 * `LocalBackend` (mcp/local.ts: `jarvis mcp` on stdio, the operations of ops/ on a tree) and the server's
 * (server/mcp/backend.ts: `/mcp` on `jarvis serve`, its file store and event log as the token's agent).
 */
import type {EditCall, GrepQuery} from './arguments.js'
import type {
  AppendInput,
  AppendOutput,
  EditOutput,
  GrepOutput,
  LsInput,
  LsOutput,
  ReadInput,
  ReadAnswer,
  RecallInput,
  RecallOutput,
  SearchInput,
  SearchOutput,
  SnapshotInput,
  SnapshotOutput,
  SyncInput,
  SyncOutput,
  TaskInput,
  TaskOutput,
  WriteInput,
  WriteOutput,
} from './schemas.js'

export interface McpBackend {
  snapshot(input: SnapshotInput): Promise<SnapshotOutput>
  append(input: AppendInput): Promise<AppendOutput>
  search(input: SearchInput): Promise<SearchOutput>
  recall(input: RecallInput): Promise<RecallOutput>
  ls(input: LsInput): Promise<LsOutput>
  read(input: ReadInput): Promise<ReadAnswer>
  write(input: WriteInput): Promise<WriteOutput>
  edit(input: EditCall): Promise<EditOutput>
  grep(input: GrepQuery): Promise<GrepOutput>
  completeTask(input: TaskInput): Promise<TaskOutput>
  sync(input: SyncInput): Promise<SyncOutput>
  /** The shared-memory instructions for this agent (`jarvis prompt`): the prompt `jarvis_instructions`. */
  instructions(): Promise<string>
}

/**
 * The texts a session has read, by content hash, so that a later write or edit naming that hash as its base can be
 * merged with a change made on disk meanwhile. Bounded: the oldest texts are forgotten first (a write naming a
 * forgotten base is refused, exit 4, rather than guessed).
 */
export class ReadTexts {
  private readonly texts = new Map<string, string>()
  private chars = 0

  constructor(
    private readonly maxEntries = 1000,
    private readonly maxChars = 64 * 1024 * 1024,
  ) {}

  remember(hash: string, text: string): void {
    if (this.texts.has(hash)) this.texts.delete(hash)
    else this.chars += text.length
    this.texts.set(hash, text)
    for (const [oldest, value] of this.texts) {
      if (this.texts.size <= this.maxEntries && this.chars <= this.maxChars) break
      if (oldest === hash) break
      this.texts.delete(oldest)
      this.chars -= value.length
    }
  }

  get(hash: string): string | undefined {
    return this.texts.get(hash)
  }
}
