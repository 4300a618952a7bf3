import { hostileMessagesSuite } from '../support/hostile-messages.js';

/** The shared hostile-message test in panes, for Kilo, the slowest CLI to start (test/support/hostile-messages.ts). */
hostileMessagesSuite('pane', ['kilo']);
