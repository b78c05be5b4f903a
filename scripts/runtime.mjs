// How the project's scripts start the bundle and each other on the runtime they run on (Node or Deno).
const deno = globalThis.Deno;

/** argv that runs the ESM file `script` on this runtime. */
export function runScript(script, ...args) {
  return deno ? [deno.execPath(), 'run', '-A', script, ...args] : [process.execPath, script, ...args];
}

/** The Node binary for Node-only work (the node:test runner with the tsx loader); `node` from PATH under Deno. */
export const NODE = deno ? 'node' : process.execPath;
