/**
 * The one way an id (a query id, an instance id, a task name) becomes a file or directory
 * name in a run directory. It must be injective — two ids never share a file, so one
 * episode's transcript never overwrites another's — and safe: no `/`, never `.`, `..` or
 * empty, never longer than a file name may be.
 *
 * Bytes in [A-Za-z0-9._-] stay as they are (a leading dot excepted), so the names of plain
 * ids, and so the run directories written before this encoding, do not change; every other
 * UTF-8 byte, `%` included, is written `%XX`. A name too long for the file system keeps
 * its start and ends in `~` and a hash of the whole id (`~` is never written otherwise).
 */
import { createHash } from 'node:crypto';

/** Room left under the usual 255-byte limit for what callers append (`.terminus.json`, `run-12.jsonl` is a level below). */
const MAX_NAME_BYTES = 200;
const KEPT = /^[A-Za-z0-9._-]$/;

export function idFileName(id: string): string {
  if (id === '') return '%'; // no other id encodes to a lone `%`: every escape has two hex digits
  let name = '';
  for (const char of id) {
    const unit = char.charCodeAt(0);
    // A lone surrogate (JSON.parse keeps them) has no UTF-8 bytes: it gets `%%` and its four hex
    // digits, which no other character writes (a `%` of the id itself is `%25`).
    if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff) {
      name += `%%${unit.toString(16).toUpperCase().padStart(4, '0')}`;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) {
      const c = String.fromCharCode(byte);
      name += byte < 0x80 && KEPT.test(c) && !(name === '' && c === '.') ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  if (name.length <= MAX_NAME_BYTES) return name;
  // Cut where no escape is split, so the kept start still reads as the id's start; the hash is
  // of the whole encoded name, which is injective where the id's UTF-8 bytes are not.
  let cut = MAX_NAME_BYTES - 34;
  const lastEscape = name.lastIndexOf('%', cut - 1);
  if (lastEscape > cut - 5) cut = name[lastEscape - 1] === '%' ? lastEscape - 1 : lastEscape;
  return `${name.slice(0, cut)}~${createHash('sha256').update(name).digest('hex').slice(0, 32)}`;
}
