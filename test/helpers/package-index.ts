/**
 * A package index on loopback for build tests: a static PEP 503 tree (test/fixtures/pypi by
 * default: `probe-pinned` 1.0.0 and 2.0.0) served over http on 127.0.0.1, every request
 * counted, so a test can say what a build asked of it. It stands in for PyPI or a lab's
 * internal mirror (`--pip-index-url http://127.0.0.1:<port>/simple/`).
 */
import { readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';

export const FIXTURE_INDEX = join(import.meta.dirname, '..', 'fixtures', 'pypi');

export interface PackageIndex {
  server: Server;
  port: number;
  /** `http://127.0.0.1:<port>/simple/`. */
  url: string;
  /** `METHOD /path` of every request, in order. */
  hits: string[];
  close(): Promise<void>;
}

export async function serveIndex(root = FIXTURE_INDEX): Promise<PackageIndex> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    let file = join(root, path);
    try {
      if (statSync(file).isDirectory()) {
        if (!path.endsWith('/')) return res.writeHead(301, { location: `${path}/` }).end();
        file = join(file, 'index.html');
      }
      const body = readFileSync(file);
      res.writeHead(200, { 'content-type': file.endsWith('.html') ? 'text/html' : 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}/simple/`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
