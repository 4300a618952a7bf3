import { describe, expect, it } from 'vitest';
import { trustDialogKeys } from '../../src/adapters/claude-code/home.js';

/**
 * The folder-trust dialog as the real binaries draw it (captured from tmux, 2026-12-06, in a
 * HOME whose ~/.claude.json did not trust the folder): the keys give the answer cal's prepare
 * writes, "trust", and nothing else is answered.
 */
const v2_1_328 = `────────────────────────────────────────
 Accessing workspace:
 /tmp/trustprobe/work
 Quick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open source project, or work from your team). If not, take a moment to review what's in this
 folder first.
 Claude Code'll be able to read, edit, and execute files here.
 Security guide
 ❯ No, exit
   Yes, I trust this folder
 Enter to confirm · Esc to cancel`;

const v2_0_12 = `╭──────────────────────────────────────╮
│ Do you trust the files in this folder?                                   │
│                                                                          │
│ /tmp/trustprobe/work                                                     │
│                                                                          │
│ Claude Code may read, write, or execute files contained in this directory. This can pose security risks, so only use files from trusted sources. │
│                                                                          │
│ ❯ 1. Yes, proceed                                                        │
│   2. No, exit                                                            │
│                                                                          │
╰──────────────────────────────────────╯
   Enter to confirm · Esc to exit`;

describe('the Claude Code folder-trust dialog, answered as prepare answered it', () => {
  it('2.1.328: "No, exit" is selected, so Down to "Yes, I trust this folder", then Enter', () => {
    expect(trustDialogKeys(v2_1_328)).toEqual(['Down', 'Enter']);
  });

  it('2.0.12: "Yes, proceed" is selected, so Enter', () => {
    expect(trustDialogKeys(v2_0_12)).toEqual(['Enter']);
  });

  it('anything else is left alone: the prompt, an answer that talks of trust, another dialog', () => {
    expect(trustDialogKeys('────\n❯ hello there\n● Received: hello there\n────\n❯ \n────')).toBeNull();
    expect(trustDialogKeys('● Yes, I trust this folder, you said.\n❯ \n')).toBeNull();
    expect(trustDialogKeys(' Choose the text style that looks best with your terminal\n ❯ ✔ Auto (match terminal)\n     Dark mode')).toBeNull();
    expect(trustDialogKeys(' Do you trust this folder?\n ❯ Yes, proceed\n')).toEqual(['Enter']);
  });
});
