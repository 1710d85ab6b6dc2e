/**
 * What a confined image build may fetch through probe's proxy (build-network.ts), as rules
 * with no I/O but the name lookup handed in (issue 38, "Build egress, allow-listed"):
 *
 * - Always the `http://` archives the base image's apt sources name (probe's own image,
 *   built by our script: its layers install from them), reached as they resolve.
 * - What the user names (settings/image-sources.ts): pip's index and extra indexes, npm's
 *   registry, apt mirrors. An `http://` index is allowed GET and HEAD over its whole origin
 *   (a PEP 503 index links its files by relative paths, `../../files/x.whl`); an `https://`
 *   one, CONNECT to its host:port. An apt mirror `ARCHIVE=MIRROR` serves what a build asks of
 *   ARCHIVE (the proxy fetches it from MIRROR) and is allowed itself. The user named these:
 *   they are reached wherever they are, loopback included.
 * - With `publicIndexes`, the public package hosts (PUBLIC_INDEXES): Debian's and Ubuntu's
 *   archives (GET and HEAD under them), PyPI, its file host and npm's registry (CONNECT to
 *   port 443). Their names are looked up here and refused when any address is loopback,
 *   private, shared (100.64/10), link-local, unique-local, unspecified or multicast; the
 *   proxy connects to the address checked, with no second lookup (no DNS rebinding).
 * - Anything else is refused: other methods, other hosts and ports, credentials in a URL, a
 *   CONNECT to a plain-http destination.
 */
import { lookup } from 'node:dns/promises';
import { isIPv4, isIPv6 } from 'node:net';
import { type BuildEgress, NPM_REGISTRY_URL, PYPI_INDEX_URL } from '../settings/image-sources.ts';

/** The public package hosts a build reaches when `publicIndexes` is on. */
export const PUBLIC_INDEXES = {
  /** `http://` archives: GET and HEAD of paths under them. */
  archives: [
    'http://deb.debian.org/debian/',
    'http://deb.debian.org/debian-security/',
    'http://security.debian.org/',
    'http://archive.ubuntu.com/ubuntu/',
    'http://security.ubuntu.com/ubuntu/',
    'http://ports.ubuntu.com/ubuntu-ports/',
  ],
  /** `https://` hosts: CONNECT to these host:port pairs. */
  tunnels: ['pypi.org:443', 'files.pythonhosted.org:443', 'registry.npmjs.org:443'],
} as const;

/**
 * `named`: the user (or probe's base image) named it, so it is reached wherever its name
 * resolves. `public`: a public host, whose addresses are checked first.
 */
export type Trust = 'named' | 'public';

/** GET and HEAD of paths under `origin` + `path`, fetched from `from` instead where a mirror serves it. */
export interface HttpRule {
  origin: string;
  path: string;
  trust: Trust;
  /** An apt mirror: the request is fetched from here, the rest of its path kept. */
  mirror?: { origin: string; path: string };
}

/** CONNECT to `host:port`. */
export interface TunnelRule {
  host: string;
  port: number;
  trust: Trust;
}

export interface EgressPolicy {
  /** First match wins: apt mirrors, then what the user named, the base image's archives, the public ones. */
  http: HttpRule[];
  tunnels: TunnelRule[];
  /** The public indexes are left out (`publicIndexes` false): a refusal of one says so. */
  publicOff: boolean;
}

/** One archive the base image's apt sources name: an origin and the path under it. */
export interface ArchiveRoot {
  origin: string;
  path: string;
}

/** The `http://` archives named in apt sources (one-line `deb` lists and deb822 `URIs:`). */
export function archiveRoots(files: Iterable<string>): ArchiveRoot[] {
  const roots = new Map<string, ArchiveRoot>();
  for (const text of files)
    for (const line of text.split('\n')) {
      const uris =
        /^\s*deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?(\S+)/.exec(line)?.[1]?.split(/\s+/) ??
        /^\s*URIs:\s*(.+)$/i.exec(line)?.[1]?.trim().split(/\s+/) ??
        [];
      for (const uri of uris) {
        const root = httpRoot(uri);
        if (root) roots.set(`${root.origin}${root.path}`, root);
      }
    }
  return [...roots.values()];
}

