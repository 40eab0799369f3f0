/**
 * Markdown to HTML for memory files and events. Raw HTML in the text is shown as text (html: false) and links are
 * limited to safe schemes (markdown-it's validateLink): an agent's text never runs in the page.
 */
import MarkdownIt from 'markdown-it'

const renderer = new MarkdownIt({html: false, linkify: false, typographer: false})

/** A memory file's YAML front matter (between leading `---` lines) and its body. */
export function splitFrontMatter(text: string): {frontMatter: string | null; body: string} {
  const match = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text)
  return match ? {frontMatter: match[1], body: text.slice(match[0].length)} : {frontMatter: null, body: text}
}

export function renderMarkdown(text: string): string {
  return renderer.render(text)
}
