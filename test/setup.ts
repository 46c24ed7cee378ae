import { setDefaultTimeout } from "bun:test";

// In-process tests are fast, but the shared database starts inside the first one and a busy
// machine slows everything; tests that start server processes set their own, longer limits.
setDefaultTimeout(15_000);
