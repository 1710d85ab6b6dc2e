/**
 * The deep-research tools in the md+xml transcript: `<search>query</search>` (the top
 * hits with document ids and snippets), `<open doc="ID" page="N"/>` (a document, a page
 * at a time) and `<answer>text</answer>`, which ends the episode. Each step is free
 * thinking, then exactly one of these; the harness answers in `<observation>`.
 */
import { fromXmlText, toXmlText } from '../formats/xml-text.ts';
import { type ResearchIndex, SEARCH_K } from './search-index.ts';

export type ResearchAction =
  | { kind: 'search'; query: string }
  | { kind: 'open'; docid: string; page: number }
  | { kind: 'answer'; text: string };

/** The strings at which a research action is complete. */
export const RESEARCH_STOPS: readonly string[] = ['</search>', '</answer>', '/>'];

/** What a completion held: its first action and where it ended, or why there is none (`complete: false`: sampling may go on). */
export type FoundResearchAction =
  | { ok: true; action: ResearchAction; thought: string; end: number }
  | { ok: false; complete: boolean; error: string };

const OPEN = /<(search|answer)>|<open\b/;

export function findResearchAction(completion: string): FoundResearchAction {
  const opened = OPEN.exec(completion);
  if (!opened) return { ok: false, complete: false, error: 'no action element (<search>, <open doc="…"/>, <answer>)' };
  const thought = completion.slice(0, opened.index).trim();
  if (opened[1]) {
    const close = `</${opened[1]}>`;
    const at = completion.indexOf(close, opened.index);
    if (at < 0) return { ok: false, complete: false, error: `<${opened[1]}> is not closed` };
    const body = fromXmlText(completion.slice(opened.index + opened[0].length, at)).trim();
    if (!body) return { ok: false, complete: true, error: `<${opened[1]}> is empty` };
    const action: ResearchAction = opened[1] === 'search' ? { kind: 'search', query: body } : { kind: 'answer', text: body };
    return { ok: true, action, thought, end: at + close.length };
  }
  const tagEnd = completion.indexOf('>', opened.index);
  if (tagEnd < 0) return { ok: false, complete: false, error: 'the <open …/> element is not closed' };
  const tag = completion.slice(opened.index, tagEnd + 1);
  const attrs = Object.fromEntries([...tag.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, fromXmlText(m[2]!)]));
  if (!tag.endsWith('/>')) return { ok: false, complete: true, error: 'open is an empty element: <open doc="ID"/>' };
  if (!attrs.doc) return { ok: false, complete: true, error: 'open needs doc="ID"' };
  const page = attrs.page === undefined ? 1 : Number(attrs.page);
  if (!Number.isInteger(page) || page < 1)
    return { ok: false, complete: true, error: `page must be a whole number ≥ 1, not "${attrs.page}"` };
  return { ok: true, action: { kind: 'open', docid: attrs.doc, page }, thought, end: tagEnd + 1 };
}

export function renderResearchAction(action: ResearchAction): string {
  switch (action.kind) {
    case 'search':
      return `<search>${toXmlText(action.query)}</search>`;
    case 'answer':
      return `<answer>${toXmlText(action.text)}</answer>`;
    case 'open':
      return `<open doc="${action.docid.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"${action.page === 1 ? '' : ` page="${action.page}"`}/>`;
  }
}

/**
 * Runs a search or an open (an answer ends the episode and is graded instead): what the
 * harness shows, and the documents it showed (a search's hits, the page opened), so the
 * behaviour is read from the episode without searching again.
 */
export function runResearchTool(
  index: ResearchIndex,
  action: Exclude<ResearchAction, { kind: 'answer' }>,
  k = SEARCH_K,
): { observation: string; shown: string[] } {
  if (action.kind === 'search') {
    const hits = index.search(action.query, k);
    if (hits.length === 0) return { observation: `No documents match "${action.query}".`, shown: [] };
    return {
      observation: hits.map((h, i) => `${i + 1}. [${h.docid}] ${h.title}\n   ${h.snippet}`).join('\n'),
      shown: hits.map((h) => h.docid),
    };
  }
  const page = index.open(action.docid, action.page);
  if (!page) {
    const observation = index.has(action.docid)
      ? `Document ${action.docid} has no page ${action.page}.`
      : `No document "${action.docid}": use an id from the search results.`;
    return { observation, shown: [] };
  }
  const more =
    page.page < page.pages ? `\n[page ${page.page} of ${page.pages}: <open doc="${page.docid}" page="${page.page + 1}"/> reads on]` : '';
  return { observation: `[${page.docid}] ${page.title} (page ${page.page} of ${page.pages})\n\n${page.text}${more}`, shown: [page.docid] };
}

/** What the harness shows for a search or an open. */
export function researchObservation(index: ResearchIndex, action: Exclude<ResearchAction, { kind: 'answer' }>, k = SEARCH_K): string {
  return runResearchTool(index, action, k).observation;
}
