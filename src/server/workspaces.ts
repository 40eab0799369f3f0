/**
 * The workspaces one `jarvis serve` hosts (docs/decisions/workspaces.md): each is its own storage — the default one
 * the server's own database, any other a SQLite file or PostgreSQL schema of its own — with its own services, file
 * index and WebSocket clients. A request only ever gets the services of its token's workspace (app.ts), and those
 * services only hold that workspace's storage, so no query can reach another workspace's memory.
 *
 * A workspace other than the default is opened at its first authenticated request (its storage created and migrated
 * when new) and stays open until the server closes.
 */
import createDebug from 'debug'

import {HostedState} from '../mcp/hosted.js'
import {AuditService} from './audit-service.js'
import {Broadcaster} from './broadcast.js'
import {EventService} from './events-service.js'
import {MemoryService} from './service.js'
import type {NewAuditEntry, ServerStorage} from './storage/types.js'
import {DEFAULT_WORKSPACE} from './storage/workspace-name.js'

const debug = createDebug('jarvis:server:workspaces')

/** Everything a request of one workspace uses. */
export interface Workspace {
  name: string
  storage: ServerStorage
  memory: MemoryService
  events: EventService
  broadcaster: Broadcaster
  /** The workspace's audit log, which the memory and event services record in. */
  audit: AuditService
  /** The file index that MCP search and the dashboard's search share. */
  hosted: HostedState
}

export interface WorkspaceRegistryOptions {
  /** The default workspace's storage, open already; it also holds every workspace's keys. Closed last. */
  root: ServerStorage
  /** Opens (creating when new) the storage of a workspace other than the default one. */
  open(workspace: string): Promise<ServerStorage>
  now: () => Date
  maxFileBytes: number
  /** Told when an audit entry could not be written: the change it records stands, and its answer is not an error. */
  onAuditError: (error: unknown, entry: NewAuditEntry, workspace: string) => void
}

export class WorkspaceRegistry {
  private readonly opened = new Map<string, Promise<Workspace>>()
  /** The workspaces open and listening (an opening still under way is not here: it closes itself if the registry closed). */
  private readonly ready = new Map<string, Workspace>()
  private closed = false

  constructor(private readonly options: WorkspaceRegistryOptions) {
    const root = this.assemble(DEFAULT_WORKSPACE, options.root)
    this.ready.set(DEFAULT_WORKSPACE, root)
    this.opened.set(DEFAULT_WORKSPACE, Promise.resolve(root))
  }

  /** The workspace, opened now if it is not yet; two requests that come together share one opening. */
  get(name: string): Promise<Workspace> {
    if (this.closed) return Promise.reject(new Error('the server is closing'))
    let workspace = this.opened.get(name)
    if (workspace === undefined) {
      workspace = this.openOne(name)
      this.opened.set(name, workspace)
      // A failed opening (database down) is tried again at the next request, not remembered.
      workspace.catch(() => this.opened.delete(name))
    }
    return workspace
  }

  private async openOne(name: string): Promise<Workspace> {
    debug('opening workspace %s', name)
    const storage = await this.options.open(name)
    if (this.closed) {
      await storage.close()
      throw new Error('the server is closing')
    }
    const workspace = this.assemble(name, storage)
    try {
      await this.listen(workspace)
      if (this.closed) throw new Error('the server is closing')
    } catch (error) {
      await storage.close().catch(() => {})
      throw error
    }
    this.ready.set(name, workspace)
    return workspace
  }

  private assemble(name: string, storage: ServerStorage): Workspace {
    const {now, maxFileBytes} = this.options
    const broadcaster = new Broadcaster(storage.relay)
    const audit = new AuditService({storage, broadcaster, onError: (error, entry) => this.options.onAuditError(error, entry, name)})
    return {
      name,
      storage,
      broadcaster,
      audit,
      memory: new MemoryService({storage, broadcaster, now, maxFileBytes, audit}),
      events: new EventService({storage, now, broadcaster, audit}),
      hosted: new HostedState(),
    }
  }

  /** From now on the workspace's clients hear what the other processes on its storage broadcast. */
  async listen(workspace: Workspace): Promise<void> {
    const relay = workspace.storage.relay
    if (relay) await relay.subscribe((data) => workspace.broadcaster.deliver(data))
  }

  /** The default workspace (open from the start). */
  root(): Promise<Workspace> {
    return this.get(DEFAULT_WORKSPACE)
  }

  /** Starts a close handshake with every WebSocket client of every workspace. */
  closeClients(): void {
    for (const workspace of this.ready.values()) workspace.broadcaster.closeAll()
  }

  /** Drops every WebSocket client of every workspace at once. */
  terminateClients(): void {
    for (const workspace of this.ready.values()) workspace.broadcaster.terminateAll()
  }

  /** Closes every workspace's storage, the default one's last; an opening still under way closes its own. */
  async close(): Promise<void> {
    this.closed = true
    const others = [...this.ready.values()].filter((workspace) => workspace.name !== DEFAULT_WORKSPACE)
    this.ready.clear()
    try {
      await Promise.all(others.map((workspace) => workspace.storage.close()))
    } finally {
      await this.options.root.close()
    }
  }
}
