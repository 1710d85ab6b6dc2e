/**
 * The git settings a Terminal-Bench task's tests run with. The tests run as the agent's uid,
 * often in the agent's own repository (`git status` in `recover-lost-commit`), and git runs
 * programs that config names: a `core.fsmonitor` hook on every `git status`, `.git/hooks/*`,
 * pagers, editors, credential helpers. The agent owns that repository's config.
 *
 * Git reads config in this order, a later value winning: system, global, the repository's
 * (`local`, `worktree`), then the "command" scope — `-c` on the command line and the
 * environment's `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` (git 2.31+;
 * `GIT_CONFIG_PARAMETERS`, what `-c` itself passes to child gits, for older ones). So every
 * fixed key that runs a program is set here, in the environment, above the repository.
 * A test that wants otherwise says so on its own command line (`git -c core.hooksPath=…`),
 * which git reads after the environment.
 *
 * What no environment setting can switch off is named by the repository: attribute-selected
 * drivers (`filter.<name>.*`, `diff.<name>.command/textconv`, `merge.<name>.driver`),
 * `diff.external`, `remote.<name>.uploadpack`… Those the start-up scan removes from the
 * agent's repository config, and reports (startup-scan.py, part 4).
 */

/** Each key, and the value under which git runs nothing of the repository's. */
const OVERRIDES: ReadonlyArray<readonly [key: string, value: string]> = [
  // A hook git status, diff and commit run to ask which files changed.
  ['core.fsmonitor', 'false'],
  // .git/hooks/* (pre-commit, post-checkout, reference-transaction…): no hook is found under a non-directory.
  ['core.hooksPath', '/dev/null'],
  ['core.pager', 'cat'],
  // ":" is git's own "no editor": it does not run one.
  ['core.editor', ':'],
  ['sequence.editor', ':'],
  // Empty: no askpass program, and SSH_ASKPASS is not consulted either.
  ['core.askPass', ''],
  // An empty helper resets the list read so far: the repository's helpers (URL-scoped ones too) are dropped.
  ['credential.helper', ''],
  ['core.sshCommand', 'ssh'],
  // ext:: URLs run a command (a repository may allow them, or rewrite a remote to one with url.*.insteadOf).
  ['protocol.ext.allow', 'never'],
  // Signing runs gpg.program; verifying runs it for `git log` when log.showSignature is on.
  ['gpg.program', 'gpg'],
  ['gpg.openpgp.program', 'gpg'],
  ['gpg.x509.program', 'gpgsm'],
  ['gpg.ssh.program', 'ssh-keygen'],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['tag.forceSignAnnotated', 'false'],
  ['push.gpgSign', 'false'],
  ['log.showSignature', 'false'],
  // Read only from system, global and command scopes. The tests' uid owns the agent's
  // repositories, so git trusts those anyway; this keeps the image's root-owned ones readable
  // with the system config off (GIT_CONFIG_NOSYSTEM below).
  ['safe.directory', '*'],
];

/** `'key=value'` as git's sq_quote writes it: a single quote inside closes, escapes and reopens. */
function quoted(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The variables that give the tests' git probe's settings above every repository's. */
export function gitEnvironment(): Record<string, string> {
  const env: Record<string, string> = {
    // The image's /etc/gitconfig is left out: the tests' config is probe's and the repository's.
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_ATTR_NOSYSTEM: '1',
    // Outranks core.pager and pager.<command>, which may name a program.
    GIT_PAGER: 'cat',
    // Set, even empty, it is used instead of core.gitProxy (a command run for git:// URLs); empty runs none.
    GIT_PROXY_COMMAND: '',
    GIT_CONFIG_COUNT: String(OVERRIDES.length),
    GIT_CONFIG_PARAMETERS: OVERRIDES.map(([key, value]) => quoted(`${key}=${value}`)).join(' '),
  };
  OVERRIDES.forEach(([key, value], n) => {
    env[`GIT_CONFIG_KEY_${n}`] = key;
    env[`GIT_CONFIG_VALUE_${n}`] = value;
  });
  return env;
}
