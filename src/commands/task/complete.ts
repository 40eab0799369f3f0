import {Flags} from '@oclif/core'

import {JarvisCommand} from '../../cli/base-command.js'
import {serverFlags} from '../../cli/flags.js'
import {completeTask, type TaskCompleteResult} from '../../ops/task.js'
import {readNamedInput} from '../../cli/input.js'

const fieldFlag = {exclusive: ['file'], helpGroup: 'TASK'}

export default class TaskComplete extends JarvisCommand<typeof TaskComplete> {
  static summary = 'Record a finished task in this agent’s worker memory (POST /api/memory/sync-task).'
  static description = `The task comes from the flags, or whole from a JSON file (--file PATH, or - for stdin) checked against the task-result schema. The agent is --agent, JARVIS_AGENT or the tree's config.
When the server cannot be reached the task is queued in .nexus/outbox.jsonl, the command exits 3 and says so, and the next \`jarvis sync\` sends it.`
  static examples = [
    '<%= config.bin %> task complete --type code-review --input "review PR 12" --output "2 issues" --response-time 5400 --model claude-sonnet',
    '<%= config.bin %> task complete --type refactor --no-success --files-modified src/a.ts --files-modified src/b.ts',
    'echo \'{"taskId":"t1","timestamp":"2026-02-02T10:00:00Z","type":"test","success":true}\' | <%= config.bin %> task complete --file -',
  ]

  static flags = {
    ...serverFlags,
    file: Flags.string({description: 'A JSON task result to record (- reads stdin).', helpGroup: 'TASK'}),
    'task-id': Flags.string({description: 'Id of the task (default: a new UUID).', ...fieldFlag}),
    type: Flags.string({description: 'Kind of task, e.g. code-review (required without --file).', ...fieldFlag}),
    input: Flags.string({description: 'What the task was asked to do.', ...fieldFlag}),
    output: Flags.string({description: 'What it produced.', ...fieldFlag}),
    success: Flags.boolean({description: 'Whether it succeeded (default: --success).', allowNo: true, ...fieldFlag}),
    'response-time': Flags.integer({description: 'How long it took, in milliseconds.', min: 0, ...fieldFlag}),
    model: Flags.string({description: 'Model that did it.', ...fieldFlag}),
    'files-modified': Flags.string({description: 'A file it changed (repeat the flag for more).', multiple: true, ...fieldFlag}),
    timestamp: Flags.string({description: 'When it finished, ISO-8601 with a zone (default: now).', ...fieldFlag}),
  }

  async run(): Promise<TaskCompleteResult> {
    const {flags} = this
    const result = await completeTask({
      dir: flags.dir,
      server: flags.server,
      agent: flags.agent,
      taskText: flags.file === undefined ? undefined : await readNamedInput(flags.file, 'the task result'),
      fields: {
        taskId: flags['task-id'],
        type: flags.type,
        input: flags.input,
        output: flags.output,
        success: flags.success,
        responseTime: flags['response-time'],
        model: flags.model,
        filesModified: flags['files-modified'],
        timestamp: flags.timestamp,
      },
    })
    this.log(`recorded task ${result.taskId} for ${result.agentId}; ${result.workerMemory.recentTasks.length} recent task(s) on the server`)
    return result
  }
}
