import { setTimeout as sleep } from 'node:timers/promises';
import { StateStore } from '../state/store.js';
import { renderError, type GlobalOptions } from './common.js';

export async function runEvents(ref: string, opts: { follow?: boolean }, global: GlobalOptions): Promise<number> {
  try {
    const store = await StateStore.open(global.stateDir);
    const handle = await store.loadHandle(ref);
    let printed = 0;
    for (;;) {
      const events = await store.readEvents(handle.id);
      for (const e of events.slice(printed)) process.stdout.write(JSON.stringify(e) + '\n');
      printed = Math.max(printed, events.length);
      if (!opts.follow) return 0;
      await sleep(250);
    }
  } catch (err) {
    return renderError(err, {});
  }
}
