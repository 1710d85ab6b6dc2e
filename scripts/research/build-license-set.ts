/**
 * Builds the shipped deep-research set (task-sets/research-licenses/): the license texts of
 * ladder-text/prose (Debian's common-licenses, which their own terms let anyone copy verbatim)
 * cut into passages of at most PASSAGE_CHARS, and questions whose answers those passages
 * state. Each question names an evidence phrase; its gold document is the one passage
 * that holds it (checked: exactly one), so the answer key is derived, not typed.
 *
 *   npx tsx scripts/research/build-license-set.ts
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/embedded.ts';

const PASSAGE_CHARS = 1200;
const SOURCE = join(REPO_ROOT, 'ladder-text', 'prose');
const OUT = join(REPO_ROOT, 'task-sets', 'research-licenses');

const LICENSES: Record<string, string> = {
  'Apache-2.0': 'Apache License, Version 2.0',
  Artistic: 'The Artistic License (Perl)',
  'CC0-1.0': 'Creative Commons CC0 1.0 Universal',
  'GFDL-1.3': 'GNU Free Documentation License, Version 1.3',
  'GPL-2': 'GNU General Public License, Version 2',
  'GPL-3': 'GNU General Public License, Version 3',
  'LGPL-2.1': 'GNU Lesser General Public License, Version 2.1',
  'MPL-1.1': 'Mozilla Public License, Version 1.1',
  'MPL-2.0': 'Mozilla Public License, Version 2.0',
};

interface Question {
  query: string;
  answer: string;
  aliases?: string[];
  /** A phrase of the passage that states the answer (whitespace-insensitive). */
  evidence: string;
}

const QUESTIONS: Question[] = [
  {
    query: 'Which version of the GNU General Public License is dated 29 June 2007?',
    answer: '3',
    aliases: ['version 3', 'GPLv3', 'GPL-3.0'],
    evidence: 'Version 3, 29 June 2007',
  },
  {
    query: 'In what month and year is version 2.0 of the Apache License dated?',
    answer: 'January 2004',
    evidence: 'Version 2.0, January 2004',
  },
  {
    query: 'In what month and year was version 2.1 of the GNU Lesser General Public License published?',
    answer: 'February 1999',
    evidence: 'Version 2.1, February 1999',
  },
  {
    query: 'In what month and year was version 2 of the GNU General Public License published?',
    answer: 'June 1991',
    evidence: 'Version 2, June 1991',
  },
  {
    query:
      'Under GPL version 3, object code conveyed in a physical product may come with a written offer for the Corresponding Source; for at least how long must that offer be valid?',
    answer: 'three years',
    aliases: ['3 years'],
    evidence: 'valid for at least three years and valid for as long as you offer spare parts',
  },
  {
    query: 'Which company may publish revised versions of the Mozilla Public License 1.1?',
    answer: 'Netscape Communications Corporation',
    aliases: ['Netscape'],
    evidence: 'Netscape Communications Corporation ("Netscape") may publish revised',
  },
  {
    query: 'Under the Mozilla Public License 1.1, within how many days of becoming aware of a breach must You cure it?',
    answer: '30 days',
    aliases: ['30', 'thirty days', 'thirty'],
    evidence: 'such breach within 30 days of becoming aware of the breach',
  },
  {
    query: 'Under the Mozilla Public License 1.1, in which county does venue lie for litigation under the Federal Courts jurisdiction?',
    answer: 'Santa Clara County',
    aliases: ['Santa Clara'],
    evidence: 'venue lying in Santa Clara County',
  },
  {
    query: 'Who is the license steward of the Mozilla Public License 2.0?',
    answer: 'Mozilla Foundation',
    evidence: 'Mozilla Foundation is the license steward',
  },
  {
    query: 'What does CC0 1.0 call the person associating CC0 with a Work?',
    answer: 'Affirmer',
    aliases: ['the Affirmer'],
    evidence: 'associating CC0 with a Work (the "Affirmer")',
  },
  {
    query: 'In the Apache License 2.0, what does "Source" form mean?',
    answer: 'the preferred form for making modifications',
    aliases: ['preferred form for making modifications'],
    evidence: '"Source" form shall mean the preferred form for making modifications',
  },
  {
    query: 'Under the Artistic License, what may you charge for any distribution of the Package?',
    answer: 'a reasonable copying fee',
    aliases: ['reasonable copying fee'],
    evidence: 'You may charge a reasonable copying fee',
  },
  {
    query: 'In the GNU Free Documentation License 1.3, what are the Secondary Sections whose titles are designated in the notice called?',
    answer: 'Invariant Sections',
    aliases: ['the Invariant Sections'],
    evidence: 'The "Invariant Sections" are certain Secondary Sections whose titles',
  },
];

const squash = (text: string) => text.replace(/\s+/g, ' ').trim();

/** Paragraphs (blank-line separated) packed into passages of at most PASSAGE_CHARS; a longer paragraph is a passage of its own. */
function passages(text: string): string[] {
  const out: string[] = [];
  let current = '';
  for (const paragraph of text
    .split(/\n\s*\n/)
    .map((p) => p.replace(/\s+$/, ''))
    .filter((p) => p.trim())) {
    if (current && current.length + paragraph.length + 2 > PASSAGE_CHARS) {
      out.push(current);
      current = '';
    }
    current = current ? `${current}\n\n${paragraph}` : paragraph;
  }
  if (current) out.push(current);
  return out;
}

const corpus = Object.entries(LICENSES).flatMap(([file, name]) =>
  passages(readFileSync(join(SOURCE, `${file}.txt`), 'utf8')).map((text, i, all) => ({
    docid: `${file.toLowerCase()}-${String(i + 1).padStart(2, '0')}`,
    title: `${name} (passage ${i + 1} of ${all.length})`,
    text,
  })),
);

const queries = QUESTIONS.map((q, i) => {
  const holders = corpus.filter((d) => squash(d.text).includes(squash(q.evidence)));
  if (holders.length !== 1) throw new Error(`question ${i + 1}: the evidence "${q.evidence}" is in ${holders.length} passages, not one`);
  return {
    query_id: `licenses-${String(i + 1).padStart(2, '0')}`,
    query: q.query,
    answer: q.answer,
    ...(q.aliases ? { answer_aliases: q.aliases } : {}),
    gold_docs: [{ docid: holders[0]!.docid }],
    evidence_docs: [{ docid: holders[0]!.docid }],
  };
});

mkdirSync(OUT, { recursive: true });
const jsonl = (rows: unknown[]) => `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
writeFileSync(join(OUT, 'corpus.jsonl'), jsonl(corpus));
writeFileSync(join(OUT, 'queries.jsonl'), jsonl(queries));
process.stderr.write(`${corpus.length} passages, ${queries.length} questions → ${OUT}\n`);
