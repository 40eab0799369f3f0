/** A question asked in many sessions, the note that answers it, and the episodes earlier hooks wrote for it. */
export const QUESTION = 'How are the Stripe webhooks verified?'
export const NOTE = {
  path: 'notes/billing.md',
  text: '---\ntitle: Billing\ntags: [billing, stripe]\ndate: 2026-08-01\n---\n# Billing\n\nStripe webhooks are verified with the signing secret (whsec) from the dashboard; a failed delivery is retried three times.\n',
}

/** An episode as the hooks before this change wrote it for a session that only asked: the question in its title, topic and `## Asked`. */
export function echoEpisode(n: number, agent = 'gemini'): [string, string] {
  const id = `${String(n).padStart(8, '0')}-0000-4000-8000-000000000000`
  const title = `Gemini CLI session ${id.slice(0, 8)}: ${QUESTION}`
  return [
    `episodes/2026-09-${String(1 + (n % 28)).padStart(2, '0')}/${agent}-${id}.md`,
    `---\ntitle: "${title}"\ntags: [session, ${agent}]\ndate: 2026-09-01\nkind: episode\n---\n# Episode: ${title}\nDate: 2026-09-01\nTopic: ${QUESTION}\nOutcome: Stand-in model reply ${n}.\nRefs: ${agent} session ${id}\nTags: ["session","${agent}"]\n\nSummary:\n## Asked\n- ${QUESTION}\n\n## Last answer\nStand-in model reply ${n}.\n`,
  ]
}
