import { describe, expect, it } from 'vitest';
import { colorEnabled } from '../../src/tui/format.js';
import { NOW, view } from './fixtures.js';

// Colour support is decided when chalk loads: force it on, then load Ink and the views.
process.env.FORCE_COLOR = '1';

const SGR_COLOR = /\u001B\[(3[0-7]|9[0-7]|38;)/;

describe('colour and NO_COLOR', () => {
  it('NO_COLOR set to anything non-empty turns colour off', () => {
    expect(colorEnabled({})).toBe(true);
    expect(colorEnabled({ NO_COLOR: '1' })).toBe(false);
    expect(colorEnabled({ NO_COLOR: '' })).toBe(true);
  });

  it('the detail view is coloured by default and has no colour codes when colour is off', async () => {
    const { render, cleanup } = await import('ink-testing-library');
    const { HandleDetail } = await import('../../src/tui/HandleDetail.js');
    const { ColorContext } = await import('../../src/tui/theme.js');
    const coloured = render(<HandleDetail view={view()} screen="screen" now={NOW} />);
    expect(coloured.lastFrame()).toMatch(SGR_COLOR);
    cleanup();
    const plain = render(
      <ColorContext.Provider value={false}>
        <HandleDetail view={view()} screen="screen" now={NOW} />
      </ColorContext.Provider>,
    );
    expect(plain.lastFrame()).not.toMatch(SGR_COLOR);
    expect(plain.lastFrame()).toContain('● alive');
    cleanup();
  });
});
