/**
 * The sandbox providers a user may name (`--sandbox`): plain data, so that the flags can
 * offer them and a run record can name one without loading a provider (sandbox/open.ts
 * opens them).
 */
export const SANDBOX_KINDS = ['local', 'docker'] as const;
export type SandboxKind = (typeof SANDBOX_KINDS)[number];
