import { hostileMessagesSuite } from '../support/hostile-messages.js';

/** The shared hostile-message test in panes, for two of the slow-starting CLIs (test/support/hostile-messages.ts). */
hostileMessagesSuite('pane', ['opencode', 'cline']);
