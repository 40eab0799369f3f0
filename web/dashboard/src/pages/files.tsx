/**
 * Memory files: the tree, a file rendered, and the editor. A save carries the revision the editor started from;
 * when the file changed on the server meanwhile the server writes nothing and the page merges, by the same rule a
 * sync uses (src/merge/), and shows the result to review: an edit never overwrites a change it did not see.
 */
import {useCallback, useEffect, useState} from 'preact/hooks'

import {mergeFileText} from '../../../../src/merge/dispatch.js'
import {api, ApiError, type CurrentFile, type FileEntry, liveFiles, messageOf, pullFiles} from '../api.js'
import {splitFrontMatter} from '../markdown.js'
import {type Draft, type DraftKept, dropDraft, loadDraft, saveDraft} from '../session.js'
import {Markdown, Notice, Time, type Tone, useAnswerGuard, useLive} from '../ui.js'

interface TreeNode {
  name: string
  path: string
  children: Map<string, TreeNode>
  file: boolean
}

function buildTree(paths: string[]): TreeNode {
  const root: TreeNode = {name: '', path: '', children: new Map(), file: false}
  for (const path of [...paths].sort()) {
    let node = root
    const parts = path.split('/')
    parts.forEach((part, index) => {
      const childPath = parts.slice(0, index + 1).join('/')
      let child = node.children.get(part)
      if (!child) {
        child = {name: part, path: childPath, children: new Map(), file: index === parts.length - 1}
        node.children.set(part, child)
      }
      node = child
    })
  }
  return root
}

function fileHref(path: string): string {
  return `#/files/${path.split('/').map(encodeURIComponent).join('/')}`
}

function Tree({node, selected}: {node: TreeNode; selected: string}) {
  const children = [...node.children.values()].sort((a, b) => Number(a.file) - Number(b.file) || a.name.localeCompare(b.name))
  return (
    <ul>
      {children.map((child) =>
        child.file ? (
          <li key={child.path}>
            <a href={fileHref(child.path)} aria-current={child.path === selected ? 'page' : undefined}>
              {child.name}
            </a>
          </li>
        ) : (
          <li key={child.path}>
            <details open>
              <summary>{child.name}/</summary>
              <Tree node={child} selected={selected} />
            </details>
          </li>
        ),
      )}
    </ul>
  )
}

interface Shown {
  path: string
  content: string
  rev: number
  updatedAt: string
}

interface MergeShown {
  message: string
  conflicts: number
  /** The person's whole text as typed, kept beside the merge when both sides changed the same lines. */
  yours: string | null
}

function FileView({file}: {file: Shown}) {
  if (!/\.md$/i.test(file.path)) return <pre class="file-text">{file.content}</pre>
  const {frontMatter, body} = splitFrontMatter(file.content)
  return (
    <>
      {frontMatter !== null ? (
        <pre class="front-matter" aria-label="Front matter">
          {frontMatter}
        </pre>
      ) : null}
      <Markdown text={body} class="file-markdown" />
    </>
  )
}

/** What the file's pane shows: every state belongs to the one path its component was made for. */
type View = {state: 'loading'} | {state: 'shown'; file: Shown} | {state: 'missing'; message: string} | {state: 'failed'; message: string}

export function FilesPage({path}: {path: string}) {
  const [files, setFiles] = useState<Record<string, FileEntry> | null>(null)
  const [treeError, setTreeError] = useState<string | null>(null)
  const [newPath, setNewPath] = useState('')
  const answers = useAnswerGuard()

  const loadTree = useCallback(async () => {
    const current = answers.replacing()
    try {
      const live = await liveFiles()
      if (!current()) return
      setFiles(live)
      setTreeError(null)
    } catch (error) {
      if (current()) setTreeError(messageOf(error))
    }
  }, [answers])

  useEffect(() => void loadTree(), [loadTree])
  useLive((message) => {
    if (message.type === 'RECONNECTED' || message.type === 'MEM_UPDATE') void loadTree()
  })

  const openNew = (event: Event) => {
    event.preventDefault()
    const target = newPath.trim().replace(/^\/+/, '')
    if (target === '') return
    location.hash = fileHref(target)
    setNewPath('')
  }

  const tree = files ? buildTree(Object.keys(files)) : null
  return (
    <div class={path === '' ? 'files' : 'files has-file'}>
      <section class="tree" aria-labelledby="tree-title">
        <h1 id="tree-title">Memory files</h1>
        {treeError ? <Notice tone="error">{treeError}</Notice> : null}
        {tree ? tree.children.size === 0 ? <p>No memory files yet.</p> : <Tree node={tree} selected={path} /> : <p>Loading…</p>}
        <form class="new-file" onSubmit={openNew}>
          <label for="new-path">New file path</label>
          <input id="new-path" placeholder="notes/idea.md" value={newPath} onInput={(e) => setNewPath(e.currentTarget.value)} />
          <button type="submit">Open</button>
        </form>
      </section>
      <section class="file" aria-labelledby="file-title">
        {/* One component per path (the key): a file's text, revision, draft and pending answers never outlive its name on the page. */}
        {path === '' ? <p>Choose a file to read it.</p> : <OpenFile key={path} path={path} entry={files?.[path]} onSaved={loadTree} />}
      </section>
    </div>
  )
}

