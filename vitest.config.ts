import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup-env.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // ONNX sessions use all cores already; parallel files would only contend.
    fileParallelism: false,
  },
});