/** Whether the base image's archives let `method url` through: GET or HEAD of a path under one of `roots`, nothing else. */
export function archiveAllows(roots: readonly ArchiveRoot[], method: string | undefined, target: string | undefined): URL | undefined {
  const url = getUrl(method, target);
  return url && roots.some((r) => under(url, r)) ? url : undefined;
}

/** An `http://` URL without credentials as an origin and a directory path (ending `/`). */
function httpRoot(uri: string, protocols: readonly string[] = ['http:']): ArchiveRoot | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if (!protocols.includes(url.protocol) || url.username || url.password) return undefined;
  return { origin: url.origin, path: url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/` };
}

/** The URL of a GET or HEAD of an absolute `http://` URL without credentials. */
function getUrl(method: string | undefined, target: string | undefined): URL | undefined {
  if (method !== 'GET' && method !== 'HEAD') return undefined;
  let url: URL;
  try {
    url = new URL(target ?? '');
  } catch {
    return undefined;
  }
  return url.protocol === 'http:' && !url.username && !url.password ? url : undefined;
}

/**
 * Whether `url` is under `root`. A path holding an encoded `/`, `\` or `.` is never under
 * any: the URL parser does not read `..%2f` as a step up, but a server that decodes before
 * resolving does, and would serve what lies outside the prefix.
 */
function under(url: URL, root: ArchiveRoot): boolean {
  return url.origin === root.origin && url.pathname.startsWith(root.path) && !/%(?:2f|5c|2e)/i.test(url.pathname);
}

/** `host:port` of an https URL, the port explicit. */
function tunnelOf(url: URL): TunnelRule | undefined {
  if (url.protocol !== 'https:' || url.username || url.password) return undefined;
  return { host: url.hostname.toLowerCase(), port: Number(url.port || 443), trust: 'named' };
}

/** An index the user named (not one of the public defaults): http over its whole origin, https by CONNECT. */
function namedIndex(uri: string, policy: EgressPolicy): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return;
  }
  const tunnel = tunnelOf(url);
  if (tunnel) policy.tunnels.push(tunnel);
  const root = httpRoot(url.origin);
  if (root) policy.http.push({ ...root, trust: 'named' });
}

/** The rules for a build: the base image's archives, what the user names and (with `publicIndexes`) the public hosts. */
export function egressPolicy(egress: BuildEgress, baseArchives: readonly ArchiveRoot[]): EgressPolicy {
  const policy: EgressPolicy = { http: [], tunnels: [], publicOff: !egress.publicIndexes };
  for (const [archive, mirror] of egress.aptMirrors) {
    const from = httpRoot(archive);
    const to = httpRoot(mirror, ['http:', 'https:']);
    if (!from || !to) continue;
    policy.http.push({ ...from, trust: 'named', mirror: to });
    if (to.origin.startsWith('http:')) policy.http.push({ ...to, trust: 'named' });
    else {
      const tunnel = tunnelOf(new URL(to.origin));
      if (tunnel) policy.tunnels.push(tunnel);
    }
  }
  const indexes = [
    ...(egress.pipIndexUrl === PYPI_INDEX_URL ? [] : [egress.pipIndexUrl]),
    ...egress.pipExtraIndexUrls,
    ...(egress.npmRegistry === NPM_REGISTRY_URL ? [] : [egress.npmRegistry]),
  ];
  for (const index of indexes) namedIndex(index, policy);
  for (const root of baseArchives) policy.http.push({ ...root, trust: 'named' });
  if (egress.publicIndexes) {
    for (const archive of PUBLIC_INDEXES.archives) policy.http.push({ ...httpRoot(archive)!, trust: 'public' });
    for (const pair of PUBLIC_INDEXES.tunnels) {
      const [host, port] = pair.split(':') as [string, string];
      policy.tunnels.push({ host, port: Number(port), trust: 'public' });
    }
  }
  return policy;
}

