import { defineConfig } from "vite";
import { svelte } from "@sveltejs/vite-plugin-svelte";

// The console is served by the API server under /app/ with a strict
// self-only Content-Security-Policy: no inline script or style, so no
// module-preload polyfill (an inline script) and styles always in files.
export default defineConfig({
  base: "/app/",
  plugins: [svelte()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    cssCodeSplit: false,
    target: "es2022",
    reportCompressedSize: true,
  },
  server: {
    proxy: { "/v1": "http://127.0.0.1:8080", "/blobs": "http://127.0.0.1:8080", "/previews": "http://127.0.0.1:8080" },
  },
});
