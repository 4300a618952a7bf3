import { apiAdapter, cliAdapter } from '../adapters/registry.js';
import type { ProviderName } from '../handles/schema.js';

/**
 * For a CLI that nothing offline can certify (it cannot be pointed at cal's scripted model), why;
 * else null. `cal certify` refuses such a provider without --live, and `cal inspect` marks it
 * "uncertified here" until a live run passed.
 */
export function liveCertificationOnly(provider: ProviderName): string | null {
  if (apiAdapter(provider)) return null;
  try {
    return cliAdapter(provider).liveCertificationOnly ?? null;
  } catch {
    return null;
  }
}
