/**
 * The TUI's door for the bundled command line. The bundle (dist/bin/) is CommonJS compiled
 * through V8's code cache, where a dynamic import() has no loader to go to, and Ink cannot be
 * bundled (its modules use top-level await); so inspect `require`s this compiled ES module by
 * path (Node ≥ 20.19 loads an ES module without top-level await that way), and its import() is
 * Node's own. It adds nothing when cal runs unbundled.
 */
export function loadTui(): Promise<typeof import('./run.js')> {
  return import('./run.js');
}
