import {readdir} from 'node:fs/promises'

/** The names in a provider directory, sorted; a directory that is not there (the tool never ran here) is empty. */
export async function listDir(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort()
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return []
    throw error
  }
}
