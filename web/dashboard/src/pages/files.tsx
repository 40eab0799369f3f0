/**
 * Memory files: the tree, a file rendered, and the editor. A save carries the revision the editor started from;
 * when the file changed on the server meanwhile the server writes nothing and the page merges, by the same rule a
 * sync uses (src/merge/), and shows the result to review: an edit never overwrites a change it did not see.
 */
import {useCallback, useEffect, useState} from 'preact/hooks'

import {mergeFileText} from '../../../../src/merge/dispatch.js'
import {api, ApiError, type CurrentFile, type FileEntry, liveFiles, messageOf, pullFiles} from '../api.js'
import {splitFrontMatter} from '../markdown.js'
import {type Draft, dropDraft, loadDraft, saveDraft} from '../session.js'
import {Markdown, Notice, Time, type Tone, useLive} from '../ui.js'

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

export function FilesPage({path}: {path: string}) {
  const [files, setFiles] = useState<Record<string, FileEntry> | null>(null)
  const [treeError, setTreeError] = useState<string | null>(null)
  const [shown, setShown] = useState<Shown | null>(null)
  const [viewError, setViewError] = useState<string | null>(null)
  const [draft, setDraft] = useState<Draft | null>(null)
  const [notice, setNotice] = useState<{tone: Tone; text: string} | null>(null)
  const [merge, setMerge] = useState<MergeShown | null>(null)
  const [remoteChange, setRemoteChange] = useState<string | null>(null)
  const [saving, setSaving] = useState(false)
  const [newPath, setNewPath] = useState('')

  const loadTree = useCallback(async () => {
    try {
      setFiles(await liveFiles())
      setTreeError(null)
    } catch (error) {
      setTreeError(messageOf(error))
    }
  }, [])

  const loadFile = useCallback(async (target: string) => {
    if (target === '') {
      setShown(null)
      return
    }
    try {
      const pulled = (await pullFiles([target]))[target]
      setShown(pulled ? {path: target, content: pulled.content, rev: pulled.rev, updatedAt: pulled.updatedAt} : null)
      setViewError(pulled ? null : `${target} is not on the server (deleted, or never written).`)
    } catch (error) {
      setViewError(messageOf(error))
    }
  }, [])

  useEffect(() => void loadTree(), [loadTree])
  useEffect(() => {
    setNotice(null)
    setMerge(null)
    setRemoteChange(null)
    setDraft(path === '' ? null : loadDraft(path))
    void loadFile(path)
  }, [path, loadFile])

  useLive((message) => {
    if (message.type === 'RECONNECTED') {
      void loadTree()
      if (draft === null) void loadFile(path)
      return
    }
    if (message.type !== 'MEM_UPDATE') return
    void loadTree()
    if (message.path !== path) return
    if (draft === null) void loadFile(path)
    else if (message.rev !== draft.baseRev) setRemoteChange(`${String(message.author)} changed this file on the server (revision ${String(message.rev)}) while you edit it. Saving will show you the merge first.`)
  })

  const edit = (text: string) => {
    if (draft === null) return
    const next = {...draft, text}
    setDraft(next)
    saveDraft(path, next)
  }

  const startEdit = () => {
    const next: Draft = shown ? {text: shown.content, baseRev: shown.rev, baseText: shown.content} : {text: '', baseRev: null, baseText: null}
    setDraft(next)
    saveDraft(path, next)
    setNotice(null)
  }

  const cancelEdit = () => {
    dropDraft(path)
    setDraft(null)
    setMerge(null)
    setRemoteChange(null)
    void loadFile(path)
  }

  /** The server has `current`; merge the person's text with it and put the result in the editor to review. */
  const showMerge = (current: CurrentFile | null, message: string) => {
    if (draft === null) return
    if (current === null || current.content === null) {
      const next = {...draft, baseRev: current?.rev ?? null, baseText: null}
      setDraft(next)
      saveDraft(path, next)
      setMerge({message: `${message} Your text is unchanged in the editor: save again to write it as a new file.`, conflicts: 0, yours: null})
      return
    }
    let merged: string
    let conflicts = 0
    let yours: string | null = null
    try {
      const result = mergeFileText(path, draft.baseText, draft.text, current.content)
      merged = result.merged
      conflicts = result.conflicts.length
      yours = result.backup === null ? null : draft.text
    } catch {
      // Not mergeable by its rule (e.g. invalid JSON typed): the server's text to start from, the person's beside it.
      merged = current.content
      conflicts = 1
      yours = draft.text
    }
    const next: Draft = {text: merged, baseRev: current.rev, baseText: current.content}
    setDraft(next)
    saveDraft(path, next)
    setRemoteChange(null)
    setMerge({message, conflicts, yours})
  }

  const save = async (event: Event) => {
    event.preventDefault()
    if (draft === null || saving) return
    setSaving(true)
    setNotice(null)
    try {
      const answer = await api<{rev: number}>('POST', '/api/memory/write', {path, content: draft.text, base: draft.baseRev})
      dropDraft(path)
      setDraft(null)
      setMerge(null)
      setRemoteChange(null)
      setNotice({tone: 'success', text: `Saved ${path} as revision ${answer.rev}.`})
      await Promise.all([loadFile(path), loadTree()])
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) showMerge((error.body.current as CurrentFile | null) ?? null, error.message)
      else setNotice({tone: 'error', text: messageOf(error)})
    } finally {
      setSaving(false)
    }
  }

  const openNew = (event: Event) => {
    event.preventDefault()
    const target = newPath.trim().replace(/^\/+/, '')
    if (target === '') return
    location.hash = fileHref(target)
    setNewPath('')
  }

  const tree = files ? buildTree(Object.keys(files)) : null
  const entry = files?.[path]
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
        {path === '' ? (
          <p>Choose a file to read it.</p>
        ) : (
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
                <textarea id="editor-text" rows={18} spellcheck={false} value={draft.text} onInput={(e) => edit(e.currentTarget.value)} />
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
            ) : (
              <>
                {viewError && !shown ? <Notice tone="info">{viewError}</Notice> : null}
                <div class="actions">
                  <button type="button" onClick={startEdit}>
                    {shown ? 'Edit' : 'Create this file'}
                  </button>
                </div>
                {shown ? <FileView file={shown} /> : null}
              </>
            )}
          </>
        )}
      </section>
    </div>
  )
}
