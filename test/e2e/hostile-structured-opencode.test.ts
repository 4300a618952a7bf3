import { hostileMessagesSuite } from '../support/hostile-messages.js';

/** The shared hostile-message test through --transport structured, for two of the slow-starting CLIs. */
hostileMessagesSuite('structured', ['opencode', 'cline']);
