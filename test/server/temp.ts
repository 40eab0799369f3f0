/** Temp directories and cleanup for the server tests (no server imports, so storage tests stay light). */
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

export async function tempDir(prefix = 'jarvis-server-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix))
}

/** Runs registered tasks in reverse order (servers close before their directories go); for afterEach. */
export class Cleanup {
  private readonly tasks: (() => Promise<unknown>)[] = []
  add(task: () => Promise<unknown>): void {
    this.tasks.push(task)
  }
  dir(path: string): string {
    this.add(() => rm(path, {recursive: true, force: true}))
    return path
  }
  async run(): Promise<void> {
    const tasks = this.tasks.splice(0).reverse()
    for (const task of tasks) await task()
  }
}
