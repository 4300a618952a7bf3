import { hostileMessagesSuite } from '../support/hostile-messages.js';

/** Issue 50's shared hostile-message test, in panes (the structured part: hostile-structured.test.ts). */
hostileMessagesSuite('pane');
