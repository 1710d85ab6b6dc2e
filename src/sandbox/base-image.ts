/** Image for tasks that bring a repository rather than an image (built by scripts/docker-base-image.sh); also what builds trust for their way out (build-network.ts). */
export const BASE_IMAGE = process.env.PROBE_DOCKER_IMAGE ?? 'probe-base:bookworm';
