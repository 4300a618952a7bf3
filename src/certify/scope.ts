import { isApiProvider, loadCliAdapter } from '../adapters/registry.js';
import type { ProviderName } from '../handles/schema.js';

/**
 * For a CLI that nothing offline can certify (it cannot be pointed at cal's scripted model), why;
 * else null. `cal certify` refuses such a provider without --live, and `cal inspect` marks it
 * "uncertified here" until a live run passed.
 */
export async function liveCertificationOnly(provider: ProviderName): Promise<string | null> {
  if (isApiProvider(provider)) return null;
  try {
    return (await loadCliAdapter(provider)).liveCertificationOnly ?? null;
  } catch {
    return null;
  }
}
