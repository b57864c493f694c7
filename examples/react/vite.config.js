// Vite's defaults build the app; JSX follows tsconfig.json ("react-jsx").
export default {
  // The customer backend (examples/backend.ts) serves the built files and the API.
  build: { outDir: "dist", emptyOutDir: true },
  server: { proxy: { "/api": "http://localhost:3000" } },
};
