/**
 * Every schema of cal is built from this `z`: the zod 3 API, which the zod 4 package keeps at
 * `zod/v3`. Measured here on a `cal continue` (a process that builds a few hundred schemas and
 * parses a handful of small files once): zod 4's classic API took ≈ 25 ms to load and about as
 * long again to build and first-parse the schemas (it compiles each object schema's parser with
 * `new Function`), zod 3's ≈ 7 ms to load and a third of the rest; and cal's schemas use nothing
 * zod 4 added. One import for every module, so the choice is made here once.
 */
export { z } from 'zod/v3';