/** What the policy lets through, for an error message. */
export function describePolicy(policy: EgressPolicy): string {
  const seen = new Set<string>();
  const parts: string[] = [];
  const add = (text: string) => {
    if (!seen.has(text)) parts.push(text);
    seen.add(text);
  };
  for (const rule of policy.http)
    add(
      rule.mirror ? `GET ${rule.origin}${rule.path}… (from ${rule.mirror.origin}${rule.mirror.path})` : `GET ${rule.origin}${rule.path}…`,
    );
  for (const t of policy.tunnels) add(`CONNECT ${hostPort(t.host, t.port)}`);
  return parts.join(', ');
}

function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The request a rule lets through, before any name is looked up. */
export type Verdict =
  | { allowed: true; kind: 'http'; upstream: URL; trust: Trust }
  | { allowed: true; kind: 'tunnel'; host: string; port: number; trust: Trust }
  | { allowed: false; reason: string };

function notListed(policy: EgressPolicy, isPublic: boolean): string {
  return isPublic && policy.publicOff ? 'not on the list: the public indexes are off' : 'not on the list';
}

/** `METHOD target` as a refusal names it. */
export function requestName(method: string | undefined, target: string | undefined): string {
  return `${method ?? '?'} ${(target ?? '').slice(0, 300)}`;
}

/** The rule `method target` falls under (CONNECT's target is `host:port`), or why none does. */
export function judge(policy: EgressPolicy, method: string | undefined, target: string | undefined): Verdict {
  if (method === 'CONNECT') {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]@]+):(\d{1,5})$/.exec(target ?? '');
    if (!m) return { allowed: false, reason: 'not a host:port' };
    const host = m[1]!.replace(/^\[|\]$/g, '').toLowerCase();
    const port = Number(m[2]);
    const rule = policy.tunnels.find((t) => t.host === host && t.port === port);
    if (rule) return { allowed: true, kind: 'tunnel', host, port, trust: rule.trust };
    const isPublic = PUBLIC_INDEXES.tunnels.some((t) => t === `${host}:${port}`);
    return { allowed: false, reason: notListed(policy, isPublic) };
  }
  const url = getUrl(method, target);
  if (!url) return { allowed: false, reason: 'only GET and HEAD of an http:// URL (https:// by CONNECT)' };
  const rule = policy.http.find((r) => under(url, r));
  if (!rule)
    return {
      allowed: false,
      reason: notListed(
        policy,
        PUBLIC_INDEXES.archives.some((a) => under(url, httpRoot(a)!)),
      ),
    };
  if (!rule.mirror) return { allowed: true, kind: 'http', upstream: url, trust: rule.trust };
  const upstream = new URL(`${rule.mirror.origin}${rule.mirror.path}${url.pathname.slice(rule.path.length)}${url.search}`);
  return { allowed: true, kind: 'http', upstream, trust: rule.trust };
}

/** A name's addresses (every one): dns.lookup by default, handed in by tests. */
export type Resolve = (host: string) => Promise<string[]>;

export const systemResolve: Resolve = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

function ipv4Bytes(address: string): number[] {
  return address.split('.').map(Number);
}

