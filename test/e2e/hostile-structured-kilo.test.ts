import { hostileMessagesSuite } from '../support/hostile-messages.js';

/** The shared hostile-message test through --transport structured, for Kilo, the slowest CLI to start. */
hostileMessagesSuite('structured', ['kilo']);
