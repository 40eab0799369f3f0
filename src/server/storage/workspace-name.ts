/**
 * Workspace names: one server hosts many isolated memories, each named by its tokens (docs/decisions/workspaces.md).
 * A name becomes a directory under the data directory and part of a PostgreSQL schema name, so it is strict:
 * lower-case letters, digits and `-`, at most 40 characters (the schema `jarvis_ws_<name>_…` stays within
 * PostgreSQL's 63-character identifiers).
 */
import {BadInputError} from '../../errors.js'

/** The workspace of the tokens file, of keys made without --workspace, and of every data directory made before workspaces. */
export const DEFAULT_WORKSPACE = 'default'

const WORKSPACE_NAME = /^[a-z0-9][a-z0-9-]{0,39}$/

export function isWorkspaceName(name: string): boolean {
  return WORKSPACE_NAME.test(name)
}

/** `name` when it is a workspace name; otherwise bad input naming `field` (a flag, a dump line) and what to give. */
export function checkWorkspaceName(name: string, field: string): string {
  if (isWorkspaceName(name)) return name
  throw new BadInputError(`${field}: ${JSON.stringify(name)} is not a workspace name: use 1-40 lower-case letters, digits or "-", starting with a letter or digit (e.g. team-a)`, {field: field.replace(/^--/, '')})
}