/** IPv6 text as 8 groups (`::` expanded, a trailing dotted IPv4 as two groups). */
function ipv6Groups(address: string): number[] {
  let text = address.replace(/%.*$/, '').toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (dotted) {
    const [a, b, c, d] = ipv4Bytes(dotted) as [number, number, number, number];
    text = `${text.slice(0, -dotted.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  return [...front, ...new Array(8 - front.length - back.length).fill(0), ...back];
}

function forbiddenIpv4(address: string): string | undefined {
  const [a = 0, b = 0] = ipv4Bytes(address);
  if (a === 0) return 'unspecified';
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168)) return 'private';
  if (a === 100 && b >= 64 && b < 128) return 'shared (100.64/10)';
  if (a === 169 && b === 254) return 'link-local';
  if (a >= 224 && a < 240) return 'multicast';
  if (address === '255.255.255.255') return 'broadcast';
  return undefined;
}

/** Why a build may not be sent to `address` (a public name resolving there), or undefined when it may. */
export function forbiddenAddress(address: string): string | undefined {
  if (isIPv4(address)) return forbiddenIpv4(address);
  if (!isIPv6(address)) return 'not an IP address';
  const g = ipv6Groups(address);
  const [first = 0] = g;
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0) && !(g[5] === 0 && g[6] === 0)) {
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d): the IPv4 address decides.
    return forbiddenIpv4(`${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`);
  }
  // Addresses that carry an IPv4 address to a gateway that routes it: NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4
  // (2002::/16), IPv4-translated (::ffff:0:a.b.c.d). The IPv4 address decides.
  const embedded = (hi: number, lo: number) => forbiddenIpv4(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`);
  if (first === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return embedded(g[6]!, g[7]!);
  if (first === 0x64 && g[1] === 0xff9b && g[2] === 1) return embedded(g[6]!, g[7]!) ?? 'NAT64 (local use)';
  if (first === 0x2002) return embedded(g[1]!, g[2]!);
  if (g.slice(0, 4).every((x) => x === 0) && g[4] === 0xffff && g[5] === 0) return embedded(g[6]!, g[7]!);
  if ((first & 0xffc0) === 0xfec0) return 'site-local';
  if (g.every((x) => x === 0)) return 'unspecified';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  if ((first & 0xfe00) === 0xfc00) return 'unique-local';
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  return undefined;
}

/** Where the proxy sends an admitted request. */
export type Admission =
  | { allowed: true; kind: 'http'; upstream: URL; address: string }
  | { allowed: true; kind: 'tunnel'; host: string; port: number; address: string }
  /** `refused`: the policy says no; otherwise the destination is allowed but its name did not resolve. */
  | { allowed: false; refused: boolean; reason: string };

/**
 * The request judged, and for a public destination its name looked up once: refused when
 * any address is one a build may not reach, else admitted to the first address (which the
 * proxy connects to, with no second lookup). A named destination is left to the connect.
 */
export async function admit(
  policy: EgressPolicy,
  method: string | undefined,
  target: string | undefined,
  resolve: Resolve = systemResolve,
): Promise<Admission> {
  const verdict = judge(policy, method, target);
  if (!verdict.allowed) return { allowed: false, refused: true, reason: verdict.reason };
  const host = verdict.kind === 'tunnel' ? verdict.host : verdict.upstream.hostname.replace(/^\[|\]$/g, '');
  let address = host;
  if (verdict.trust === 'public') {
    let addresses: string[];
    try {
      addresses = await resolve(host);
    } catch (error) {
      const code = (error as { code?: string }).code ?? (error as Error).message;
      return { allowed: false, refused: false, reason: `its name does not resolve here: ${code}` };
    }
    if (addresses.length === 0) return { allowed: false, refused: false, reason: 'its name has no address here' };
    for (const a of addresses) {
      const why = forbiddenAddress(a);
      if (why) return { allowed: false, refused: true, reason: `it resolves to ${a}, a ${why} address` };
    }
    address = addresses[0]!;
  }
  return verdict.kind === 'tunnel'
    ? { allowed: true, kind: 'tunnel', host: verdict.host, port: verdict.port, address }
    : { allowed: true, kind: 'http', upstream: verdict.upstream, address };
}

/**
 * Build args for pip and npm (not predefined, so the confined Dockerfile declares them with
 * ARG after every FROM): the index, the extra indexes (only when set), every http:// index
 * as a trusted host (pip refuses a plain-http index otherwise), and npm's registry.
 */
export function packageBuildArgs(egress: BuildEgress): Record<string, string> {
  const args: Record<string, string> = { PIP_INDEX_URL: egress.pipIndexUrl };
  if (egress.pipExtraIndexUrls.length > 0) args.PIP_EXTRA_INDEX_URL = egress.pipExtraIndexUrls.join(' ');
  const trusted = new Set<string>();
  for (const index of [egress.pipIndexUrl, ...egress.pipExtraIndexUrls]) {
    try {
      const url = new URL(index);
      if (url.protocol === 'http:') trusted.add(url.host);
    } catch {}
  }
  if (trusted.size > 0) args.PIP_TRUSTED_HOST = [...trusted].join(' ');
  args.npm_config_registry = egress.npmRegistry;
  return args;
}
