import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Runs the test files longest first, by the seconds each took on a recorded run
 * (test/support/test-durations.json, written by scripts/test-durations.mjs from a JSON report).
 * vitest's own order needs its cache, which a clean clone lacks: it then runs the largest files
 * first, and the shared suites whose files are a few lines long (hostile-*.test.ts, minutes each)
 * ran last, with one worker busy and the other idle at the end. Files the table does not know
 * (new ones) run first, as vitest runs unknown files first.
 */
export class DurationSequencer extends BaseSequencer {
  private readonly seconds: Record<string, number> = JSON.parse(readFileSync(new URL('./test-durations.json', import.meta.url), 'utf8')).seconds;

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const known = (spec: TestSpecification) => this.seconds[path.relative(root, spec.moduleId).split(path.sep).join('/')];
    return [...files].sort((a, b) => (known(b) ?? Infinity) - (known(a) ?? Infinity));
  }
}
