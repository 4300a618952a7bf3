import { hostileMessagesSuite } from '../support/hostile-messages.js';

/** Issue 50's shared hostile-message test through --transport structured (test/support/hostile-messages.ts). */
hostileMessagesSuite('structured');