/** The draft does not fit in the tab's storage: said in the editor, since the docs promise a reload loses nothing. */
const DRAFT_NOT_KEPT =
  'This draft is too large for the tab’s storage (about five million characters for all of this tab’s drafts together): a reload or a closed tab loses it. Save it, or copy it somewhere, before you leave the page.'

function OpenFile({path, entry, onSaved}: {path: string; entry: FileEntry | undefined; onSaved: () => Promise<void>}) {
  const [view, setView] = useState<View>({state: 'loading'})
  const [draft, setDraft] = useState<Draft | null>(() => loadDraft(path))
  const [kept, setKept] = useState<DraftKept>('whole')
  const [notice, setNotice] = useState<{tone: Tone; text: string} | null>(null)
  const [merge, setMerge] = useState<MergeShown | null>(null)
  const [remoteChange, setRemoteChange] = useState<string | null>(null)
  const [saving, setSaving] = useState(false)
  const answers = useAnswerGuard()

  const loadFile = useCallback(async () => {
    const current = answers.replacing()
    try {
      const pulled = (await pullFiles([path]))[path]
      if (!current()) return
      if (!pulled) {
        setView({state: 'missing', message: `${path} is not on the server (deleted, or never written).`})
        return
      }
      setView({state: 'shown', file: {path, content: pulled.content, rev: pulled.rev, updatedAt: pulled.updatedAt}})
      // A draft kept without its base (too large for the tab's storage whole) gets it back while the file is still at that revision.
      setDraft((open) => (open !== null && open.baseText === null && open.baseRev === pulled.rev ? {...open, baseText: pulled.content} : open))
    } catch (error) {
      if (current()) setView({state: 'failed', message: messageOf(error)})
    }
  }, [answers, path])

  useEffect(() => void loadFile(), [loadFile])

  useLive((message) => {
    if (message.type === 'RECONNECTED') {
      if (draft === null) void loadFile()
      return
    }
    if (message.type !== 'MEM_UPDATE' || message.path !== path) return
    if (draft === null) void loadFile()
    else if (message.rev !== draft.baseRev) setRemoteChange(`${String(message.author)} changed this file on the server (revision ${String(message.rev)}) while you edit it. Saving will show you the merge first.`)
  })

  /** The draft in the editor, and as much of it in the tab's storage as fits. */
  const keep = (next: Draft) => {
    setDraft(next)
    setKept(saveDraft(path, next))
  }

  const edit = (text: string) => {
    if (draft !== null) keep({...draft, text})
  }

  const startEdit = () => {
    if (view.state === 'shown' && view.file.path === path) keep({text: view.file.content, baseRev: view.file.rev, baseText: view.file.content})
    else if (view.state === 'missing') keep({text: '', baseRev: null, baseText: null})
    else return
    setNotice(null)
  }

  const cancelEdit = () => {
    dropDraft(path)
    setDraft(null)
    setKept('whole')
    setMerge(null)
    setRemoteChange(null)
    void loadFile()
  }

  /** The server has `current`; merge the person's text with it and put the result in the editor to review. */
  const showMerge = (mine: Draft, current: CurrentFile | null, message: string) => {
    if (current === null || current.content === null) {
      keep({...mine, baseRev: current?.rev ?? null, baseText: null})
      setMerge({message: `${message} Your text is unchanged in the editor: save again to write it as a new file.`, conflicts: 0, yours: null})
      return
    }
    let merged: string
    let conflicts = 0
    let yours: string | null = null
    try {
      const result = mergeFileText(path, mine.baseText, mine.text, current.content)
      merged = result.merged
      conflicts = result.conflicts.length
      yours = result.backup === null ? null : mine.text
    } catch {
      // Not mergeable by its rule (e.g. invalid JSON typed): the server's text to start from, the person's beside it.
      merged = current.content
      conflicts = 1
      yours = mine.text
    }
    keep({text: merged, baseRev: current.rev, baseText: current.content})
    setRemoteChange(null)
    setMerge({message, conflicts, yours})
  }

  const save = async (event: Event) => {
    event.preventDefault()
    if (draft === null || saving) return
    const mine = draft
    setSaving(true)
    setNotice(null)
    try {
      const answer = await api<{rev: number}>('POST', '/api/memory/write', {path, content: mine.text, base: mine.baseRev})
      dropDraft(path)
      if (!answers.shown()) return
      setDraft(null)
      setKept('whole')
      setMerge(null)
      setRemoteChange(null)
      setNotice({tone: 'success', text: `Saved ${path} as revision ${answer.rev}.`})
      await Promise.all([loadFile(), onSaved()])
    } catch (error) {
      // The person left the file meanwhile: its stored draft stays as it was, to merge when they come back and save.
      if (!answers.shown()) return
      if (error instanceof ApiError && error.status === 409) showMerge(mine, (error.body.current as CurrentFile | null) ?? null, error.message)
      else setNotice({tone: 'error', text: messageOf(error)})
    } finally {
      if (answers.shown()) setSaving(false)
    }
  }

  const shown = view.state === 'shown' ? view.file : null
  return (
    <>
      <h2 id="file-title">{path}</h2>
      {shown || entry ? (
        <p class="meta">
          revision {entry?.rev ?? shown?.rev} · by {entry?.author ?? '—'} · <Time iso={entry?.updatedAt ?? shown?.updatedAt} />
        </p>
      ) : null}
      {notice ? <Notice tone={notice.tone}>{notice.text}</Notice> : null}
      {remoteChange ? <Notice tone="info">{remoteChange}</Notice> : null}
      {draft !== null ? (
        <form class="editor" onSubmit={save}>
          {kept === 'none' ? <Notice tone="error">{DRAFT_NOT_KEPT}</Notice> : null}
          {merge ? (
            <Notice tone="info">
              <p>{merge.message}</p>
              <p>
                {merge.conflicts === 0
                  ? 'Your edit was merged with the server’s version below. Nothing is saved yet: review it and press Save.'
                  : `Both sides changed the same lines in ${merge.conflicts} place${merge.conflicts === 1 ? '' : 's'}: there the server’s lines are in the editor, and your whole version is kept below to copy from. Nothing is saved yet.`}
              </p>
            </Notice>
          ) : null}
          <label for="editor-text">Content of {path}</label>
          <textarea id="editor-text" rows={18} spellcheck={false} readOnly={saving} value={draft.text} onInput={(e) => edit(e.currentTarget.value)} />
          {merge?.yours ? (
            <>
              <label for="your-version">Your version (not saved)</label>
              <textarea id="your-version" rows={8} readOnly value={merge.yours} />
            </>
          ) : null}
          <div class="actions">
            <button type="submit" disabled={saving}>
              {saving ? 'Saving…' : 'Save'}
            </button>
            <button type="button" onClick={cancelEdit}>
              Discard edit
            </button>
            <span class="hint">Editing from revision {draft.baseRev ?? 'none (a new file)'}</span>
          </div>
        </form>
      ) : view.state === 'loading' ? (
        <p>Loading…</p>
      ) : view.state === 'failed' ? (
        <>
          <Notice tone="error">{view.message}</Notice>
          <div class="actions">
            <button type="button" onClick={() => void loadFile()}>
              Try again
            </button>
          </div>
        </>
      ) : (
        <>
          {view.state === 'missing' ? <Notice tone="info">{view.message}</Notice> : null}
          <div class="actions">
            <button type="button" onClick={startEdit}>
              {view.state === 'shown' ? 'Edit' : 'Create this file'}
            </button>
          </div>
          {view.state === 'shown' ? <FileView file={view.file} /> : null}
        </>
      )}
    </>
  )
}
