/**
 * Image names as the SWE-bench harness builds them (test_spec.py `instance_image_key`):
 * `sweb.eval.x86_64.<instance_id, lowercased>:latest`; with a namespace — the harness's
 * default is `swebench`, the Docker Hub account its images are published under —
 * `<namespace>/…` with every `__` turned into `_1776_` (Docker Hub refuses `__`).
 */
export const DEFAULT_IMAGE_NAMESPACE = 'swebench';

/** `namespace` null or empty (the harness's `--namespace none`): the name of an image built locally by the harness. */
export function harnessImageName(instanceId: string, namespace: string | null = DEFAULT_IMAGE_NAMESPACE): string {
  const key = `sweb.eval.x86_64.${instanceId}:latest`.toLowerCase();
  return namespace ? `${namespace}/${key}`.replace(/__/g, '_1776_').toLowerCase() : key;
}

/** `--image-namespace` as the harness takes `--namespace`: "none" (or "") for locally built images. */
export function parseImageNamespace(value: string): string | null {
  return value === '' || value.toLowerCase() === 'none' ? null : value;
}

export const IMAGE_NAMESPACE_HELP = `namespace of SWE-bench images for dataset rows that name none (default "${DEFAULT_IMAGE_NAMESPACE}", as the harness pulls them; "none": images the harness built locally)`;
