/** Agents: each one's worker memory (`jarvis/<agent>.json`): status, last active, recent tasks. */
import {useCallback, useEffect, useState} from 'preact/hooks'

import {liveFiles, messageOf, pullFiles, type WorkerMemory} from '../api.js'
import {Notice, Time, useLive} from '../ui.js'

const SHOWN_TASKS = 10
const WORKER_FILE = /^jarvis\/([^/]+)\.json$/

export function AgentsPage() {
  const [agents, setAgents] = useState<{path: string; memory: WorkerMemory | null; problem?: string}[] | null>(null)
  const [error, setError] = useState<string | null>(null)

  const load = useCallback(async () => {
    try {
      const paths = Object.keys(await liveFiles()).filter((path) => WORKER_FILE.test(path)).sort()
      const pulled = await pullFiles(paths)
      setAgents(
        paths.map((path) => {
          try {
            return {path, memory: JSON.parse(pulled[path]?.content ?? 'null') as WorkerMemory | null}
          } catch (failure) {
            return {path, memory: null, problem: `${path} is not valid JSON: ${messageOf(failure)}`}
          }
        }),
      )
      setError(null)
    } catch (failure) {
      setError(messageOf(failure))
    }
  }, [])
  useEffect(() => void load(), [load])
  useLive((message) => {
    if ((message.type === 'MEM_UPDATE' && typeof message.path === 'string' && WORKER_FILE.test(message.path)) || message.type === 'RECONNECTED') void load()
  })

  return (
    <section aria-labelledby="agents-title">
      <h1 id="agents-title">Agents</h1>
      {error ? <Notice tone="error">{error}</Notice> : null}
      {agents === null ? <p>Loading…</p> : agents.length === 0 ? <p>No agent has recorded a task yet.</p> : null}
      <div class="cards">
        {agents?.map(({path, memory, problem}) => {
          const name = WORKER_FILE.exec(path)?.[1] ?? path
          const tasks = memory?.recentTasks ?? []
          return (
            <article class="card" key={path} aria-labelledby={`agent-${name}`}>
              <h2 id={`agent-${name}`}>{name}</h2>
              {problem ? <Notice tone="error">{problem}</Notice> : null}
              <dl>
                <dt>Status</dt>
                <dd class={`status status-${memory?.status ?? 'unknown'}`}>{memory?.status ?? 'unknown'}</dd>
                <dt>Last active</dt>
                <dd>
                  <Time iso={memory?.lastActive} />
                </dd>
                <dt>Tasks</dt>
                <dd>
                  {memory?.totalTasks ?? tasks.length}
                  {typeof memory?.successRate === 'number' ? ` (${Math.round(memory.successRate * (memory.successRate <= 1 ? 100 : 1))}% succeeded)` : ''}
                </dd>
                {memory?.modelId ? (
                  <>
                    <dt>Model</dt>
                    <dd>{memory.modelId}</dd>
                  </>
                ) : null}
              </dl>
              <h3>Recent tasks</h3>
              {tasks.length === 0 ? (
                <p>None yet.</p>
              ) : (
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Task</th>
                      <th scope="col">Type</th>
                      <th scope="col">Result</th>
                      <th scope="col">When</th>
                    </tr>
                  </thead>
                  <tbody>
                    {tasks.slice(0, SHOWN_TASKS).map((task) => (
                      <tr key={task.taskId}>
                        <td>{task.input ?? task.taskId}</td>
                        <td>{task.type}</td>
                        <td>{task.success ? 'succeeded' : 'failed'}</td>
                        <td>
                          <Time iso={task.timestamp} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              {memory?.context?.knownIssues?.length ? (
                <>
                  <h3>Known issues</h3>
                  <ul>
                    {memory.context.knownIssues.map((issue) => (
                      <li key={issue}>{issue}</li>
                    ))}
                  </ul>
                </>
              ) : null}
            </article>
          )
        })}
      </div>
    </section>
  )
}
