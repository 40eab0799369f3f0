/**
 * The access people gave apps, for `jarvis serve token list|revoke` beside the API keys: each grant names the app,
 * the agent it acts as, the workspace and role, and until when it can refresh. Revoking one refuses its every token
 * from the next request on, in every process (they are read at each request), and ends its refreshing.
 */
import {BadInputError} from '../../errors.js'
import {auditKey} from '../keys.js'
import {assertServerData, type StorageTarget, withStorage} from '../storage/open.js'
import type {OAuthGrant, OAuthGrantListed} from '../storage/oauth-types.js'
import {checkWorkspaceName} from '../storage/workspace-name.js'

export type {OAuthGrant, OAuthGrantListed} from '../storage/oauth-types.js'

/** True for an id that names a grant (`grant_…`), not a key. */
export function isGrantId(id: string): boolean {
  return id.startsWith('grant_')
}

/** Every grant, or those of one workspace. */
export async function listGrants(options: StorageTarget & {workspace?: string}): Promise<OAuthGrantListed[]> {
  const workspace = options.workspace === undefined ? undefined : checkWorkspaceName(options.workspace, '--workspace')
  await assertServerData(options)
  const grants = await withStorage(options, (storage) => storage.oauth.listGrants(), {migrate: false})
  return workspace === undefined ? grants : grants.filter((grant) => grant.workspace === workspace)
}

export async function revokeGrant(options: StorageTarget & {id: string; now?: Date}): Promise<{grant: OAuthGrant; warnings: string[]}> {
  const now = (options.now ?? new Date()).toISOString()
  await assertServerData(options)
  const grant = await withStorage(options, (storage) => storage.oauth.revokeGrant(options.id, now))
  if (grant === null) throw new BadInputError(`no app access ${JSON.stringify(options.id)} on this server: jarvis serve token list shows them`, {field: 'id'})
  // Recorded once: revoking an access revoked before changes nothing.
  if (grant.revokedAt !== now) return {grant, warnings: []}
  return {grant, warnings: await auditKey(options, grant, now, `access of app ${JSON.stringify(grant.clientName)} (${grant.id}, as ${grant.agentId}) revoked`)}
}
